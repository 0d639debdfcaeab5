"""P3GM's non-private VAE (`--alg vae`): the MLP VAE with learned μ and log σ² heads, N(0, I) prior, Adam."""

from __future__ import annotations

from dpvae.methods.base import Resources, RunContext
from dpvae.methods.mlp_common import MLPVAEMethod, MLPVAEParams
from dpvae.methods.registry import register_method


@register_method
class VAEMLP(MLPVAEMethod):
    name = "vae-mlp"
    paper = "p3gm"
    private = False
    description = "non-private MLP VAE with N(0, I) prior (P3GM's VAE)"
    Params = MLPVAEParams
    RESOURCES = Resources(threads=2, mem_mb=3000, runtime=30)

    def train(self, ctx: RunContext) -> None:
        from dpvae.methods.mlp.vae import train_vae

        train_vae(ctx)
        return None
