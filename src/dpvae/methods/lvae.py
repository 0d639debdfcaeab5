"""LVAE (Groß & Wunder; PAPERS.md §2): one conv VAE on binarised MNIST, three ways of training it.

* `constraint: none`, variant not private  — the plain VAE (Fig. 1);
* `constraint: none`, variant private      — VAE-DPSGD: standard DP-SGD (per-example clip C, Poisson
  sampling at q = B/N, σ calibrated by the RDP accountant to the run's target (ε, δ)) (Fig. 2);
* `constraint: gradient_penalty`           — LVAE: the negative ELBO plus λ·mean_z (‖J(z)‖ − L)² on the
  decoder's Jacobian at probe points (Fig. 3); `spectral_norm` — the alternative with every decoder layer
  divided by its operator norm and scaled by L^(1/5).

The LVAE variants are not private in the workflow's sense: their record (`model/privacy_claim.json`) is
the paper's analytic claim with its violated assumptions, never a ledger. The method also offers what the
white-box attacks and the outlier metric need: per-record ELBOs and reconstructions (`elbo`, `reconstruct`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from dpvae.errors import ConfigError
from dpvae.methods.base import Method, Resources, RunContext
from dpvae.methods.registry import register_method
from dpvae.models.precision import PRECISIONS
from dpvae.params import MethodParams, param

MODEL_FILE = "model.pt"
SPEC_FILE = "model.json"
DPSGD_NOTES = (
    "VAE-DPSGD (LVAE Fig. 2): the paper gives no DP-SGD parameters (A-L3); C, B and epochs come from the "
    "configuration and sigma is calibrated by RDP (add/remove-one, improved conversion) to the target "
    "epsilon over T = ceil(epochs N / B) steps of Poisson sampling at q = B/N, which is how batches are drawn. "
    "paper (headline): add/remove-one RDP, improved conversion - a bound for the standard DP-SGD engine, whose "
    "per-example clipping tests/privacy/test_soundness.py checks; sound: the same record under replace-one "
    "adjacency (Mironov 2017, Prop. 11)"
)


@dataclass(frozen=True)
class LVAEParams(MethodParams):
    """LVAE's conv VAE on binarised MNIST (PAPERS.md 2.1); DP-SGD when the variant is private."""

    constraint: Literal["none", "gradient_penalty", "spectral_norm"] = param("none", "Lipschitz constraint of the decoder")
    latent_dim: int = param(16, "latent dimension", minimum=1)
    epochs: float = param(30, "passes over the training set", minimum=0)
    batch_size: int = param(256, "records per (expected) batch", minimum=1)
    optimizer: Literal["adam", "sgd"] = param("adam", "optimizer")
    lr: float = param(0.001, "learning rate", exclusive_minimum=0)
    clip: float = param(1.0, "DP-SGD per-example clipping norm", exclusive_minimum=0)
    noise_multiplier: float | Literal["auto"] = param("auto", "DP-SGD sigma; auto = calibrated to the target epsilon")
    lipschitz: float = param(1.0, "L: Lipschitz constant of the decoder's logit map", exclusive_minimum=0)
    gp_weight: float = param(10.0, "lambda: weight of the gradient penalty", minimum=0)
    gp_probes: Literal["prior", "posterior", "interpolate"] = param("prior", "where the gradient penalty probes z")
    gp_points: int = param(32, "probe points of the gradient penalty per step", minimum=1)
    gp_norm: Literal["spectral", "projection"] = param(
        "spectral", "Jacobian norm penalised: spectral (power iteration) or along one random direction")
    gp_power_iterations: int = param(2, "power iterations per probe for the spectral norm", minimum=0)
    gp_sided: Literal["two", "one"] = param("two", "(||J||-L)^2 as WGAN-GP, or only max(0, ||J||-L)^2")
    lipschitz_probes: int = param(256, "prior probes at which the trained decoder's Jacobian norm is measured", minimum=1)


