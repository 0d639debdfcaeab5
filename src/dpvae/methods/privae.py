"""PriVAE (Takahashi et al. 2020): VAEs with batch-wise divergences trained by term-wise DP-SGD (PAPERS.md §1.1).

Each step Poisson-samples a batch (rate B/N), splits it into `groups` sub-groups by independent uniform
labels, and releases g̃ = (Σ_i clip_C1 ∇φ(x_i) + N(0, (σ'C1)²))/B + (Σ_j clip_C2 ∇ψ(s_j) + N(0, (σ'C2)²))/b
(`privacy.dpsgd.TermwiseDPSGD`), then takes a plain SGD step. σ' = κσ, σ being ordinary DP-SGD's
multiplier for the target (ε, δ) at the same rate and step count; κ per the `kappa` option (the
paper's closed form, √5, or the tight factor; README "Privacy accounting"). `engine: micro | batch` are
Table 1's aggregation baselines (clip C, noise σ on the paper's sensitivities B·C and C). Every run writes
the paper's ledger and the sound one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from dpvae.methods.base import Method, Resources, RunContext
from dpvae.methods.registry import register_method
from dpvae.methods.vae_conv import VAEConvParams, vae_resources
from dpvae.models.precision import PRECISIONS
from dpvae.params import param


@dataclass(frozen=True)
class PriVAEParams(VAEConvParams):
    engine: Literal["termwise", "micro", "batch"] = param("termwise", "term-wise DP-SGD or the micro/batch-aggregation baselines")
    clip_sample: float = param(0.05, "C1: clipping norm of the per-example term", exclusive_minimum=0)
    clip_batch: float = param(0.0, "C2: clipping norm of the per-sub-group term (0 = no batch-wise term)", minimum=0)
    clip: float = param(0.0002, "C of the micro/batch-aggregation baselines", exclusive_minimum=0)
    kappa: Literal["paper", "sqrt5", "tight"] = param("paper", "noise calibration: the paper's (headline = paper ledger) or sound (sqrt5, tight: headline = sound ledger); see README, privacy accounting")


@register_method
class PriVAE(Method):
    """Term-wise DP-SGD (or a Table-1 aggregation baseline) on Mathieu et al.'s VAEs, plain SGD."""

    name = "privae"
    paper = "privae"
    private = True
    description = "PriVAE: conv/MLP VAE trained with term-wise DP-SGD or the aggregation baselines"
    Params = PriVAEParams
    RESOURCES = Resources(threads=2, mem_mb=4000, runtime=120)
    precisions = PRECISIONS

    def resources(self, params: PriVAEParams, dataset: str) -> Resources:
        return vae_resources(params, dataset, self.RESOURCES)

    def train(self, ctx: RunContext):
        from dpvae.methods.training.vae import train_vae

        return train_vae(ctx)

    def sample(self, ctx: RunContext, n: int | None) -> dict[str, np.ndarray]:
        from dpvae.methods.training.vae import sample_vae

        return sample_vae(ctx, n)
