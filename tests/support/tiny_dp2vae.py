"""A tiny DP²-VAE run on the smoke config's MNIST: seconds on a CPU, stage 1 trained in-process."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from dpvae.runs import Run, run_spec
from dpvae.runspec import RunSpec

TINY = {
    "subsets": 4,
    "pretrain_iters": 2,
    "iters": 6,
    "batch_size": 4,
    "hidden_channels": [4, 4],
    "latent_dim": 2,
    "chunk": 2,
    "max_train": 64,
}


def tiny_dp2vae_spec(
    config: dict, data: Path, tmp: Path, name: str, eps: str = "10", device: str = "cpu", seed: int = 0, **params
) -> RunSpec:
    """The smoke config's MNIST run at ε = `eps`, seed `seed`, made tiny (`TINY`, then `params`), under
    `tmp/name`; without `stage1`, so that it trains its stage 1 in-process."""
    spec = run_spec(config, Run("mnist", "dp2vae", eps, seed))
    return replace(
        spec,
        params={**spec.params, **TINY, **params},
        stage1=None,
        run=str(tmp / name),
        data_root=str(Path(data).parents[1]),
        device=device,
    )
