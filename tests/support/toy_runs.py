"""A small prepared dataset and run specs for training the MLP-VAE methods in tests (seconds on a CPU)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dpvae.data.store import Split, write_prepared
from dpvae.paths import prepared_dir
from dpvae.runspec import RunSpec

N_TRAIN, N_TEST, FEATURES = 600, 100, 12


def write_toy_dataset(root: Path, name: str = "toy") -> Path:
    """Two classes in [0, 1]^12 that differ in their means; returns the data root."""
    rng = np.random.default_rng(0)

    def split(n: int) -> Split:
        y = rng.integers(0, 2, n)
        shift = 0.2 * (2 * y[:, None] - 1) * np.linspace(0.2, 1, FEATURES)
        x = np.clip(0.5 + shift + 0.1 * rng.standard_normal((n, FEATURES)), 0, 1)
        return Split(x.astype(np.float32), y.astype(np.int64))

    write_prepared(prepared_dir(root, name), split(N_TRAIN), split(N_TEST), {"label_names": ["a", "b"]})
    return root


def toy_spec(root: Path, tmp_path: Path, method: str = "p3gm", private: bool = True, **params) -> RunSpec:
    """A run spec on the toy dataset (2 epochs, B = 50, a 32-unit MLP), `params` overriding."""
    if method == "p3gm":
        base = {
            "epochs": 2,
            "batch_size": 50,
            "pretrain_steps": 20,
            "em_iters": 3,
            "hidden": 32,
            "sigma_pca": 5.0,
            "sigma_sgd": "auto",
        }
    else:
        base = {"epochs": 2, "batch_size": 50, "hidden": 32, "latent_dim": 4}
    return RunSpec.standalone(
        f"toy/{method}/eps1/seed0",
        str(tmp_path / "run"),
        scale="test",
        dataset="toy",
        method=method,
        private=private,
        params={**base, **params},
        epsilon=1.0 if private else None,
        delta=1e-5,
        seed=0,
        device="cpu",
        data_root=str(root),
    )
