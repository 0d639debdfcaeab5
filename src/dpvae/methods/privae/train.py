"""Training and sampling of PriVAE's VAEs (methods `vae-conv` and `privae`; docs/papers.md §1.1, §1.4-1.5).

Non-private: Adam (or SGD) on mean_i φ(x_i) + mean_j ψ(s_j) over shuffled fixed-size batches, one
permutation per epoch. Private: Poisson batches of rate q = B/N for T = ⌈epochs·N/B⌉ steps, one engine
step per batch (term-wise: φ per example, ψ per sub-group; micro: φ_i + ψ(batch) per example; batch:
mean φ + ψ(batch)), then the optimiser step. Sub-groups are independent uniform labels (the sound
reading of Algorithm 1, A-P5). Random streams (batches, reparameterisation/prior/sub-group draws,
DP noise) are separate seeded generators, checkpointed with the model, so a resumed run ends with the
same bytes. No run keeps a loss history (a private run's would be a statistic of its batches that the engine
does not release), and no progress line prints a loss (`dpvae.progress`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from dpvae.errors import ConfigError
from dpvae.methods.base import RunContext
from dpvae.methods.checkpoint import Checkpoint, restore_rng, rng_state
from dpvae.methods.privae.accounting import schedule
from dpvae.models import precision
from dpvae.models.latent_vae import LatentVAE
from dpvae.models.vae_files import load_vae, save_vae
from dpvae.paths import model_path
from dpvae.progress import Progress


def build_model(params: Any, record_shape: tuple[int, ...]) -> LatentVAE:
    """The conv VAE for 32×32 images (sparse/normal prior), the pinwheel MLP VAE for 2-d points (mixture prior)."""
    if len(record_shape) == 1:
        from dpvae.models.pinwheel_vae import PinwheelVAE

        if params.prior != "mog":
            raise ConfigError(
                f"prior: the MLP VAE for {record_shape[0]}-d records has the mixture prior 'mog', got {params.prior!r}"
            )
        return PinwheelVAE(params.latent_dim, params.hidden, record_shape[0], params.prior_variance)
    if tuple(record_shape) != (1, 32, 32):
        raise ConfigError(f"the conv VAE takes 1x32x32 images; this dataset's records are {tuple(record_shape)}")
    if params.prior == "mog":
        raise ConfigError("prior: 'mog' is the pinwheel mixture (2-d latents); the conv VAE takes 'sparse' or 'normal'")
    from dpvae.models.conv_vae import ConvVAE

    spike_weight = params.spike_weight if params.prior == "sparse" else 0.0
    return ConvVAE(params.latent_dim, norm=params.norm, spike_weight=spike_weight, spike_std=params.spike_std)


def _optimizer(params: Any, model: torch.nn.Module) -> torch.optim.Optimizer:
    if params.optimizer in ("adam", "amsgrad"):
        return torch.optim.Adam(model.parameters(), lr=params.lr, amsgrad=params.optimizer == "amsgrad")
    return torch.optim.SGD(model.parameters(), lr=params.lr)


class _Private:
    """A private run's engine, its calibration and how it turns (φ, ψ) into `.grad`."""

    def __init__(
        self, ctx: RunContext, model: LatentVAE, sample_rate: float, steps: int, generator: torch.Generator
    ) -> None:
        from dpvae.methods.privae import accounting as privacy
        from dpvae.privacy.dpsgd import TermwiseDPSGD

        p = ctx.params
        privacy.check_consistent(p)
        self.params, self.steps, self.delta, self.target = p, steps, ctx.delta, ctx.epsilon
        self.sample_rate = sample_rate
        self.groups = p.groups if p.engine == "termwise" else 1
        common = {"sample_rate": self.sample_rate, "generator": generator}
        if p.engine == "termwise":
            self.calibration = privacy.termwise_noise(p, ctx.epsilon, ctx.delta, self.sample_rate, steps)
            self.engine = TermwiseDPSGD(
                model,
                sample_clip=p.clip_sample,
                batch_clip=p.clip_batch,
                expected_batch_size=p.batch_size,
                num_groups=p.groups,
                noise_multiplier=self.calibration.noise_multiplier,
                **common,
            )
            return
        self.engine, self.calibration = privacy.aggregation_engine(
            p, model, self.sample_rate, steps, ctx.epsilon, ctx.delta, generator
        )

    def step(self, phi: torch.Tensor, psi: torch.Tensor, groups: torch.Tensor) -> None:
        engine = self.params.engine
        if engine == "termwise":
            self.engine.step(phi, psi, groups)
        elif engine == "micro":
            self.engine.step(phi, psi[0])
        else:
            self.engine.step(phi.sum() / max(len(phi), 1) + psi[0])

    def ledger(self):
        from dpvae.methods.privae import accounting as privacy

        if self.params.engine == "termwise":
            return privacy.termwise_ledger(
                self.params,
                self.calibration.noise_multiplier,
                self.sample_rate,
                self.engine.steps,
                self.delta,
                self.target,
            )
        return privacy.aggregation_ledger(self.params, self.engine, self.delta, self.target)

    def summary(self) -> dict[str, Any]:
        c = self.calibration
        return {
            "engine": self.params.engine,
            "sigma": c.sigma,
            "factor": c.factor,
            "noise_multiplier": c.noise_multiplier,
            "sample_rate": self.sample_rate,
            "steps": self.engine.steps,
            "kappa": self.params.kappa,
        }


