"""Training of the plain MLP VAE (P3GM's `vae.VAE`): learned μ and log σ² heads, N(0, I) prior, analytic KL.

Shared by the non-private VAE and DP-VAE (the same model trained end to end with DP-SGD, as the code's
`--alg dp-vae`); both release the decoder and sample z ~ N(0, I).
"""

from __future__ import annotations

from typing import Any

import torch

from dpvae.methods.base import RunContext
from dpvae.methods.checkpoint import Checkpoint
from dpvae.methods.mlp import store
from dpvae.methods.mlp.records import num_classes, to_vectors
from dpvae.methods.mlp.training import FitResult, Schedule, fit
from dpvae.models.losses import gaussian_kl
from dpvae.models.mlp_vae import MLPVAE


def schedule_of(ctx: RunContext) -> Schedule:
    p = ctx.params
    return Schedule(p.batching, len(ctx.data.train.y), p.batch_size, p.epochs)


def train_vae(ctx: RunContext, *, clip: float | None = None, sigma: float = 0.0, budget: Any = None) -> FitResult:
    """Train the MLP VAE of `ctx.params` (DP-SGD when `clip` is given) and write its model files."""
    p = ctx.params
    classes = num_classes(ctx.data)
    vectors = torch.from_numpy(to_vectors(ctx.data.train.x, ctx.data.train.y, classes))
    d = vectors.shape[1]
    model = MLPVAE(d, p.latent_dim, p.hidden)
    reparam = ctx.torch_generator("reparameterisation", device="cpu")

    def loss_fn(batch: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mu, logvar = model.encode(batch)                                    # [B, d'] each
        z = mu + torch.randn(mu.shape, generator=reparam) * (0.5 * logvar).exp()
        se = (model.decode(z) - batch).square().sum(1)                     # [B]
        kl = gaussian_kl(mu, logvar, torch.zeros_like(mu), torch.ones_like(mu))
        return se + kl, se

    schedule = schedule_of(ctx)
    result = fit(model, vectors, loss_fn, schedule, lr=p.lr, optimizer=p.optimizer, clip=clip, sigma=sigma,
                 batch_generator=ctx.torch_generator("batches", device="cpu"),
                 noise_generator=ctx.torch_generator("dp-sgd-noise", device="cpu") if clip is not None else None,
                 other_generators=(reparam,), checkpoint=Checkpoint(ctx), budget=budget,
                 snapshot=decoder_state if p.record_every_epoch else None, precision=ctx.precision)
    info = {"method": ctx.spec["method"], "arch": {"data_dim": d, "latent_dim": p.latent_dim, "hidden": p.hidden,
                                                   "pca": False},
            "record_shape": list(ctx.data.train.x.shape[1:]), "classes": classes, "sampling_prior": "normal",
            "sgd": {"sigma": sigma, "clip": clip, "steps": schedule.steps, "sample_rate": schedule.sample_rate,
                    "batching": p.batching, "epoch_ends": schedule.epoch_ends()}}
    store.save_model(ctx.model_dir, model, info, result.recon_loss, result.snapshots)
    return result


def decoder_state(model: MLPVAE) -> dict[str, torch.Tensor]:
    """The decoder's parameters (what a per-epoch snapshot keeps)."""
    return {k: v for k, v in model.state_dict().items() if k.startswith(("fc3.", "fc4."))}
