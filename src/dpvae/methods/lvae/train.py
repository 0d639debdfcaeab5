"""LVAE's training (plain, DP-SGD, gradient penalty or spectral norm) and what the trained network offers:
samples, per-record ELBOs and reconstructions (the white-box attacks and the outlier metric use them)."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import torch

from dpvae.errors import ConfigError
from dpvae.methods.base import RunContext
from dpvae.methods.checkpoint import Checkpoint, restore_rng, rng_state
from dpvae.methods.lvae import accounting
from dpvae.methods.lvae.accounting import CLAIM_FILE, lipschitz_claim
from dpvae.models import precision
from dpvae.models.lvae_vae import LVAEConvVAE, decoder_jacobian_norms, jacobian_norm_estimate
from dpvae.paths import model_path
from dpvae.privacy.budget import StepBudget
from dpvae.privacy.dpsgd import DPSGD
from dpvae.privacy.ledger import Ledger
from dpvae.progress import Progress

MODEL_FILE = "model.pt"
SPEC_FILE = "model.json"


def train(ctx: RunContext) -> Ledger | None:
    """Train one run (plain, DP-SGD or Lipschitz-constrained); a private run returns its ledger."""
    p = ctx.params
    private = bool(ctx.spec.private)
    if private and p.constraint != "none":
        raise ConfigError(
            f"variants.{ctx.spec.variant}.params.constraint: {p.constraint!r} with DP-SGD is "
            "not supported (the gradient penalty and the power iteration are not per-example "
            "terms); use constraint: none for the private variant"
        )
    x = torch.from_numpy(ctx.data.train.x).to(ctx.device)
    n = len(x)
    model = LVAEConvVAE(p.latent_dim, spectral_norm=p.constraint == "spectral_norm", lipschitz=p.lipschitz).to(
        ctx.device
    )
    optimizer = (torch.optim.Adam if p.optimizer == "adam" else torch.optim.SGD)(model.parameters(), lr=p.lr)
    per_epoch = math.ceil(n / p.batch_size)
    steps = math.ceil(p.epochs * n / p.batch_size) if private else math.ceil(p.epochs * per_epoch)
    batches = ctx.torch_generator("batches", "cpu")  # batches, reparameterisation, probes
    engine = _engine(ctx, model, n, steps) if private else None
    streams = [batches] + ([engine.generator] if engine else [])

    checkpoint, start = Checkpoint(ctx), 0
    if (state := checkpoint.load()) is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        restore_rng(state["rng"], *streams)
        start = state["step"]
        if engine:
            engine.steps = state["engine_steps"]

    def spent(_: int) -> Ledger:  # the ledger of the engine's steps so far (progress lines)
        return accounting.ledger(
            engine.noise_multiplier, engine.sample_rate, engine.steps, p.clip, ctx.delta, ctx.epsilon
        )

    progress = Progress("lvae training", steps, epsilon=spent if engine else None)
    progress.start_at(start)
    model.train()
    for step in range(start, steps):
        if engine:
            from dpvae.privacy.dpsgd import poisson_sample

            idx = poisson_sample(n, p.batch_size / n, batches)
        else:
            epoch, within = divmod(step, per_epoch)
            order = torch.randperm(n, generator=ctx.torch_generator(f"epoch-{epoch}", "cpu"))
            idx = order[within * p.batch_size : (within + 1) * p.batch_size]
        batch = x[idx.to(x.device)]
        noise = torch.randn(len(idx), p.latent_dim, generator=batches).to(x.device)
        optimizer.zero_grad(set_to_none=True)
        with precision.forward(ctx.precision, x.device, per_example=engine is not None):
            losses = model.loss(batch, noise)
        losses = losses.float()
        if engine:
            with precision.private(ctx.precision):
                engine.step(losses)
        else:
            loss = losses.mean()
            if p.constraint == "gradient_penalty" and p.gp_weight > 0:
                loss = loss + p.gp_weight * _penalty(model, p, batch, batches)
            loss.backward()
        optimizer.step()
        progress.advance()
        if checkpoint.due(step):
            checkpoint.save(
                {
                    "model": model.state_dict(),
                    "optimizer": optimizer.state_dict(),
                    "step": step + 1,
                    "rng": rng_state(*streams),
                    "engine_steps": engine.steps if engine else 0,
                }
            )
    model.eval()
    ctx.model_dir.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), ctx.model_dir / MODEL_FILE)
    (ctx.model_dir / SPEC_FILE).write_text(
        json.dumps(
            {
                "latent_dim": p.latent_dim,
                "constraint": p.constraint,
                "lipschitz": p.lipschitz,
                "steps": steps,
                "n_train": n,
            },
            indent=2,
        )
    )
    if p.constraint != "none":
        _write_claim(ctx, model, p)
    if engine:
        engine.close()
        return accounting.ledger(
            engine.noise_multiplier, engine.sample_rate, engine.steps, p.clip, ctx.delta, ctx.epsilon
        )
    return None


def _engine(ctx: RunContext, model: Any, n: int, steps: int) -> Any:
    p = ctx.params
    q = p.batch_size / n
    sigma = accounting.noise_multiplier(p, ctx.epsilon, ctx.delta, q, steps)
    budget = StepBudget(lambda t: accounting.dpsgd_accounting(sigma, q, t, p.clip, ctx.delta).epsilon, ctx.epsilon)
    return DPSGD(
        model,
        max_grad_norm=p.clip,
        noise_multiplier=sigma,
        sample_rate=q,
        expected_batch_size=p.batch_size,
        generator=ctx.torch_generator("dp-noise"),
        budget=budget,
    )


def _penalty(model: Any, p: Any, batch: Any, generator: Any) -> Any:
    """mean over probes of (‖J(z)‖ − L)² (or its one-sided form) — WGAN-GP's penalty on the decoder."""
    shape = (p.gp_points, p.latent_dim)
    prior = torch.randn(shape, generator=generator).to(batch.device)
    if p.gp_probes == "prior":
        z = prior
    else:
        with torch.no_grad():
            rows = torch.randint(len(batch), (p.gp_points,), generator=generator).to(batch.device)
            mu, logvar = model.encode(batch[rows])
            eps = torch.randn(shape, generator=generator).to(batch.device)
            posterior = mu + eps * (0.5 * logvar).exp()
        if p.gp_probes == "posterior":
            z = posterior
        else:
            u = torch.rand(p.gp_points, 1, generator=generator).to(batch.device)
            z = u * prior + (1 - u) * posterior
    direction = torch.randn(shape, generator=generator).to(batch.device)
    iterations = p.gp_power_iterations if p.gp_norm == "spectral" else 0
    norms = jacobian_norm_estimate(model.decoder, z, direction, iterations)
    excess = norms - p.lipschitz
    return (excess.clamp_min(0) if p.gp_sided == "one" else excess).square().mean()


