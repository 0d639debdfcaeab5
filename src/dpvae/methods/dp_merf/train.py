"""DP-MERF training (single release, `mnist_sr_gen.py`'s way) and sampling; see `dpvae.methods.dp_merf`."""

from __future__ import annotations

import json

import numpy as np
import torch

from dpvae import randomness, samplers
from dpvae.methods.base import RunContext
from dpvae.methods.conditional import batches, device_of, num_classes, onehot, sample_labelled
from dpvae.methods.dp_merf.accounting import exact_sampler, ledger, noise_multiplier
from dpvae.models import precision
from dpvae.models.merf import MERFGenerator, embedding, rff_weights
from dpvae.paths import model_path
from dpvae.privacy import canaries
from dpvae.privacy.ledger import Ledger
from dpvae.progress import Progress

GENERATOR, MODEL_JSON = "generator.pt", "model.json"


def _generator(meta: dict) -> MERFGenerator:
    return MERFGenerator(
        tuple(meta["shape"]),
        meta["num_classes"],
        meta["code_dim"],
        meta["gen_hidden"],
        meta["gen_channels"],
        meta["kernel_size"],
    )


def train(ctx: RunContext) -> Ledger:
    p, device = ctx.params, device_of(ctx)
    x = torch.as_tensor(ctx.data.train.x, device=device)
    y = torch.as_tensor(ctx.data.train.y, device=device)
    n, classes = len(y), num_classes(ctx)
    sigma = noise_multiplier(p, ctx.epsilon, ctx.delta, n)
    w = rff_weights(p.rff_dim, int(np.prod(x.shape[1:])), p.rff_sigma, ctx.torch_generator("rff", "cpu")).to(device)
    total = torch.zeros(p.rff_dim, classes, device=device)
    total_entries = total.numel()
    release = ctx.torch_generator("release", "cpu")
    secret = randomness.is_secret(ctx.spec)
    with precision.private(ctx.precision):
        for part in batches(n, 1000):  # Σ_i φ(x_i) ⊗ onehot(y_i), then the one noisy release of the mean
            total += embedding(x[part], onehot(y[part], classes), w, reduce="sum")
        if secret:
            noisy = _exact_release(total, sigma, n, ctx.rng("exact-release"))
        else:
            noisy = canaries.release(
                total / n,
                2 * sigma / n,  # its own noise; canaries only in an audited run
                lambda shape, std: std * torch.randn(shape, generator=release).to(device),
                sensitivity=2 / n,
                name="DP-MERF mean embedding",
            )
    del x, total

    meta = {
        "shape": list(ctx.data.train.x.shape[1:]),
        "num_classes": classes,
        "code_dim": p.code_dim,
        "gen_hidden": p.gen_hidden,
        "gen_channels": list(p.gen_channels),
        "kernel_size": p.kernel_size,
        "noise_multiplier": sigma,
        "n": n,
        "rff_dim": p.rff_dim,
        "rff_sigma": p.rff_sigma,
    }
    ctx.seed_torch("generator-init")
    generator = _generator(meta).to(device)
    optimizer = torch.optim.Adam(generator.parameters(), lr=p.lr)
    schedule = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=p.lr_decay)
    codes = ctx.torch_generator("codes", str(device))
    entries = total_entries if secret else None
    spent, per_epoch = ledger(sigma, n, ctx.delta, ctx.epsilon, entries), max(1, n // p.batch_size)  # all spent
    progress = Progress("dp-merf generator (on the one release)", p.epochs * per_epoch, epsilon=lambda _: spent)
    for _ in range(p.epochs):
        for _ in range(per_epoch):
            labels = torch.randint(classes, (p.batch_size,), generator=codes, device=device)
            z = torch.randn(p.batch_size, p.code_dim, generator=codes, device=device)
            hot = onehot(labels, classes)
            with precision.forward(ctx.precision, device):  # the generator sees only the noisy release
                loss = (noisy - embedding(generator(z, hot), hot, w)).square().sum()
            optimizer.zero_grad()
            loss.float().backward()
            optimizer.step()
            progress.advance()
        schedule.step()
    torch.save(generator.state_dict(), ctx.model_dir / GENERATOR)
    (ctx.model_dir / MODEL_JSON).write_text(json.dumps(meta, indent=2))
    return spent


def _exact_release(total: torch.Tensor, sigma: float, n: int, rng: np.random.Generator) -> torch.Tensor:
    """A release's mean embedding: the sum on its grid plus the discrete Gaussian of `accounting.exact_sampler`
    (replace-one sensitivity 2 on the sum scale; from the secret stream `rng`), divided by n after the noise
    (post-processing)."""
    sampler = exact_sampler(sigma, total.numel())
    on_grid = sampler.grid * samplers.on_grid(total.double().cpu().numpy(), sampler.grid)
    noisy_sum = canaries.release(
        on_grid,
        sampler.grid * sampler.scale,  # canaries only in an audited run, at the sum's sensitivity
        lambda shape, std: samplers.gaussian_noise(shape, std, secret=True, rng=rng, grid=sampler.grid),
        sensitivity=2.0,
        name="DP-MERF mean embedding",
    )
    return torch.as_tensor(noisy_sum / n, dtype=total.dtype, device=total.device)


@torch.no_grad()
def sample(ctx: RunContext, n: int | None) -> dict[str, np.ndarray]:
    """Codes z ~ N(0, I) with class-balanced labels, through the generator in eval mode (BatchNorm statistics)."""
    device = device_of(ctx)
    model_dir = model_path(ctx.run_dir)
    meta = json.loads((model_dir / MODEL_JSON).read_text())
    generator = _generator(meta)
    generator.load_state_dict(torch.load(model_dir / GENERATOR, map_location="cpu", weights_only=True))
    generator.to(device).eval()
    return sample_labelled(ctx, n, generator, meta["code_dim"], meta["num_classes"], tuple(meta["shape"]))
