"""GS-WGAN training (`source/pretrain.py` + `source/main.py` of DingfanChen/GS-WGAN) and sampling.

Accounting: `accounting.py`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable

import numpy as np
import torch

from dpvae.errors import ConfigError
from dpvae.methods.base import RunContext
from dpvae.methods.checkpoint import Checkpoint, restore_rng, rng_state
from dpvae.methods.conditional import balanced_labels, batches, compiled, device_of, disjoint_subsets, num_classes
from dpvae.methods.gs_wgan.accounting import authors_epsilon, authors_iters, ledger
from dpvae.models import gswgan as nets
from dpvae.models.stacked import Stacked, StackedAdam, Streams
from dpvae.paths import model_path
from dpvae.privacy import canaries
from dpvae.privacy.ledger import Ledger
from dpvae.progress import Progress

GENERATOR, MODEL_JSON = "generator.pt", "model.json"
BETAS = (0.5, 0.9)


# ------------------------------------------------------------------------------------------------ training


def clip_images(image_grad: torch.Tensor, bound: float) -> torch.Tensor:
    """Each generated image's gradient [1, B, ...] flattened to [B, D] and clipped to norm `bound` (= C/B):
    GS-WGAN's `dp_conv_hook` before its noise N(0, (2σ·bound)²)."""
    flat = image_grad.reshape(image_grad.shape[1], -1)
    return flat * (bound / (flat.norm(dim=1, keepdim=True) + 1e-10)).clamp(max=1.0)


def _real(
    x: torch.Tensor, y: torch.Tensor, subsets: torch.Tensor, rows: torch.Tensor, batch: int, streams: Streams
) -> tuple[torch.Tensor, torch.Tensor]:
    """A batch of B records of each subset in `rows` (without replacement): x [K', B, ...], y [K', B]."""
    pick = streams.rand((subsets.shape[1],)).argsort(1)[:, :batch]
    index = torch.gather(subsets[rows], 1, pick)
    return x[index], y[index]


# Eager under torch.compile: AOT autograd does not differentiate a compiled graph twice (the penalty's gradient),
# and generated images traced with the discriminator would leave the graph beside its output, off its autograd
# path (their gradient, the one the sanitiser clips, is taken with respect to them).
_gradient_penalty = torch.compiler.disable(nets.gradient_penalty)
_generator = torch.compiler.disable(nets.generator)


def _critic_loss(d: dict, du: dict, g: dict, gu: dict, real: torch.Tensor, y: torch.Tensor, p, streams) -> torch.Tensor:
    """Σ over models of WGAN-GP critic losses: D(fake) − D(real) + GP + ε-penalty·D(real)²."""
    z = nets.bernoulli_latent(streams, (y.shape[1], p.z_dim))
    with torch.no_grad():
        fake = nets.generator(g, gu, z, y)
    d_real, d_fake = nets.discriminator(d, du, real, y), nets.discriminator(d, du, fake, y)
    gp = _gradient_penalty(d, du, real, fake, y, p.gp_weight, streams)
    return (d_fake.mean(1) - d_real.mean(1) + gp + p.logit_penalty * d_real.square().mean(1)).sum()


def critic_iteration(
    d: Stacked, du: Stacked, g: Stacked, gu: Stacked, d_opt: StackedAdam, x, y, subsets, chosen, batch: int, p, streams
) -> None:
    """One WGAN-GP step of the drawn discriminator `chosen` ([1]) on a batch of its subset (non-private: the
    discriminators are never released)."""
    dk = {n: t[chosen].detach().requires_grad_(True) for n, t in d.items()}
    uk = {n: t[chosen] for n, t in du.items()}
    real, labels = _real(x, y, subsets, chosen, batch, streams)
    grads = torch.autograd.grad(_critic_loss(dk, uk, g, gu, real, labels, p, streams), list(dk.values()))
    d_opt.step(dict(zip(dk, grads)), rows=chosen)
    for n, t in uk.items():
        du[n][chosen] = t