def _write_claim(ctx: RunContext, model: Any, p: Any) -> None:
    generator = ctx.torch_generator("lipschitz-probes", "cpu")
    z = torch.randn(p.lipschitz_probes, p.latent_dim, generator=generator).to(ctx.device)
    norms = torch.cat([decoder_jacobian_norms(model.decoder, chunk) for chunk in z.split(64)]).cpu().numpy()
    measured = {
        "probes": int(len(norms)),
        "norm": "spectral norm of the logit map's Jacobian at z ~ N(0, I)",
        "max": float(norms.max()),
        "median": float(np.median(norms)),
        "mean": float(norms.mean()),
    }
    radius = float(np.sqrt((ctx.data.train.x.reshape(len(ctx.data.train.x), -1) ** 2).sum(1)).max())
    claim = lipschitz_claim(
        lipschitz=p.lipschitz,
        latent_dim=p.latent_dim,
        delta=ctx.delta,
        data_radius=radius,
        constraint=p.constraint,
        measured=measured,
    )
    (ctx.model_dir / CLAIM_FILE).write_text(json.dumps(claim, indent=2))


def load(ctx: RunContext, model_dir: Any = None) -> Any:
    """The trained network (eval mode, on the run's device)."""
    directory = model_dir or model_path(ctx.run_dir)
    spec = json.loads((directory / SPEC_FILE).read_text())
    model = LVAEConvVAE(
        spec["latent_dim"], spectral_norm=spec["constraint"] == "spectral_norm", lipschitz=spec["lipschitz"]
    )
    model.load_state_dict(torch.load(directory / MODEL_FILE, map_location="cpu", weights_only=True))
    return model.to(ctx.device, memory_format=torch.channels_last).eval()  # ~2x faster ConvT on CPU


def sample(ctx: RunContext, n: int | None) -> dict[str, np.ndarray]:
    """`n` images (default: as many as training records): Bernoulli means σ(decoder(z)), z ~ N(0, I).

    The model is unconditional: every label is 0.
    """
    model = load(ctx)
    n = len(ctx.data.train.y) if n is None else int(n)
    generator = ctx.torch_generator("sample", "cpu")
    z = torch.randn(n, model.latent_dim, generator=generator)
    x, progress = np.zeros((n, 1, 28, 28), dtype=np.float32), Progress("sampling", n, "records")
    with torch.no_grad():
        for start in range(0, n, 1000):
            x[start : start + 1000] = torch.sigmoid(model.decode(z[start : start + 1000].to(ctx.device))).cpu().numpy()
            progress.advance(len(x[start : start + 1000]))
    return {"x": x, "y": np.zeros(n, dtype=np.int64)}


def elbo(ctx: RunContext, x: np.ndarray, samples: int, stream: str) -> np.ndarray:
    """Per-record ELBO (nats) of images `x` [N, 1, 28, 28], reconstruction averaged over `samples` draws."""
    model = load(ctx)
    generator = ctx.torch_generator(stream, "cpu")
    out, progress = [], Progress("lvae elbo", len(x), "records")
    for chunk in torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)).split(500):
        out.append(model.elbo(chunk.to(ctx.device), samples, generator).cpu())
        progress.advance(len(chunk))
    return torch.cat(out).numpy().astype(np.float64)


def reconstruct(ctx: RunContext, x: np.ndarray) -> np.ndarray:
    """σ(decoder(μ(x))): the mean reconstruction of each image (posterior mean decoded)."""
    model = load(ctx)
    with torch.no_grad():
        t = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)).to(ctx.device)
        return torch.sigmoid(model.decode(model.encode(t)[0])).cpu().numpy().astype(np.float32)