@register_method
class LVAE(Method):
    name = "lvae"
    paper = "lvae"
    private = True
    description = "LVAE conv VAE: plain, DP-SGD, or Lipschitz-constrained decoder"
    Params = LVAEParams
    RESOURCES = Resources(threads=2, mem_mb=3000, runtime=120)
    precisions = PRECISIONS

    def resources(self, params: MethodParams, dataset: str) -> Resources:
        """About 4 CPU-minutes per epoch of 10,000 images (plus a third for the gradient penalty)."""
        n = params.max_train or 10_000
        factor = 1.4 if params.constraint == "gradient_penalty" else 1.0
        return Resources(threads=2, mem_mb=3000, runtime=max(10, math.ceil(5 * params.epochs * n / 10_000 * factor)))

    # -- training ----------------------------------------------------------------------------------

    def train(self, ctx: RunContext) -> Any:
        import torch

        from dpvae.methods.checkpoint import Checkpoint, restore_rng, rng_state
        from dpvae.models import precision
        from dpvae.models.lvae_vae import LVAEConvVAE

        p: LVAEParams = ctx.params
        private = bool(ctx.spec["private"])
        if private and p.constraint != "none":
            raise ConfigError(f"variants.{ctx.spec['variant']}.params.constraint: {p.constraint!r} with DP-SGD is "
                              "not supported (the gradient penalty and the power iteration are not per-example "
                              "terms); use constraint: none for the private variant")
        x = torch.from_numpy(ctx.data.train.x).to(ctx.device)
        n = len(x)
        model = LVAEConvVAE(p.latent_dim, spectral_norm=p.constraint == "spectral_norm",
                            lipschitz=p.lipschitz).to(ctx.device)
        optimizer = (torch.optim.Adam if p.optimizer == "adam" else torch.optim.SGD)(model.parameters(), lr=p.lr)
        per_epoch = math.ceil(n / p.batch_size)
        steps = math.ceil(p.epochs * n / p.batch_size) if private else math.ceil(p.epochs * per_epoch)
        batches = ctx.torch_generator("batches", "cpu")      # batches, reparameterisation, probes
        engine = self._engine(ctx, model, n, steps) if private else None
        streams = [batches] + ([engine.generator] if engine else [])

        checkpoint, start = Checkpoint(ctx), 0
        if (state := checkpoint.load()) is not None:
            model.load_state_dict(state["model"])
            optimizer.load_state_dict(state["optimizer"])
            restore_rng(state["rng"], *streams)
            start = state["step"]
            if engine:
                engine.steps = state["engine_steps"]
        model.train()
        for step in range(start, steps):
            if engine:
                from dpvae.privacy.dpsgd import poisson_sample

                idx = poisson_sample(n, p.batch_size / n, batches)
            else:
                epoch, within = divmod(step, per_epoch)
                order = torch.randperm(n, generator=ctx.torch_generator(f"epoch-{epoch}", "cpu"))
                idx = order[within * p.batch_size:(within + 1) * p.batch_size]
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
                    loss = loss + p.gp_weight * self._penalty(model, p, batch, batches)
                loss.backward()
            optimizer.step()
            if checkpoint.due(step):
                checkpoint.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step + 1,
                                 "rng": rng_state(*streams), "engine_steps": engine.steps if engine else 0})
        model.eval()
        ctx.model_dir.mkdir(parents=True, exist_ok=True)
        torch.save(model.state_dict(), ctx.model_dir / MODEL_FILE)
        (ctx.model_dir / SPEC_FILE).write_text(json.dumps(
            {"latent_dim": p.latent_dim, "constraint": p.constraint, "lipschitz": p.lipschitz, "steps": steps,
             "n_train": n}, indent=2))
        if p.constraint != "none":
            self._write_claim(ctx, model, p)
        if engine:
            engine.close()
            return self._ledger(ctx, engine)
        return None

    def _engine(self, ctx: RunContext, model: Any, n: int, steps: int) -> Any:
        from dpvae.privacy.budget import StepBudget
        from dpvae.privacy.dpsgd import DPSGD

        p: LVAEParams = ctx.params
        q = p.batch_size / n
        sigma = self.noise_multiplier(ctx, n, steps)
        budget = StepBudget(lambda t: self._accounting(ctx, sigma, q, t).epsilon, ctx.epsilon)
        return DPSGD(model, max_grad_norm=p.clip, noise_multiplier=sigma, sample_rate=q,
                     expected_batch_size=p.batch_size, generator=ctx.torch_generator("dp-noise"), budget=budget)

    def noise_multiplier(self, ctx: RunContext, n: int, steps: int) -> float:
        """σ: the configured one, or the smallest found with ε(σ) ≤ target over `steps` steps (auto)."""
        from dpvae.privacy.accounting import calibrate_noise

        p: LVAEParams = ctx.params
        if p.noise_multiplier != "auto":
            return float(p.noise_multiplier)
        q = p.batch_size / n
        sigma = calibrate_noise(ctx.epsilon, ctx.delta, q, steps)
        while self._accounting(ctx, sigma, q, steps).epsilon > ctx.epsilon:   # round up past the root
            sigma *= 1 + 1e-9
        return sigma

    @staticmethod
    def _accounting(ctx: RunContext, sigma: float, q: float, steps: int) -> Any:
        from dpvae.privacy.ledger import Accounting, Mechanism

        mechanism = Mechanism("DP-SGD (per-example clip, Poisson sampling)", sigma, q, steps, ctx.params.clip)
        return Accounting((mechanism,), ctx.delta, adjacency="add/remove-one", accountant="rdp",
                          conversion="improved")

    def _ledger(self, ctx: RunContext, engine: Any) -> Any:
        """paper: standard DP-SGD's add/remove-one RDP (the headline; the paper names no accountant, A-L3);
        sound: replace-one (a replaced record moves the clipped sum by up to 2C; Mironov 2017, Prop. 11)."""
        from dpvae.methods.dp_vae import dpsgd_ledger

        record = self._accounting(ctx, engine.noise_multiplier, engine.sample_rate, engine.steps).mechanisms[0]
        return dpsgd_ledger(record, ctx.delta, ctx.epsilon, DPSGD_NOTES)

    @staticmethod
    def _penalty(model: Any, p: LVAEParams, batch: Any, generator: Any) -> Any:
        """mean over probes of (‖J(z)‖ − L)² (or its one-sided form) — WGAN-GP's penalty on the decoder."""
        import torch

        from dpvae.models.lvae_vae import jacobian_norm_estimate

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

    def _write_claim(self, ctx: RunContext, model: Any, p: LVAEParams) -> None:
        import torch

        from dpvae.methods.lvae_claim import CLAIM_FILE, lipschitz_claim
        from dpvae.models.lvae_vae import decoder_jacobian_norms

        generator = ctx.torch_generator("lipschitz-probes", "cpu")
        z = torch.randn(p.lipschitz_probes, p.latent_dim, generator=generator).to(ctx.device)
        norms = torch.cat([decoder_jacobian_norms(model.decoder, chunk) for chunk in z.split(64)]).cpu().numpy()
        measured = {"probes": int(len(norms)), "norm": "spectral norm of the logit map's Jacobian at z ~ N(0, I)",
                    "max": float(norms.max()), "median": float(np.median(norms)), "mean": float(norms.mean())}
        radius = float(np.sqrt((ctx.data.train.x.reshape(len(ctx.data.train.x), -1) ** 2).sum(1)).max())
        claim = lipschitz_claim(lipschitz=p.lipschitz, latent_dim=p.latent_dim, delta=ctx.delta,
                                data_radius=radius, constraint=p.constraint, measured=measured)
        (ctx.model_dir / CLAIM_FILE).write_text(json.dumps(claim, indent=2))

    # -- using the trained model -------------------------------------------------------------------

    def load(self, ctx: RunContext, model_dir: Any = None) -> Any:
        """The trained network (eval mode, on the run's device)."""
        import torch

        from dpvae.models.lvae_vae import LVAEConvVAE

        directory = model_dir or ctx.run_dir / "model"
        spec = json.loads((directory / SPEC_FILE).read_text())
        model = LVAEConvVAE(spec["latent_dim"], spectral_norm=spec["constraint"] == "spectral_norm",
                            lipschitz=spec["lipschitz"])
        model.load_state_dict(torch.load(directory / MODEL_FILE, map_location="cpu", weights_only=True))
        return model.to(ctx.device, memory_format=torch.channels_last).eval()   # ~2x faster ConvT on CPU

    def sample(self, ctx: RunContext, n: int | None) -> dict[str, np.ndarray]:
        """`n` images (default: as many as training records): Bernoulli means σ(decoder(z)), z ~ N(0, I).

        The model is unconditional: every label is 0.
        """
        import torch

        model = self.load(ctx)
        n = len(ctx.data.train.y) if n is None else int(n)
        generator = ctx.torch_generator("sample", "cpu")
        z = torch.randn(n, model.latent_dim, generator=generator)
        x = np.zeros((n, 1, 28, 28), dtype=np.float32)
        with torch.no_grad():
            for start in range(0, n, 1000):
                x[start:start + 1000] = torch.sigmoid(model.decode(z[start:start + 1000].to(ctx.device))).cpu().numpy()
        return {"x": x, "y": np.zeros(n, dtype=np.int64)}

    def elbo(self, ctx: RunContext, x: np.ndarray, samples: int, stream: str) -> np.ndarray:
        """Per-record ELBO (nats) of images `x` [N, 1, 28, 28], reconstruction averaged over `samples` draws."""
        import torch

        model = self.load(ctx)
        generator = ctx.torch_generator(stream, "cpu")
        out = []
        for chunk in torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)).split(500):
            out.append(model.elbo(chunk.to(ctx.device), samples, generator).cpu())
        return torch.cat(out).numpy().astype(np.float64)

    def reconstruct(self, ctx: RunContext, x: np.ndarray) -> np.ndarray:
        """σ(decoder(μ(x))): the mean reconstruction of each image (posterior mean decoded)."""
        import torch

        model = self.load(ctx)
        with torch.no_grad():
            t = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)).to(ctx.device)
            return torch.sigmoid(model.decode(model.encode(t)[0])).cpu().numpy().astype(np.float32)
