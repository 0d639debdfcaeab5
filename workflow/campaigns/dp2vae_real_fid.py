"""DP²-VAE Table 1's Real-data FID: its bias between 10,000 and 60,000 images, and the resize.

    DPVAE_DATA_MIRROR=../shared/data python workflow/campaigns/dp2vae_real_fid.py [--dataset mnist]
        [--device cuda] [--resizes tf1 bilinear] [--out FILE] [--cache DIR] [--n-train 60000] [--n-test 10000]
        [--memo DIR --reference FILE]

A dataset's official splits as the workflow prepares them (`dpvae.data.images.build_official` on the mirror's IDX
files: pixel / 255, the same bytes), through the FID metric's own statistics (`dpvae.eval.fid.statistics`:
torch-fidelity's InceptionV3, compiled on the CPU as the metric runs there from 10,000 images on), per resize:
torch-fidelity's TF1-compatible bilinear resize to 299×299 (`tf1`, the project's protocol) and
`F.interpolate(mode="bilinear", align_corners=False)` (`bilinear`, pytorch-fid's, which the paper names). Per
resize, FID of
  * all training images vs the test split (the Real-data row at the paper's n; their statistics pooled from the
    blocks', `pooled`),
  * each disjoint block of 10,000 training images vs the test split (the row at the CPU protocol's n; the first
    block is the Real-data run's own FID there), mean ± sd over the blocks.
Prints one line per case and writes them as CSV (`--out`, with the device, commit and command). Features of 70,000
images per resize: about a minute on one GPU, ~1.6 h on this 2-core CPU. Each block's statistics are memoised in
`--cache DIR/<resize>/` under the metric's key (`dpvae.eval.fid.memoised_statistics`: the images' bytes, batch size,
device, ...), their running sums saved as they go, so an interrupted run resumes. `--memo` names the TF1 resize's
memo instead: the workflow's (`results/paper/references/<dataset>/generated`), where a Real-data run of the protocol
left its first 10,000 training images' statistics, and `--reference` the workflow's test-split statistics
(`results/paper/references/<dataset>/fid.npz`, checked to hold the whole test split): the blocks those runs measured
are read, not measured again. `--n-train 512 --n-test 256` checks the script. Public data only: nothing private is
read.
"""

from __future__ import annotations

import argparse
import contextlib
import shlex
import sys
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import torch_fidelity.feature_extractor_inceptionv3 as inception
from torch.nn import functional as F
from torch_fidelity.metric_fid import fid_statistics_to_metric

from dpvae.allocator import keep_freed_memory
from dpvae.data.images import build_official
from dpvae.devices import device_name
from dpvae.eval.fid import memoised_statistics, weights_path
from dpvae.paths import data_mirror
from dpvae.provenance import git_commit

BLOCK = 10_000
Statistics = dict[str, np.ndarray]


def _bilinear(x: torch.Tensor, size: tuple[int, int], align_corners: bool = False) -> torch.Tensor:
    return F.interpolate(x, size=size, mode="bilinear", align_corners=align_corners)


@contextlib.contextmanager
def resized_with(resize: str):
    """Inside, the extractor resizes as `resize` says ('tf1': torch-fidelity's own; 'bilinear': pytorch-fid's)."""
    original = inception.interpolate_bilinear_2d_like_tensorflow1x
    if resize == "bilinear":
        inception.interpolate_bilinear_2d_like_tensorflow1x = _bilinear
    try:
        yield
    finally:
        inception.interpolate_bilinear_2d_like_tensorflow1x = original


def block_statistics(
    x: np.ndarray, device: str, batch: int, memo: Path | None, partial: Path | None
) -> list[Statistics]:
    """`statistics` of each block of BLOCK images of `x` ([n, 1, 28, 28] in [0, 1]), memoised in `memo`; the
    running sums of the block being measured are saved to `partial` (None: neither)."""
    return [
        memoised_statistics(x[first : first + BLOCK], batch, weights_path(), device, memo, partial)
        for first in range(0, len(x), BLOCK)
    ]


