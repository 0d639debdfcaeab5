"""How far the papers' public domains move the prepared data from P3GM's reference code's whole-set min-max.

    DPVAE_DATA_MIRROR=/work/shared/data python benchmarks/paper_domains.py

Adult and Adult without '?' rows from the mirror (the default ids against their `-refcode` ids, same rows,
same split), and the generated stand-ins (their generator's declared range against the min-max of the
generated set the stand-ins used before). Per column: the declared and the observed range (or the number of
categories), and the largest and mean absolute change of the encoded values (on the [0, 1] scale).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from dpvae.data import standins, tabular  # noqa: E402


def adult(raw: Path, drop_missing: bool) -> None:
    public = tabular.build_adult(raw, 0, drop_missing=drop_missing)
    reference = tabular.build_adult(raw, 0, drop_missing=drop_missing, scaling="reference-code")
    x = np.concatenate([public.train.x, public.test.x]).astype(np.float64)
    x_reference = np.concatenate([reference.train.x, reference.test.x]).astype(np.float64)
    print(f"adult{'-dropna' if drop_missing else ''} ({len(x)} rows)")
    for j, (declared, found) in enumerate(zip(public.meta["columns"], reference.meta["columns"])):
        change = np.abs(x[:, j] - x_reference[:, j])
        if declared["kind"] == "categorical":
            extent = f"{len(declared['categories'])} categories declared, {len(found['categories'])} found"
        else:
            extent = (
                f"[{declared['min']:g}, {declared['max']:g}] declared, [{found['min']:g}, {found['max']:g}] "
                f"observed (range ratio {(found['max'] - found['min']) / (declared['max'] - declared['min']):.4f})"
            )
        print(f"  {declared['name']:15s} max |change| {change.max():.4f}  mean {change.mean():.4f}  {extent}")


def stand_ins() -> None:
    for real_id, schema in standins.SCHEMAS.items():
        rng = np.random.default_rng(np.random.SeedSequence([0, len(real_id), schema.n_features]).spawn(1)[0])
        x, _ = standins.generate(schema, rng)
        low, high = x.min(axis=0), x.max(axis=0)
        change = np.abs((x - low) / (high - low) - (x + 1) / 2)
        print(
            f"{standins.standin_id(real_id)}: generated columns span [{low.max():.3f}, {high.min():.3f}] at least, "
            f"[{low.min():.3f}, {high.max():.3f}] at most; max |change| {change.max():.4f}  mean {change.mean():.4f}"
        )


def main() -> None:
    mirror = os.environ.get("DPVAE_DATA_MIRROR")
    if mirror and (Path(mirror) / "adult" / "adult.data").is_file():
        for drop_missing in (False, True):
            adult(Path(mirror) / "adult", drop_missing)
    else:
        print("no Adult in $DPVAE_DATA_MIRROR: Adult left out")
    stand_ins()


if __name__ == "__main__":
    main()
