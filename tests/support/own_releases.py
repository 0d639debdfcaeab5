"""Small declared datasets -- a table and image arrays -- and tiny private `dpvae synth` releases of them (tests only).

    case = CASES["dp-merf-image"]                          # a private method on one kind of declared data
    train = case.records(case.sizes[0], seed=0)            # a table (DataFrame) or images (`Images`)
    d2 = case.replaced(train, 0, case.extreme)             # one record replaced by an extreme one
    out = release(case, tmp_path / "run", d2, test, seed_file=..., keep_work=True).samples

The privacy walks of issue 62 share it: the replay adversary (tests/privacy/test_replay_adversary.py) and the own
data's neighbours (tests/privacy/test_own_data_neighbours.py). `CASES` holds every private method `synth` releases
a declared table or image arrays with (Ryan's needs public data and is refused), each with parameters that train
in seconds on a CPU; `test_every_private_method_has_a_case` keeps it complete.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from dpvae import randomness
from dpvae.synth import Release, Request, synth

TABLE_DECLARATION = {
    "positive": "yes",  # the label set is {not yes, yes}: a rare label is "not yes"
    "columns": {
        "age": {"bounds": [0, 120]},
        "income": {"bounds": [0, 200_000]},
        "colour": {"categories": ["red", "green", "blue"]},  # no `other`: its first category is the catch-all
    },
}
IMAGE_DECLARATION = {"labels": 3}  # the classes 0, 1, 2; pixels lie in [0, 1] by the format
#: a training record no other resembles: a value beyond its bounds, an undeclared category and label
TABLE_EXTREME = {"age": 45, "income": 7_777_777.7, "colour": "purple", "label": "HIV+"}
#: the image counterpart: every pixel white, an undeclared class
IMAGE_EXTREME_LABEL = 7
#: float pixels of a float image set's extreme record (a row each, then beyond [0, 1]): never a reason to stop
FLOAT_EXTREMES = (np.nan, np.inf, -np.inf, 7.5)
#: the adversary's two candidate targets (D's and D′'s record): each at one end of the declared domain
TABLE_TARGETS = ({"age": 90, "income": 199_000.0, "colour": "green", "label": "yes"},
                 {"age": 18, "income": 0.0, "colour": "red", "label": "no"})  # fmt: skip
IMAGE_TARGETS = ((255, 2), (0, 0))  # (every pixel's grey level, class)
#: the methods whose image networks take one size only (the others take any; 8x8 keeps them fast)
IMAGE_SIDE = {"lvae": 28, "gs-wgan": 28, "privae": 32}

MLP = {"epochs": 1, "batch_size": 50, "hidden": 16}
#: method -> parameters of a run that trains in seconds on a CPU, on a declared table
TABLE_PARAMS: dict[str, dict[str, Any]] = {
    "privbayes": {},
    "mst": {"iterations": 50},
    "aim": {"rounds": 10, "round_iterations": 10, "iterations": 50},
    "p3gm": {**MLP, "pretrain_steps": 10, "em_iters": 2},
    "dp-gm": {**MLP, "kmeans_iters": 2},
    "dp-vae": MLP,
    "privae": {**MLP, "prior": "mog", "latent_dim": 2},
}
#: method -> the same, on declared image arrays (conv networks at their smallest widths)
IMAGE_PARAMS: dict[str, dict[str, Any]] = {
    "privbayes": {"degree": 1, "histogram_bins": 3, "max_candidates": 5},
    "p3gm": {"epochs": 1, "batch_size": 50, "hidden": 16, "pretrain_steps": 5, "em_iters": 2},
    "dp-gm": {"epochs": 1, "batch_size": 50, "hidden": 16, "kmeans_iters": 2, "rff_dim": 16},
    "dp-vae": {"epochs": 1, "batch_size": 50, "hidden": 16, "latent_dim": 2, "sigma_sgd": 2.0},
    "privae": {"epochs": 1, "batch_size": 50, "latent_dim": 2, "prior": "normal", "optimizer": "sgd"},
    "dp-merf": {"rff_dim": 50, "epochs": 1, "batch_size": 32, "gen_hidden": 16, "gen_channels": [4, 4],
                "code_dim": 2, "noise_multiplier": 5.0},  # a fixed σ: no solver (ε ≈ 1.9 at n = 160)
    "lvae": {"epochs": 1, "batch_size": 32, "latent_dim": 2, "noise_multiplier": 10.0, "lipschitz_probes": 2},
    "dp2vae": {"subsets": 2, "pretrain_iters": 1, "iters": 3, "batch_size": 4, "latent_dim": 2,
               "hidden_channels": [4, 4], "chunk": 2},
    "gs-wgan": {"discriminators": 2, "noise_multiplier": 30.0, "batch_size": 4, "iters": 2, "pretrain_iters": 1,
                "critic_iters": 1, "z_dim": 2, "model_dim": 2},
}  # fmt: skip


@dataclass(frozen=True)
class Images:
    """Image arrays as a user's .npz holds them: `x` uint8 (or float32 in [0, 1]) [N, H, W], `y` classes [N]."""

    x: np.ndarray
    y: np.ndarray

    def __len__(self) -> int:
        return len(self.y)


Records = pd.DataFrame | Images