def pooled(parts: list[Statistics]) -> Statistics:
    """The statistics of the union of disjoint sets from each set's (mean, covariance with n - 1, n)."""
    n = sum(int(p["n"]) for p in parts)
    mu = sum(int(p["n"]) * p["mu"] for p in parts) / n
    outer = sum((int(p["n"]) - 1) * p["sigma"] + int(p["n"]) * np.outer(p["mu"], p["mu"]) for p in parts)
    return {"mu": mu, "sigma": (outer - n * np.outer(mu, mu)) / (n - 1), "n": np.asarray(n)}


def test_statistics(reference: Path, n_test: int) -> Statistics:
    """The workflow's statistics of the whole test split (`reference`); refused if they are of other images."""
    with np.load(reference) as kept:
        stats = dict(kept)
    if str(stats.get("split")) != "test" or int(stats["n"]) != n_test:
        raise SystemExit(
            f"dp2vae_real_fid: {reference} holds {int(stats['n'])} images of the {stats.get('split')} split, not the "
            f"{n_test} test images"
        )
    return stats


def fid(a: Statistics, b: Statistics) -> float:
    return float(fid_statistics_to_metric(a, b, verbose=False)["frechet_inception_distance"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", choices=("mnist", "fashion-mnist"), default="mnist")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--resizes", nargs="+", choices=("tf1", "bilinear"), default=["tf1", "bilinear"])
    parser.add_argument("--n-train", type=int, default=60_000)
    parser.add_argument("--n-test", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--cache", type=Path, help="keep each block's statistics here (resume)")
    parser.add_argument("--memo", type=Path, help="the TF1 resize's statistics memo (the workflow's FID memo)")
    parser.add_argument("--reference", type=Path, help="the workflow's test-split statistics (TF1 resize)")
    args = parser.parse_args(argv)
    keep_freed_memory()  # as a job runs (dpvae.allocator)
    mirror = data_mirror(None)
    if mirror is None:
        print(f"dp2vae_real_fid: set DPVAE_DATA_MIRROR to the folder holding {args.dataset}/", file=sys.stderr)
        return 2
    data = build_official(Path(mirror) / args.dataset, 0, family=args.dataset)
    train, test = data.train.x[: args.n_train], data.test.x[: args.n_test]
    tf1_test = test_statistics(args.reference, len(test)) if args.reference else None
    block = min(BLOCK, len(train))
    partial = args.cache and args.cache / "partial.npz"
    rows = []
    for resize in args.resizes:
        cache = args.cache and args.cache / resize
        with resized_with(resize):
            memo = (args.memo or cache) if resize == "tf1" else cache
            blocks = block_statistics(train, args.device, args.batch, memo, partial)
            if resize == "tf1" and tf1_test is not None:
                reference = tf1_test
            else:
                (reference,) = block_statistics(test, args.device, args.batch, cache, partial)
        fids = [fid(b, reference) for b in blocks if int(b["n"]) == block]
        rows += [
            {"resize": resize, "generated": f"train[:{len(train)}]", "reference": f"test[:{len(test)}]",
             "fid": fid(pooled(blocks), reference), "sd": 0.0, "blocks": 1},
            {"resize": resize, "generated": f"{len(fids)} blocks of {block} train", "reference":
             f"test[:{len(test)}]", "fid": float(np.mean(fids)), "sd": float(np.std(fids)), "blocks": len(fids)},
            {"resize": resize, "generated": f"train[:{block}]", "reference": f"test[:{len(test)}]",
             "fid": fids[0], "sd": 0.0, "blocks": 1},
        ]  # fmt: skip
    table = pd.DataFrame(rows).assign(
        dataset=args.dataset,
        device=device_name(args.device),
        commit=git_commit(),
        command=shlex.join(["python", "workflow/campaigns/dp2vae_real_fid.py", *(argv or sys.argv[1:])]),
        date=datetime.now(UTC).strftime("%Y-%m-%d"),
    )
    print(f"# {args.dataset}: {device_name(args.device)}, torch {torch.__version__}")
    print(table.iloc[:, :6].to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    if args.out:
        table.to_csv(args.out, index=False, float_format="%.6g")
    return 0


if __name__ == "__main__":
    sys.exit(main())