def generator_iteration(
    d: Stacked,
    du: Stacked,
    g: Stacked,
    gu: Stacked,
    g_opt: StackedAdam,
    chosen,
    batch: int,
    classes: int,
    k: int,
    p,
    streams: Streams,
    rng: torch.Generator,
    noise: torch.Generator,
) -> None:
    """The generator step through the drawn discriminator, with sanitised gradients w.r.t. the images: each
    image's gradient clipped to C/B, Gaussian noise from `noise` (`canaries.release`, eager under compile)."""
    device, bound = chosen.device, p.clip / batch
    dk = {n: t[chosen].detach() for n, t in d.items()}
    uk = {n: t[chosen] for n, t in du.items()}
    z = nets.bernoulli_latent(streams, (batch, p.z_dim))
    labels = torch.randint(classes, (1, batch), generator=rng, device=device)
    fake = _generator(g, gu, z, labels)
    (image_grad,) = torch.autograd.grad(-nets.discriminator(dk, uk, fake, labels).mean(), fake, retain_graph=True)
    flat = clip_images(image_grad, bound)
    flat = canaries.release(  # its own noise; canaries (an audited run only) move like a record: every g_i by 2C/B
        flat,
        2 * p.noise_multiplier * bound,
        lambda shape, std: std * torch.randn(shape, generator=noise, device=device),
        sensitivity=2 * bound * math.sqrt(batch),
        sample_rate=1.0 / k,
        name="GS-WGAN sanitised image gradients",
    )
    grads = torch.autograd.grad(fake, list(g.values()), flat.reshape(fake.shape))
    g_opt.step(dict(zip(g, grads)))
    for n, t in uk.items():
        du[n][chosen] = t


def _torch_adam(params: Stacked, lr: float) -> Callable[[Stacked], None]:
    """One model's `torch.optim.Adam` (the warm start's reference optimizer), stepped with given gradients."""
    adam = torch.optim.Adam(list(params.values()), lr, betas=BETAS)

    def step(grads: Stacked) -> None:
        for name, t in params.items():
            t.grad = grads[name]
        adam.step()

    return step


def warm_start(
    ctx: RunContext,
    x,
    y,
    subsets: torch.Tensor,
    rows: list[int],
    batch: int,
    classes: int,
    progress: Progress | None = None,
) -> tuple[Stacked, Stacked]:
    """Discriminators `rows`, each with its own generator, trained `pretrain_iters` non-private iterations
    (`critic_iters` WGAN-GP steps, then a generator step) on their subsets, on stacked parameters with
    `StackedAdam` (or, not `vectorised`, `torch.optim.Adam`: the reference, which `pretrain` then runs on one
    model at a time). Model k starts from seed `pretrain-init-k` and draws from stream `pretrain-k`, so it
    learns the same in a stack of any size. `progress`: advanced by len(rows) an iteration."""
    p, device = ctx.params, x.device
    progress = progress or Progress("gs-wgan warm start", len(rows) * p.pretrain_iters, "discriminator iterations")
    models = []  # (d, du, g, gu) of each model, K' = 1
    for k in rows:
        ctx.seed_torch(f"pretrain-init-{k}")
        d, du = nets.init_discriminator(1, p.model_dim, classes)
        models.append((d, du, *nets.init_generator(1, p.z_dim, p.model_dim, classes)))
    d, du, g, gu = (
        {n: torch.cat([m[i][n] for m in models]).detach().to(device) for n in models[0][i]} for i in range(4)
    )
    for t in (*d.values(), *g.values()):
        t.requires_grad_(True)
    if p.vectorised:
        d_step, g_step = StackedAdam(d, p.lr, BETAS).step, StackedAdam(g, p.lr, BETAS).step
    else:
        d_step, g_step = _torch_adam(d, p.lr), _torch_adam(g, p.lr)
    streams = Streams([ctx.torch_generator(f"pretrain-{k}", str(device)) for k in rows])
    index = torch.as_tensor(rows, device=device)
    for _ in range(p.pretrain_iters):
        for _ in range(p.critic_iters):
            real, labels = _real(x, y, subsets, index, batch, streams)
            grads = torch.autograd.grad(_critic_loss(d, du, g, gu, real, labels, p, streams), list(d.values()))
            d_step(dict(zip(d, grads)))
        z = nets.bernoulli_latent(streams, (batch, p.z_dim))
        labels = streams.randint(classes, (batch,))
        loss = -nets.discriminator(d, du, nets.generator(g, gu, z, labels), labels).mean(1).sum()
        g_step(dict(zip(g, torch.autograd.grad(loss, list(g.values())))))
        progress.advance(len(rows))
    return {n: t.detach() for n, t in d.items()}, du