def train_vae(ctx: RunContext):
    """Train one run of `vae-conv` or `privae`; save the model; return the ledger of a private run."""
    p, private = ctx.params, bool(ctx.spec.private)
    x_train = torch.as_tensor(np.asarray(ctx.data.train.x, dtype=np.float32))
    n = len(x_train)
    sample_rate, steps = schedule(p, n)  # as `accounting.planned_ledger`
    per_epoch = math.ceil(n / p.batch_size)
    device = torch.device(ctx.device)
    model = build_model(p, tuple(x_train.shape[1:])).to(device).train()
    x_train = x_train.to(device)  # the batches are gathered where the model is
    optimizer = _optimizer(p, model)
    batches = ctx.torch_generator("batches", "cpu")
    draws = ctx.torch_generator("draws", "cpu")  # reparameterisation noise, prior draws, sub-groups
    dp_noise = ctx.torch_generator("dp-noise", str(device))
    dp = _Private(ctx, model, sample_rate, steps, dp_noise) if private else None
    groups_count = dp.groups if dp else p.groups

    checkpoint = Checkpoint(ctx)
    start, order = 0, torch.empty(0, dtype=torch.long)
    if (state := checkpoint.load()) is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        restore_rng(state["rng"], batches, draws, dp_noise)
        start, order = state["step"], state["order"]
        if dp:
            dp.engine.steps = state["engine_steps"]
        print(f"resumed at step {start}/{steps}", flush=True)
    progress = Progress(f"{ctx.spec.method} training", steps, epsilon=None if dp is None else lambda _: dp.ledger())
    progress.start_at(start)
    for step in range(start, steps):
        if private:
            from dpvae.privacy.dpsgd import poisson_sample

            index = poisson_sample(n, dp.sample_rate, batches)
        else:
            position = (step % per_epoch) * p.batch_size
            if position == 0:
                order = torch.randperm(n, generator=batches)
            index = order[position : position + p.batch_size]
        with precision.forward(ctx.precision, device, per_example=dp is not None):
            phi, psi, groups = _terms(model, p, x_train[index.to(device)], draws, groups_count, device)
        phi, psi = phi.float(), psi.float()
        optimizer.zero_grad(set_to_none=True)
        if dp:
            with precision.private(ctx.precision):
                dp.step(phi, psi, groups)
        else:
            (phi.mean() + psi.mean()).backward()
        optimizer.step()
        progress.advance()  # ε of the engine's steps so far
        if step + 1 < steps and checkpoint.due(step):
            checkpoint.save(
                {
                    "model": model.state_dict(),
                    "optimizer": optimizer.state_dict(),
                    "step": step + 1,
                    "rng": rng_state(batches, draws, dp_noise),
                    "order": order,
                    "engine_steps": dp.engine.steps if dp else 0,
                }
            )

    if dp:
        dp.engine.close()
    extra = {"method": ctx.spec.method, "steps": steps, "privacy": dp.summary() if dp else None}
    save_vae(model.cpu(), ctx.model_dir, extra)
    return dp.ledger() if dp else None


def _terms(
    model: LatentVAE, p: Any, x: torch.Tensor, draws: torch.Generator, num_groups: int, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """φ [n], ψ [num_groups] and the sub-group labels [n] of one batch."""
    from dpvae.privacy.dpsgd import random_groups

    count = len(x)
    noise = torch.randn(count, p.mc_samples, model.latent_dim, generator=draws).to(device)
    prior = model.sample_prior(count, draws).to(device)
    groups = random_groups(count, num_groups, draws).to(device)
    phi, psi = model.loss_terms(x, noise, prior, groups, num_groups, p.beta, p.alpha, p.divergence)
    return phi, psi, groups


def sample_vae(ctx: RunContext, n: int | None, batch: int = 1000) -> dict[str, np.ndarray]:
    """Decoder means at prior draws (images clamped to [0, 1]); labels 0 (the VAEs are unconditional)."""
    model, _ = load_vae(model_path(ctx.run_dir))
    count = len(ctx.data.train.y) if n is None else int(n)
    generator = ctx.torch_generator("sample", "cpu")
    parts, progress = [], Progress("sampling", count, "records")
    with torch.no_grad():
        for start in range(0, count, batch):
            z = model.sample_prior(min(batch, count - start), generator)
            parts.append(model.reconstruction(z))
            progress.advance(len(z))
    x = torch.cat(parts) if parts else torch.empty(0, *ctx.data.train.x.shape[1:])
    if x.dim() > 2:
        x = x.clamp(0.0, 1.0)
    return {"x": x.numpy().astype(np.float32), "y": unconditional_labels(count)}


def unconditional_labels(n: int) -> np.ndarray:
    """Labels of an unconditional VAE's samples: all 0 (the model has no label; 0 is in every data set's range)."""
    return np.zeros(n, dtype=np.int64)
