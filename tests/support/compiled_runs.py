"""Tiny compiled-vs-eager runs on the smoke config's MNIST (`tests/methods/test_*_compile.py`,
`benchmarks/compile_spread.py`): the specs, the released tensors and the one distance both read."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import torch

from dpvae.paths import model_path
from dpvae.runs import Run, run_spec
from dpvae.runspec import RunSpec

GSWGAN_TINY = {
    "discriminators": 4,
    "batch_size": 4,
    "max_train": 64,
    "iters": 4,
    "pretrain_iters": 0,
    "model_dim": 2,
    "critic_iters": 2,
    "lr": 0.001,
}


def tiny_gswgan_spec(config: dict, data: Path, tmp: Path, name: str, seed: int = 0, **params) -> RunSpec:
    """The smoke config's MNIST GS-WGAN run at ε = 10, seed `seed`, made tiny (`GSWGAN_TINY`, then `params`)."""
    spec = run_spec(config, Run("mnist", "gs-wgan", "10", seed))
    return replace(
        spec,
        params={**spec.params, **GSWGAN_TINY, **params},
        run=str(tmp / name),
        data_root=str(Path(data).parents[1]),
        device="cpu",
    )


def gswgan_generator(spec: RunSpec) -> dict[str, torch.Tensor]:
    """The released generator's parameters (its EMA)."""
    return torch.load(Path(model_path(spec.run)) / "generator.pt", weights_only=True, map_location="cpu")["params"]


def dp2vae_decoder(spec: RunSpec) -> dict[str, torch.Tensor]:
    """The released decoder's parameters."""
    return torch.load(Path(model_path(spec.run)) / "decoder.pt", weights_only=True, map_location="cpu")


def worst(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    """The largest |a - b| / max|a| over the tensors, tensor by tensor."""
    assert a.keys() == b.keys()
    return max(float((a[k] - b[k]).abs().max() / a[k].abs().max().clamp_min(1e-12)) for k in a)