@dataclass(frozen=True)
class Case:
    """One private method on one kind of declared data ('table': a CSV, 'image': an .npz) at a tiny size."""

    method: str
    kind: str
    params: dict[str, Any]
    float_pixels: bool = False  # images as float32 in [0, 1]: the extreme record has NaN and infinite pixels

    @property
    def id(self) -> str:
        return f"{self.method}-{self.kind}" + ("-float" if self.float_pixels else "")

    @property
    def suffix(self) -> str:
        """The data's and the release's file suffix."""
        return ".csv" if self.kind == "table" else ".npz"

    @property
    def declaration(self) -> dict[str, Any]:
        return TABLE_DECLARATION if self.kind == "table" else IMAGE_DECLARATION

    @property
    def sizes(self) -> tuple[int, int]:
        """Records of a training file and of a test file."""
        return (200, 40) if self.kind == "table" else (120, 30)

    @property
    def side(self) -> int:
        return IMAGE_SIDE.get(self.method, 8)

    def records(self, n: int, seed: int) -> Records:
        """n typical records: a table of declared values, or grey images whose bright band says their class."""
        rng = np.random.default_rng(seed)
        if self.kind == "table":
            return pd.DataFrame(
                {
                    "age": rng.integers(18, 90, n),
                    "income": rng.uniform(12_000, 81_000, n).round(1),
                    "colour": rng.choice(["red", "green", "blue"], n),
                    "label": rng.choice(["yes", "no"], n),
                }
            )
        y = rng.integers(0, 3, n)
        x = rng.integers(0, 120, (n, self.side, self.side), dtype=np.uint8)
        band = self.side // 3
        for label in range(3):
            x[y == label, :, label * band : (label + 1) * band] += 120
        return Images(x.astype(np.float32) / 255 if self.float_pixels else x, y.astype(np.int64))

    @property
    def extreme(self) -> Any:
        """A record beyond the declared domain: an income past its bounds, a new category and an undeclared label;
        a white image of an undeclared class (float pixels: rows of NaN, +inf and -inf, the rest beyond 1)."""
        if self.kind == "table":
            return TABLE_EXTREME
        if not self.float_pixels:
            return (255, IMAGE_EXTREME_LABEL)
        pixels = np.full((self.side, self.side), FLOAT_EXTREMES[-1], dtype=np.float32)
        pixels[: len(FLOAT_EXTREMES) - 1] = np.array(FLOAT_EXTREMES[:-1], dtype=np.float32)[:, None]
        return (pixels, IMAGE_EXTREME_LABEL)

    @property
    def targets(self) -> tuple[Any, Any]:
        """The replay adversary's two candidates for the one record it does not know (D's, then D′'s)."""
        return TABLE_TARGETS if self.kind == "table" else IMAGE_TARGETS

    def replaced(self, records: Records, index: int, record: Any) -> Records:
        """`records` with the one at `index` replaced by `record` (a row's values; (pixels, class) for images)."""
        if isinstance(records, Images):
            x, y = records.x.copy(), records.y.copy()
            x[index], y[index] = record
            return Images(x, y)
        changed = records.astype(object).copy()
        changed.iloc[index] = [record[c] for c in records.columns]
        return changed

    def with_first(self, records: Records, record: Any) -> Records:
        """`record`, then `records`."""
        if isinstance(records, Images):
            longer = Images(np.concatenate([records.x[:1], records.x]), np.concatenate([records.y[:1], records.y]))
        else:
            longer = pd.concat([records.iloc[:1], records], ignore_index=True)
        return self.replaced(longer, 0, record)

    def write(self, records: Records, path: Path) -> Path:
        if isinstance(records, Images):
            np.savez(path, x=records.x, y=records.y)
        else:
            records.to_csv(path, index=False)
        return path


CASES = {
    case.id: case
    for case in [Case(m, "table", p) for m, p in TABLE_PARAMS.items()]
    + [Case(m, "image", p) for m, p in IMAGE_PARAMS.items()]
}
#: float images (NaN and infinite pixels in the extreme record) with the cheapest image method: the neighbour walk's
#: one float case (the pixels' rule is the preparation's, the same for every method)
FLOAT_IMAGE_CASE = Case("dp-merf", "image", IMAGE_PARAMS["dp-merf"], float_pixels=True)


def release(
    case: Case,
    folder: Path,
    train: Records,
    test: Records | None = None,
    *,
    n: int = 100,
    **more: Any,
) -> Release:
    """`dpvae synth` of `case` on `train` (and a declared test file `test`) written into `folder` (created), at
    ε = 10 under the paper's headline; `more`: further `Request` fields (seed, seed_file, keep_work, ...). The
    key is forgotten afterwards, whatever happened: each release draws its own unless told."""
    folder.mkdir(parents=True)
    data = case.write(train, folder / f"data{case.suffix}")
    declaration = dict(case.declaration)
    if test is not None:
        declaration["test_path"] = case.write(test, folder / f"test{case.suffix}").name
    (folder / "declare.yaml").write_text(yaml.safe_dump(declaration))
    out = folder / "out" / f"synthetic{case.suffix}"
    more = {"work": out.with_name(out.name + ".work"), **more}  # inside `folder`: moved with it
    request = Request(
        method=case.method, data=str(data), epsilon=10.0, delta=1e-5, params=case.params,
        out=out, n=n, declare=folder / "declare.yaml", headline="paper", device="cpu", **more,
    )  # fmt: skip
    try:
        return synth(request)
    finally:
        randomness.forget()
