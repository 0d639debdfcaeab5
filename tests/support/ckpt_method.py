"""`ckpt-test`: a small DP-SGD MLP-VAE that checkpoints, for the fault and resume tests only.

Not a paper method and not in the package: a test registers it in a subprocess (`run_cli`) or copies this
file into a repository copy as `src/dpvae/methods/ckpt_test/__init__.py` (the registry imports every family
package there). It trains the same way the paper methods do — Poisson batches, the project's DP-SGD engine, a
ledger from the engine's mechanisms, every random stream saved in `dpvae.methods.checkpoint.Checkpoint` — and logs the
steps each process ran ("trained steps 17..40"), so that a test can tell a resumed run from a fresh one.
`step_seconds` slows each step so that a test can kill the job mid-training.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np

from dpvae.methods.base import Method, Resources, RunContext
from dpvae.methods.registry import register_method
from dpvae.params import MethodParams, param

log = logging.getLogger("dpvae.ckpt_test")


@dataclass(frozen=True)
class CkptTestParams(MethodParams):
    steps: int = param(40, "DP-SGD steps", minimum=1)
    batch_size: int = param(64, "expected (Poisson) batch size", minimum=1)
    latent_dim: int = param(2, "latent dimension", minimum=1)
    hidden: int = param(32, "hidden units", minimum=1)
    noise_multiplier: float = param(1.0, "DP-SGD noise multiplier", minimum=0)
    clip: float = param(1.0, "per-example clipping norm", exclusive_minimum=0)
    step_seconds: float = param(0.0, "sleep after each step (a test kills the job mid-training)", minimum=0)


@register_method
class CkptTest(Method):
    name = "ckpt-test"
    paper = "tests"
    private = True
    description = "tests only: a tiny DP-SGD MLP-VAE that checkpoints (fault and resume tests)"
    Params = CkptTestParams
    RESOURCES = Resources(threads=1, mem_mb=1000, runtime=5)

    def train(self, ctx: RunContext):
        import torch

        from dpvae.methods.checkpoint import Checkpoint, restore_rng, rng_state
        from dpvae.models.mlp_vae import MLPVAE
        from dpvae.privacy.dpsgd import DPSGD, poisson_sample
        from dpvae.privacy.ledger import Accounting, Ledger

        p = ctx.params
        x = torch.as_tensor(ctx.data.train.x.reshape(len(ctx.data.train.y), -1), dtype=torch.float32)  # [N, d]
        n, d = x.shape
        q = min(p.batch_size / n, 1.0)
        model = MLPVAE(d, p.latent_dim, p.hidden)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        gens = (
            ctx.torch_generator("batches", "cpu"),
            ctx.torch_generator("noise", "cpu"),
            ctx.torch_generator("reparam", "cpu"),
        )
        engine = DPSGD(
            model,
            max_grad_norm=p.clip,
            noise_multiplier=p.noise_multiplier,
            sample_rate=q,
            expected_batch_size=q * n,
            generator=gens[1],
        )
        checkpoint, start = Checkpoint(ctx), 0
        if (state := checkpoint.load()) is not None:
            model.load_state_dict(state["model"])
            opt.load_state_dict(state["optimizer"])
            restore_rng(state["rng"], *gens)
            start, engine.steps = state["step"], state["engine_steps"]
        for step in range(start, p.steps):
            batch = x[poisson_sample(n, q, gens[0])]  # [B, d]
            noise = torch.randn(len(batch), p.latent_dim, generator=gens[2])  # [B, d']
            opt.zero_grad(set_to_none=True)
            engine.step(model.loss(batch, noise))
            opt.step()
            time.sleep(p.step_seconds)
            if checkpoint.due(step) and step + 1 < p.steps:
                checkpoint.save(
                    {
                        "model": model.state_dict(),
                        "optimizer": opt.state_dict(),
                        "step": step + 1,
                        "rng": rng_state(*gens),
                        "engine_steps": engine.steps,
                    }
                )
        engine.close()
        log.info("trained steps %d..%d", start + 1, p.steps)
        torch.save(model.state_dict(), ctx.model_dir / "model.pt")
        accounting = Accounting(tuple(engine.mechanisms()), delta=ctx.delta)
        return Ledger(accounting, target_epsilon=ctx.epsilon, notes="ckpt-test (tests only)")

    def sample(self, ctx: RunContext, n: int | None) -> dict[str, np.ndarray]:
        import torch

        from dpvae.models.mlp_vae import MLPVAE

        p, train = ctx.params, ctx.data.train
        n = n or 256
        shape = train.x.shape[1:]
        model = MLPVAE(int(np.prod(shape)), p.latent_dim, p.hidden)
        model.load_state_dict(torch.load(ctx.model_dir / "model.pt", map_location="cpu"))
        with torch.no_grad():
            z = torch.randn(n, p.latent_dim, generator=ctx.torch_generator("sample", "cpu"))
            x = model.decode(z).numpy().astype(np.float32).reshape(n, *shape)
        y = ctx.rng("sample-labels").integers(int(train.y.min()), int(train.y.max()) + 1, size=n)
        return {"x": x, "y": y.astype(np.int64)}


@register_method
class CkptTestGpu(CkptTest):
    """The same, declaring that it wants a GPU (what the SLURM test submits with `device: cpu`)."""

    name = "ckpt-test-gpu"
    description = "tests only: ckpt-test declaring a GPU (its jobs ask the scheduler for one)"
    RESOURCES = Resources(threads=1, mem_mb=1000, runtime=5, gpu=True)
