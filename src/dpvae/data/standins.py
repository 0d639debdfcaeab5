"""Generated stand-ins for datasets these machines cannot download (Kaggle Credit, UCI ISOLET, UCI ESR; CelebA).

A stand-in has the real dataset's schema — feature count, value range per column, label balance, binary
label names — and a learnable class structure, but it is *not* the real data: items rendered from a
stand-in say "stand-in data" on the page. Its id is the real id plus `STANDIN_SUFFIX`; the real ids keep
their download + checksum path (`data/tabular.py`).

Generator: a latent z ~ N(0, I_k) shifted by ±`separation` along one direction per class, mapped by a
random linear layer plus Gaussian noise through tanh (bounded, skewed marginals, correlated columns), then
min-max scaled to the real column range on the whole set before the seeded 90/10 holdout (as the real
preparers scale). Deterministic in the seed.

`celeba32-standin` (images) has CelebA32's schema — x (N, 3, 32, 32) float32 in [0, 1], y in {0, 1}
("female", "male") — so that the CelebA items' code paths run at smoke scale without the real images. Each
image is a smooth colour field (a few random Gaussian blobs on a random background) whose mean hue depends
on the label, so that classifiers and generators have something learnable. It is NOT CelebA.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dpvae.data.store import Prepared, Split, holdout_split

STANDIN_SUFFIX = "-standin"


@dataclass(frozen=True)
class StandinSchema:
    """What a stand-in copies from its real dataset (docs/papers.md §3.2 / the real preparers)."""

    real_id: str
    n_records: int
    n_features: int
    positive_rate: float
    value_range: tuple[float, float]
    label_names: tuple[str, str]
    real_description: str


SCHEMAS: dict[str, StandinSchema] = {
    "credit": StandinSchema(
        "credit",
        3000,
        29,
        0.047,
        (0.0, 1.0),
        ("normal", "fraud"),
        "Kaggle Credit as P3GM's code (V1..V28 + Amount, min-max [0, 1], 4.7 % fraud)",
    ),
    "isolet": StandinSchema(
        "isolet",
        2000,
        617,
        0.192,
        (-1.0, 1.0),
        ("consonant", "vowel"),
        "UCI ISOLET (617 features in [-1, 1], 19.2 % vowels)",
    ),
    "esr": StandinSchema(
        "esr",
        2000,
        178,
        0.20,
        (0.0, 1.0),
        ("non-seizure (y 2..5)", "seizure (y 1)"),
        "UCI ESR (X1..X178 min-max [0, 1], 20 % seizure)",
    ),
}


def is_standin(dataset_id: str) -> bool:
    """Whether a dataset id names a generated stand-in."""
    return str(dataset_id).endswith(STANDIN_SUFFIX)


def standin_id(real_id: str) -> str:
    return real_id + STANDIN_SUFFIX


def generate(
    schema: StandinSchema, rng: np.random.Generator, latent_dim: int = 8, separation: float = 1.0, noise: float = 0.5
) -> tuple[np.ndarray, np.ndarray]:
    """(x float64 [N, d] in the schema's range, y int64 [N]) with exactly round(rate·N) positives."""
    n, d = schema.n_records, schema.n_features
    y = np.zeros(n, dtype=np.int64)
    y[rng.choice(n, size=round(schema.positive_rate * n), replace=False)] = 1
    direction = rng.standard_normal(latent_dim)
    direction /= np.linalg.norm(direction)
    z = rng.standard_normal((n, latent_dim)) + separation * (2 * y - 1)[:, None] * direction[None, :]
    weights = rng.standard_normal((latent_dim, d)) / np.sqrt(latent_dim)
    offsets = rng.normal(0.0, 0.5, size=d)
    raw = np.tanh(z @ weights + offsets + noise * rng.standard_normal((n, d)))
    low, high = raw.min(axis=0), raw.max(axis=0)
    unit = (raw - low) / np.where(high > low, high - low, 1.0)
    lo, hi = schema.value_range
    return lo + unit * (hi - lo), y


def build_standin(raw_dir: Path | None, seed: int, *, real_id: str) -> Prepared:
    """The stand-in of `real_id`: generated from `default_rng(SeedSequence(seed) child)`, seeded 90/10 holdout."""
    schema = SCHEMAS[real_id]
    rng = np.random.default_rng(np.random.SeedSequence([seed, len(real_id), schema.n_features]).spawn(1)[0])
    x, y = generate(schema, rng)
    train, test, split_meta = holdout_split(x.astype(np.float32), y, seed=seed)
    columns = [
        {"name": f"f{i + 1}", "kind": "continuous", "min": float(lo), "max": float(hi)}
        for i, (lo, hi) in enumerate(zip(x.min(axis=0), x.max(axis=0)))
    ]
    meta = {
        "label_names": list(schema.label_names),
        "positive_class": 1,
        "split": split_meta,
        "columns": columns,
        "scaling": f"generated, min-max scaled to {list(schema.value_range)} on the whole set",
        "standin_of": real_id,
        "notes": (
            f"STAND-IN DATA: generated with the schema of {schema.real_description}; not the real dataset, "
            "which cannot be downloaded on this machine"
        ),
        "options": {
            "n_records": schema.n_records,
            "n_features": schema.n_features,
            "positive_rate": schema.positive_rate,
            "generator": "tanh(linear(z ± shift) + noise)",
        },
    }
    return Prepared(train, test, meta)


# ---- images: the CelebA32 stand-in ----

STANDIN_TRAIN, STANDIN_TEST, SIZE = 2000, 500, 32


def _faces(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    y = rng.integers(0, 2, n).astype(np.int64)
    grid = np.stack(np.meshgrid(np.linspace(-1, 1, SIZE), np.linspace(-1, 1, SIZE), indexing="ij"))  # [2, H, W]
    base = (
        rng.uniform(0.2, 0.8, (n, 3, 1, 1))
        + 0.15 * np.where(y == 1, 1.0, -1.0)[:, None, None, None] * np.array([1.0, 0.0, -1.0])[None, :, None, None]
    )
    x = np.broadcast_to(base, (n, 3, SIZE, SIZE)).copy()
    for _ in range(3):
        centre = rng.uniform(-0.6, 0.6, (n, 2, 1, 1))
        width = rng.uniform(0.15, 0.4, (n, 1, 1))
        blob = np.exp(-((grid[None] - centre) ** 2).sum(1) / (2 * width**2))  # [n, H, W]
        x += rng.uniform(-0.4, 0.4, (n, 3, 1, 1)) * blob[:, None]
    return np.clip(x, 0, 1).astype(np.float32), y


def build_celeba_standin(raw_dir: Path | None, seed: int) -> Prepared:
    """2,000 train and 500 test stand-in images (train first, then test, from numpy default_rng(seed))."""
    rng = np.random.default_rng(seed)
    train, test = Split(*_faces(rng, STANDIN_TRAIN)), Split(*_faces(rng, STANDIN_TEST))
    meta = {
        "scaling": "generated in [0, 1]",
        "split": {"rule": "independent draws: train first, then test, from numpy default_rng(seed)", "seed": seed},
        "label_names": ["female (stand-in)", "male (stand-in)"],
        "positive_class": 1,
        "options": {"n_train": STANDIN_TRAIN, "n_test": STANDIN_TEST, "image_size": SIZE, "stand_in_for": "celeba32"},
    }
    return Prepared(train, test, meta)
