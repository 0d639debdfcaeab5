"""DP²-VAE (Jiang et al. 2022; PAPERS.md §4.1-4.2, 4.5-4.6): non-private pre-trained encoders, DP decoder.

The training split is shuffled and cut into K disjoint subsets. Stage 1 pre-trains one encoder per subset
(each with a throw-away decoder, batch gradients clipped, no noise), all K at once (`models.stacked`).
Stage 2 re-initialises the decoder and trains it with partial-model DP-SGD: each step draws a subset k, a
batch of B of its records, clips the per-example decoder gradients (noise on their sum) and updates
encoder k with its clipped mean gradient, without noise (A-D2). Only the decoder is released. The
implementation is in `dpvae.methods.impl.dp2vae` (imported on use: validation stays light).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np

from dpvae.methods.base import Method, Resources, RunContext
from dpvae.methods.registry import register_method
from dpvae.params import MethodParams, param

if TYPE_CHECKING:
    from dpvae.privacy.ledger import Ledger


@dataclass(frozen=True)
class DP2VAEParams(MethodParams):
    subsets: int = param(1000, "K disjoint subsets, one pre-trained encoder each", minimum=1)
    pretrain: bool = param(True, "stage 1: pre-train the K encoders non-privately (False = ablation)")
    pretrain_iters: int = param(2000, "stage-1 iterations per encoder (T_p)", minimum=0)
    iters: int = param(20000, "stage-2 decoder iterations (T)", minimum=1)
    batch_size: int = param(32, "records per stage-2 batch (B), drawn from one subset", minimum=1)
    clip: float = param(1.0, "per-example clipping norm C", exclusive_minimum=0)
    noise_multiplier: float | Literal["auto"] = param("auto", "sigma; auto = calibrated to the target epsilon")
    optimizer: Literal["adam"] = param("adam", "optimizer (Adam, Appendix E.3)")
    lr: float = param(0.0001, "stage-2 learning rate", exclusive_minimum=0)
    pretrain_lr: float = param(0.0001, "stage-1 learning rate", exclusive_minimum=0)
    latent_dim: int = param(8, "latent dimension", minimum=1)
    hidden_channels: list[int] = param([512, 256], "conv channels of the encoder (reversed in the decoder)")
    decoder_norm: Literal["group", "none"] = param("group", "normalisation in the released decoder (encoders: GroupNorm)")
    loss: Literal["bce", "mse"] = param("bce", "per-example reconstruction loss (KL weight 1)")
    chunk: int = param(50, "stage-1 encoders trained at once (vectorised); memory grows with it", minimum=1)


@register_method
class DP2VAE(Method):
    name = "dp2vae"
    paper = "dp2vae"
    private = True
    description = "DP2-VAE: non-private pre-trained encoders, DP decoder"
    Params = DP2VAEParams

    def resources(self, params: DP2VAEParams, dataset: str) -> Resources:
        """Cost ~ K·T_p stage-1 steps + T stage-2 steps of a model whose width is the first hidden size."""
        width = max(params.hidden_channels) / 512
        steps = params.subsets * params.pretrain_iters * int(params.pretrain) + 4 * params.iters
        return Resources(threads=2, mem_mb=8000, runtime=max(10, int(steps * width * 0.02 / 60)), gpu=True)

    def train(self, ctx: RunContext) -> Ledger:
        from dpvae.methods.impl.dp2vae import train

        return train(ctx)

    def sample(self, ctx: RunContext, n: int | None) -> dict[str, np.ndarray]:
        from dpvae.methods.impl.dp2vae import sample

        return sample(ctx, n)