def pretrain(ctx: RunContext, x, y, subsets, batch: int, classes: int, checkpoint: Checkpoint) -> tuple[dict, dict]:
    """Warm start (`warm_start`) of all K discriminators, `chunk` at a time (one stack, or one after another
    when not `vectorised`), checkpointed after each chunk."""
    p, k = ctx.params, len(subsets)
    state = checkpoint.load() or {}
    kept, kept_u, done = state.get("pre_d", {}), state.get("pre_u", {}), state.get("pre_done", 0)
    name = "gs-wgan warm start (non-private discriminators, never released)"
    progress = Progress(name, k * p.pretrain_iters, "discriminator iterations")
    progress.start_at(done * p.pretrain_iters)
    while done < k:
        rows = list(range(done, min(k, done + p.chunk)))
        for group in [rows] if p.vectorised else [[row] for row in rows]:
            d, du = warm_start(ctx, x, y, subsets, group, batch, classes, progress)
            for name, t in d.items():
                kept.setdefault(name, []).append(t.cpu())
            for name, t in du.items():
                kept_u.setdefault(name, []).append(t.cpu())
        done = rows[-1] + 1
        checkpoint.save({"pre_d": kept, "pre_u": kept_u, "pre_done": done})
    return (
        {n: torch.cat(v).to(x.device) for n, v in kept.items()},
        {n: torch.cat(v).to(x.device) for n, v in kept_u.items()},
    )


def _iters(ctx: RunContext, k: int, batch: int) -> int:
    p = ctx.params
    if p.iters == "auto":
        return authors_iters(ctx.epsilon, p.noise_multiplier, k, batch, ctx.delta)
    return int(p.iters)


