"""Generated stand-ins for datasets these machines cannot download (Kaggle Credit, UCI ISOLET, UCI ESR; CelebA).

A stand-in has the real dataset's schema — feature count, value range per column, label balance, binary
label names — and a learnable class structure, but it is *not* the real data: items rendered from a
stand-in say "stand-in data" on the page. Its id is the real id plus `STANDIN_SUFFIX`; the real ids keep
their download + checksum path (`data/tabular.py`).

Generator: a latent z ~ N(0, I_k) shifted by ±`separation` along one direction per class, mapped by a
random linear layer plus Gaussian noise through tanh (bounded, skewed marginals, correlated columns). Its
domain is the generator's declared range, tanh's (-1, 1) for every column (`GENERATOR_RANGE`): the seeded
90/10 holdout comes first, then both splits are encoded through that domain into [0, 1], as the real
preparers encode through theirs (`dpvae.data.tabular.prepare_table`). Deterministic in the seed.

`celeba32-standin` (images) has CelebA32's schema — x (N, 3, 32, 32) float32 in [0, 1], y in {0, 1}
("female", "male") — so that the CelebA items' code paths run at smoke scale without the real images. Each
image is a smooth colour field (a few random Gaussian blobs on a random background) whose mean hue depends
on the label, so that classifiers and generators have something learnable. It is NOT CelebA.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from dpvae.data.domain import Column, Domain, images_domain
from dpvae.data.store import Prepared, Split

STANDIN_SUFFIX = "-standin"
GENERATOR_RANGE = (-1.0, 1.0)  # tanh's range: the generator's declared domain of every stand-in column


@dataclass(frozen=True)
class StandinSchema:
    """What a stand-in copies from its real dataset (docs/papers.md §3.2 / the real preparers)."""

    real_id: str
    n_records: int
    n_features: int
    positive_rate: float
    label_names: tuple[str, str]
    real_description: str


SCHEMAS: dict[str, StandinSchema] = {
    "credit": StandinSchema(
        "credit",
        3000,
        29,
        0.047,
        ("normal", "fraud"),
        "Kaggle Credit as P3GM's code (V1..V28 + Amount, 4.7 % fraud)",
    ),
    "isolet": StandinSchema(
        "isolet",
        2000,
        617,
        0.192,
        ("consonant", "vowel"),
        "UCI ISOLET (617 features in [-1, 1], 19.2 % vowels)",
    ),
    "esr": StandinSchema(
        "esr",
        2000,
        178,
        0.20,
        ("non-seizure (y 2..5)", "seizure (y 1)"),
        "UCI ESR (X1..X178, 20 % seizure)",
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
    """(x float64 [N, d] in `GENERATOR_RANGE`, y int64 [N]) with exactly round(rate·N) positives."""
    n, d = schema.n_records, schema.n_features
    y = np.zeros(n, dtype=np.int64)
    y[rng.choice(n, size=round(schema.positive_rate * n), replace=False)] = 1
    direction = rng.standard_normal(latent_dim)
    direction /= np.linalg.norm(direction)
    z = rng.standard_normal((n, latent_dim)) + separation * (2 * y - 1)[:, None] * direction[None, :]
    weights = rng.standard_normal((latent_dim, d)) / np.sqrt(latent_dim)
    offsets = rng.normal(0.0, 0.5, size=d)
    return np.tanh(z @ weights + offsets + noise * rng.standard_normal((n, d))), y


def standin_domain(schema: StandinSchema) -> Domain:
    """A stand-in's public domain: `GENERATOR_RANGE` for every column, the schema's two labels."""
    columns = tuple(Column(f"f{i + 1}", bounds=GENERATOR_RANGE) for i in range(schema.n_features))
    return Domain("declared", schema.label_names, columns)


def build_standin(raw_dir: Path | None, seed: int, *, real_id: str) -> Prepared:
    """The stand-in of `real_id`: generated from `default_rng(SeedSequence(seed) child)`, seeded 90/10 holdout,
    encoded through `standin_domain`."""
    from dpvae.data.tabular import prepare_table

    schema = SCHEMAS[real_id]
    rng = np.random.default_rng(np.random.SeedSequence([seed, len(real_id), schema.n_features]).spawn(1)[0])
    x, y = generate(schema, rng)
    public = standin_domain(schema)
    frame = pd.DataFrame(x, columns=[c.name for c in public.columns])
    prepared = prepare_table(frame, y, public, seed, "public", f"stand-in {standin_id(real_id)}")
    prepared.meta.update(
        {
            "scaling": f"generated in tanh's range {list(GENERATOR_RANGE)} (the declared domain); split first, then "
            "(v + 1) / 2 into [0, 1]",
            "standin_of": real_id,
            "notes": (
                f"STAND-IN DATA: generated with the schema of {schema.real_description}; not the real dataset, "
                "which cannot be downloaded on this machine"
            ),
        }
    )
    prepared.meta["options"] |= {
        "n_records": schema.n_records,
        "n_features": schema.n_features,
        "positive_rate": schema.positive_rate,
        "generator": "tanh(linear(z ± shift) + noise)",
    }
    return prepared


# ---- images: the CelebA32 stand-in ----

STANDIN_TRAIN, STANDIN_TEST, SIZE = 2000, 500, 32
STANDIN_LABELS = ("female (stand-in)", "male (stand-in)")


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
        "label_names": list(STANDIN_LABELS),
        "positive_class": 1,
        "domain": images_domain(STANDIN_LABELS).to_dict(),  # generated and clipped to [0, 1]
        "options": {"n_train": STANDIN_TRAIN, "n_test": STANDIN_TEST, "image_size": SIZE, "stand_in_for": "celeba32"},
    }
    return Prepared(train, test, meta)
