"""Generated stand-ins for datasets that cannot be downloaded here (CelebA): same schema, labelled as stand-ins.

`celeba32-standin` has CelebA32's schema — x (N, 3, 32, 32) float32 in [0, 1], y in {0, 1} ("female",
"male") — so that the CelebA items' code paths run at smoke scale without the real images. Each image is
a smooth colour field (a few random Gaussian blobs on a random background) whose mean hue depends on the
label, so that classifiers and generators have something learnable. It is NOT CelebA: items that use it say
"stand-in data".
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dpvae.data.store import Prepared, Split

STANDIN_TRAIN, STANDIN_TEST, SIZE = 2000, 500, 32


def _faces(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    y = rng.integers(0, 2, n).astype(np.int64)
    grid = np.stack(np.meshgrid(np.linspace(-1, 1, SIZE), np.linspace(-1, 1, SIZE), indexing="ij"))  # [2, H, W]
    base = rng.uniform(0.2, 0.8, (n, 3, 1, 1)) + 0.15 * np.where(y == 1, 1.0, -1.0)[:, None, None, None] \
        * np.array([1.0, 0.0, -1.0])[None, :, None, None]
    x = np.broadcast_to(base, (n, 3, SIZE, SIZE)).copy()
    for _ in range(3):
        centre = rng.uniform(-0.6, 0.6, (n, 2, 1, 1))
        width = rng.uniform(0.15, 0.4, (n, 1, 1))
        blob = np.exp(-((grid[None] - centre) ** 2).sum(1) / (2 * width**2))          # [n, H, W]
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
        "options": {"n_train": STANDIN_TRAIN, "n_test": STANDIN_TEST, "image_size": SIZE,
                    "stand_in_for": "celeba32"},
    }
    return Prepared(train, test, meta)
