"""What the MLP-VAE methods of the P3GM comparison share (P3GM, PGM, P3GM(AE), VAE, DP-VAE; DP-GM's
per-cluster VAEs can reuse it): typed parameters and the sampling side of a trained model.

Kept apart from the method modules and free of torch at import, so that any method — and
`methods/planned.py` — can derive from it without import cycles through the registry. The heavy part
(training loop, model files) is `dpvae.methods.mlp`, imported inside the functions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from dpvae.methods.base import Method, RunContext
from dpvae.models.precision import PRECISIONS
from dpvae.params import MethodParams, param

Optimizer = Literal["adam", "sgd"]
#: "poisson": each record joins a step's batch independently with probability B/N (what the accountant
#: assumes); "code": the P3GM reference loader — ⌊N/B⌋ fixed consecutive batches, one drawn uniformly
#: with replacement per step, ⌊N/B⌋ − 1 steps per epoch (PAPERS.md A-G8).
Batching = Literal["poisson", "code"]


@dataclass(frozen=True)
class MLPVAEParams(MethodParams):
    """P3GM's MLP VAE [d, hidden, d'] / [d', hidden, d] (tkgsn/P3GM `src/vae.py`), trained without privacy."""

    hidden: int = param(1000, "width of the MLP's hidden layer", minimum=1)
    latent_dim: int = param(30, "latent dimension", minimum=1)
    optimizer: Optimizer = param("adam", "optimizer of the decoder (and encoder) updates")
    lr: float = param(0.001, "learning rate", exclusive_minimum=0)
    epochs: float = param(1, "passes over the training set", minimum=0)
    batch_size: int = param(100, "records per (expected) batch", minimum=1)
    batching: Batching = param("code", "the reference code's fixed batches drawn with replacement, or Poisson sampling")
    record_every_epoch: bool = param(False, "record the reconstruction loss per iteration and the decoder per epoch (fig 7)")


@dataclass(frozen=True)
class DPVAEParams(MLPVAEParams):
    """The same MLP VAE trained end to end with DP-SGD (per-example clipping, Gaussian noise)."""

    clip: float = param(1.0, "per-example clipping norm C", exclusive_minimum=0)
    sigma_sgd: float | Literal["auto"] = param("auto", "DP-SGD noise multiplier; auto = calibrated to the target epsilon")
    batching: Batching = param("poisson", "Poisson sampling (as accounted) or the reference code's fixed batches drawn with replacement")


class MLPVAEMethod(Method):
    """Sampling, reconstruction and per-epoch snapshots of a model saved by `dpvae.methods.mlp.store`."""

    precisions = PRECISIONS      # their training loop (`dpvae.methods.mlp.training.fit`) applies each

    def sample(self, ctx: RunContext, n: int | None) -> dict[str, np.ndarray]:
        """n records (default: as many as the training split, the code's synthetic-set size)."""
        from dpvae.methods.mlp import store

        model, info = store.load_model(ctx.model_dir)
        count = len(ctx.data.train.y) if n is None else int(n)
        return store.generate(model, info, count, ctx.torch_generator("sample", device="cpu"))

    def reconstruct(self, ctx: RunContext, x: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
        """decoder(encoder mean) of real records: P3GM's "public" synthetic data (Table VIII as computed)."""
        from dpvae.methods.mlp import store
        from dpvae.methods.mlp.records import to_vectors

        model, info = store.load_model(ctx.model_dir)
        return store.reconstruct(model, info, to_vectors(x, y, info["classes"]))

    def snapshot_count(self, ctx: RunContext) -> int:
        """How many per-epoch decoder snapshots the run kept (0 without record_every_epoch)."""
        from dpvae.methods.mlp import store

        return len(store.load_snapshots(ctx.model_dir))

    def sample_snapshot(self, ctx: RunContext, index: int, n: int | None) -> dict[str, np.ndarray]:
        """n records from the decoder as it was at the end of epoch `index + 1` (same prior as `sample`)."""
        from dpvae.methods.mlp import store

        model, info = store.load_model(ctx.model_dir)
        snapshots = store.load_snapshots(ctx.model_dir)
        if not 0 <= index < len(snapshots):
            raise IndexError(f"run {ctx.spec['run_id']} kept {len(snapshots)} epoch snapshots, asked for #{index}")
        model.load_state_dict({**model.state_dict(), **snapshots[index]})
        count = len(ctx.data.train.y) if n is None else int(n)
        return store.generate(model, info, count, ctx.torch_generator(f"sample-epoch{index + 1}", device="cpu"))

    def recon_loss(self, ctx: RunContext) -> np.ndarray:
        """Batch mean of the reconstruction term at every training step."""
        from dpvae.methods.mlp import store

        return store.load_recon_loss(ctx.model_dir)

