"""Tiny runs of every implemented method, trained and sampled in one process (`tests/methods/test_hash_seed.py`
runs this file twice, under two PYTHONHASHSEEDs, and compares what the runs wrote).

    PYTHONPATH=tests python -m support.hash_seed_runs SPECS.json    # {method: run spec}; samples.npz: 64 records
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from dpvae.data.store import Split, write_prepared
from dpvae.paths import prepared_dir
from support.toy_runs import write_toy_dataset

N_SAMPLES = 64
# (dataset, params) per method (`write_data`): the cheapest data it accepts (the toy table, else 28x28 or, for the
# 32x32 conv VAE, 32x32 images) and parameters that train in seconds (Ryan's ~20 s: mbi's XLA compilation)
TINY = {
    "real": ("toy", {}),
    "vae-mlp": ("toy", {"epochs": 1, "batch_size": 50, "hidden": 16, "latent_dim": 2}),
    "dp-vae": ("toy", {"epochs": 1, "batch_size": 50, "hidden": 16, "latent_dim": 2}),
    "p3gm": ("toy", {"epochs": 1, "batch_size": 50, "hidden": 16, "pretrain_steps": 5, "em_iters": 2}),
    "dp-gm": (
        "toy",
        {"epochs": 1, "batch_size": 50, "hidden": 16, "latent_dim": 2, "clusters": 2, "rff_dim": 32, "kmeans_iters": 2},
    ),
    "privbayes": ("toy", {"histogram_bins": 4, "max_candidates": 10}),
    "ryan": ("toy", {"bins": 4, "iterations": 10}),
    "mst": ("toy", {"bins": 4, "iterations": 10}),
    "aim": ("toy", {"bins": 4, "rounds": 16, "round_iterations": 5, "iterations": 10}),  # T > 0.9 d (13 columns)
    "dp-merf": ("images28", {"epochs": 1, "batch_size": 32, "rff_dim": 64}),
    "dp2vae": (
        "images28",
        {"subsets": 4, "pretrain_iters": 1, "iters": 3, "batch_size": 8, "latent_dim": 2, "hidden_channels": [4, 4]},
    ),
    "gs-wgan": (
        "images28",
        {
            "discriminators": 4,
            "batch_size": 4,
            "iters": 2,
            "pretrain_iters": 1,
            "model_dim": 2,
            "critic_iters": 1,
            "noise_multiplier": 5.0,
        },
    ),
    "lvae": ("images28", {"epochs": 1, "batch_size": 32, "latent_dim": 2, "noise_multiplier": 5.0}),
    "privae": ("images32", {"epochs": 1, "batch_size": 32, "groups": 4, "latent_dim": 4}),
    "vae-conv": ("images32", {"epochs": 1, "batch_size": 32, "groups": 4, "latent_dim": 4}),
}


def write_data(root: Path) -> Path:
    """The datasets of `TINY` under root/prepared: the toy table, random 1 x 28 x 28 and 1 x 32 x 32 images in
    [0, 1] with 10 labels (64 training, 16 test records); returns root."""
    write_toy_dataset(root)
    rng = np.random.default_rng(0)
    for side in (28, 32):
        x = rng.integers(0, 256, size=(80, 1, side, side)).astype(np.float32) / np.float32(255)
        y = np.arange(80, dtype=np.int64) % 10
        labels = {"label_names": [str(i) for i in range(10)]}
        write_prepared(prepared_dir(root, f"images{side}"), Split(x[:64], y[:64]), Split(x[64:], y[64:]), labels)
    return root


def main(specs_file: str) -> None:
    from dpvae import stages
    from dpvae.runspec import RunSpec

    for text in json.loads(Path(specs_file).read_text()).values():
        spec = RunSpec.from_json(text)
        stages.train(spec)
        stages.sample(spec.run, N_SAMPLES)


if __name__ == "__main__":
    main(sys.argv[1])