def train(ctx: RunContext) -> Ledger:
    p, device = ctx.params, device_of(ctx)
    if tuple(ctx.data.train.x.shape[1:]) != nets.IMAGE:
        raise ConfigError(
            f"gs-wgan is defined for 1x28x28 images (MNIST, Fashion-MNIST); dataset "
            f"'{ctx.spec.dataset}' has {ctx.data.train.x.shape[1:]}"
        )
    x = torch.as_tensor(ctx.data.train.x, device=device)
    y = torch.as_tensor(ctx.data.train.y, device=device)
    subsets = torch.as_tensor(disjoint_subsets(ctx, p.discriminators, "discriminators"), device=device)
    k, batch, classes = p.discriminators, min(p.batch_size, subsets.shape[1]), num_classes(ctx)
    iters = _iters(ctx, k, batch)
    checkpoint = Checkpoint(ctx)
    state = checkpoint.load()
    if state and "step" in state:
        d, du = state["d"], state["du"]
    elif p.pretrain_iters > 0:
        d, du = pretrain(ctx, x, y, subsets, batch, classes, checkpoint)
    else:
        ctx.seed_torch("discriminators-init")
        d, du = nets.init_discriminator(k, p.model_dim, classes)
    d = {n: t.detach().to(device) for n, t in d.items()}
    du = {n: t.to(device) for n, t in du.items()}
    ctx.seed_torch("generator-init")
    g, gu = nets.init_generator(1, p.z_dim, p.model_dim, classes)
    g = {n: t.to(device).requires_grad_(True) for n, t in g.items()}
    gu = {n: t.to(device) for n, t in gu.items()}
    ema = {n: t.detach().clone() for n, t in g.items()}
    d_opt, g_opt = StackedAdam(d, p.lr, BETAS), StackedAdam(g, p.lr, BETAS)
    rng = ctx.torch_generator("main", str(device))
    streams = Streams([rng])  # the drawn discriminator's draws: one model, one stream
    noise = ctx.torch_generator("sanitiser", str(device))
    step = 0
    if state and "step" in state:
        for target, saved in ((g, state["g"]), (gu, state["gu"]), (ema, state["ema"])):
            for n, t in saved.items():
                target[n] = t.to(device).requires_grad_(target is g)
        d_opt.load_state_dict(state["d_opt"])
        g_opt = StackedAdam(g, p.lr, BETAS)
        g_opt.load_state_dict(state["g_opt"])
        restore_rng(state["rng"], rng, noise)
        step = state["step"]
    progress = Progress(  # ε of the steps so far (the authors' ε, which needs autodp, only in the run's ledger)
        "gs-wgan generator (sanitised gradients)",
        iters,
        epsilon=lambda t: ledger(p.noise_multiplier, k, t, batch, p.clip, ctx.delta, ctx.epsilon, math.nan),
    )
    progress.start_at(step)
    critic, sanitised = compiled(critic_iteration, p.compile), compiled(generator_iteration, p.compile)
    for step in range(step, iters):
        chosen = torch.randint(k, (1,), generator=rng, device=device)
        for _ in range(p.critic_iters):
            critic(d, du, g, gu, d_opt, x, y, subsets, chosen, batch, p, streams)
        sanitised(d, du, g, gu, g_opt, chosen, batch, classes, k, p, streams, rng, noise)
        alpha = min(1 - 1 / (step + 1), p.ema)
        with torch.no_grad():
            for n, t in g.items():
                ema[n].mul_(alpha).add_(t.detach(), alpha=1 - alpha)
        progress.advance()
        if checkpoint.due(step):
            checkpoint.save(
                {
                    "step": step + 1,
                    "d": d,
                    "du": du,
                    "g": g,
                    "gu": gu,
                    "ema": ema,
                    "d_opt": d_opt.state_dict(),
                    "g_opt": g_opt.state_dict(),
                    "rng": rng_state(rng, noise),
                }
            )

    authors = authors_epsilon(p.noise_multiplier, k, iters, batch, ctx.delta)
    torch.save(
        {"params": {n: t.cpu() for n, t in ema.items()}, "u": {n: t.cpu() for n, t in gu.items()}},
        ctx.model_dir / GENERATOR,
    )
    meta = {
        "num_classes": classes,
        "z_dim": p.z_dim,
        "model_dim": p.model_dim,
        "discriminators": k,
        "batch_size": batch,
        "iters": iters,
        "noise_multiplier": p.noise_multiplier,
        "clip": p.clip,
        "pretrain_iters": p.pretrain_iters,
        "delta": ctx.delta,
        "epsilon_authors": authors,
        "epsilon_authors_accountant": "autodp anaRDPacct.compose_subsampled_mechanism(RDP_gaussian, 1/K, "
        "coeff=iters*batch).get_eps(delta)",
    }
    (ctx.model_dir / MODEL_JSON).write_text(json.dumps(meta, indent=2))
    return ledger(p.noise_multiplier, k, iters, batch, p.clip, ctx.delta, ctx.epsilon, authors)


@torch.no_grad()
def sample(ctx: RunContext, n: int | None) -> dict[str, np.ndarray]:
    """The moving-average generator (spectral norms re-estimated by 20 power iterations), class-balanced labels."""
    device = device_of(ctx)
    model_dir = model_path(ctx.run_dir)
    meta = json.loads((model_dir / MODEL_JSON).read_text())
    saved = torch.load(model_dir / GENERATOR, map_location=device, weights_only=True)
    params, u = saved["params"], saved["u"]
    for name in u:
        for _ in range(20):
            nets.spectral(params, u, name, update=True)
    n = len(ctx.data.train.y) if n is None else n
    y = balanced_labels(n, meta["num_classes"])
    rng = ctx.torch_generator("sample", str(device))
    out, progress = np.empty((n, *nets.IMAGE), dtype=np.float32), Progress("sampling", n, "records")
    for part in batches(n, 500):
        labels = torch.as_tensor(y[part], device=device)[None]
        z = nets.bernoulli_latent(Streams([rng]), (labels.shape[1], meta["z_dim"]))
        out[part] = nets.generator(params, u, z, labels, update=False)[0].cpu().numpy()
        progress.advance(labels.shape[1])
    return {"x": out, "y": y}
