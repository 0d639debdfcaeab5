"""DP²-VAE training (docs/papers.md §4.1, Alg. 1 and 2) and sampling; see `dpvae.methods.dp2vae`.

Stage 1 trains `chunk` encoders (each with its own decoder) at once on stacked parameters; stage 2 trains
one released decoder with the partial-model DP-SGD engine, loading the drawn subset's encoder into the
model before each step and writing its non-private Adam update back into the stack. A checkpoint after
every stage-1 chunk and every few minutes of stage 2 lets a killed run resume with identical bytes.

Stage 1 runs as its own job (`train_stage1`, into `<stage 1>/model/encoders.pt`) under the identity of
`RunContext.stage1`: the data subsample, the partition and stage 1's random streams are drawn for it, so a
run that loads those encoders and a run that trains them in-process (a spec without `stage1`, e.g. a test or
the audit) end with the same bytes. Stage 2's streams are the run's.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import torch

from dpvae import randomness
from dpvae.errors import DataError
from dpvae.methods.base import RunContext
from dpvae.methods.checkpoint import Checkpoint, restore_rng, rng_state
from dpvae.methods.conditional import compiled, device_of, disjoint_subsets, num_classes, onehot, sample_labelled
from dpvae.methods.dp2vae.accounting import dp2vae_ledger, noise_multiplier
from dpvae.models.cvae import CVAE, CVAEDecoder, stacked_loss
from dpvae.models.stacked import StackedAdam, clip_per_model, stack
from dpvae.params import CompileMode
from dpvae.paths import model_path, stage1_record
from dpvae.privacy.ledger import Ledger
from dpvae.progress import Progress

if TYPE_CHECKING:
    from dpvae.privacy.dpsgd import DPSGD

log = logging.getLogger(__name__)
DECODER, MODEL_JSON, ENCODERS = "decoder.pt", "model.json", "encoders.pt"


def _architecture(ctx: RunContext) -> dict:
    p = ctx.params
    return {
        "shape": list(ctx.data.train.x.shape[1:]),
        "num_classes": num_classes(ctx),
        "latent_dim": p.latent_dim,
        "hidden": list(p.hidden_channels),
        "decoder_norm": p.decoder_norm,
        "loss": p.loss,
    }


def _new_model(arch: dict, ctx: RunContext, stream: str) -> CVAE:
    ctx.seed_torch(stream)
    return CVAE(
        tuple(arch["shape"]),
        arch["num_classes"],
        arch["latent_dim"],
        arch["hidden"],
        arch["decoder_norm"],
        arch["loss"],
    )


def _gather(x: torch.Tensor, y: torch.Tensor, rows: torch.Tensor, classes: int) -> tuple[torch.Tensor, torch.Tensor]:
    return x[rows], onehot(y[rows], classes)


def _setup(ctx: RunContext, device: torch.device) -> tuple[dict, torch.Tensor, torch.Tensor, torch.Tensor, int]:
    """Architecture, training data, the [K, n_k] partition and B, drawn for `ctx`'s identity (pass the run's
    stage-1 context when it has one)."""
    p = ctx.params
    x = torch.as_tensor(ctx.data.train.x, device=device)
    y = torch.as_tensor(ctx.data.train.y, device=device)
    subsets = torch.as_tensor(disjoint_subsets(ctx, p.subsets), device=device)
    return _architecture(ctx), x, y, subsets, min(p.batch_size, subsets.shape[1])


def pretrain_encoders(
    ctx: RunContext,
    arch: dict,
    subsets: torch.Tensor,
    x: torch.Tensor,
    y: torch.Tensor,
    batch: int,
    checkpoint: Checkpoint,
) -> dict[str, torch.Tensor]:
    """Stage 1 (Alg. 1): K encoders, `chunk` at a time, each with a fresh decoder, T_p Adam steps on its subset
    with the batch gradients of encoder and decoder each clipped to C; returns the stacked encoder parameters.
    `ctx` draws the streams (a stage-1 context, or a run without pre-training: T_p = 0, initialisation only)."""
    p, k = ctx.params, len(subsets)
    state = checkpoint.load() or {}
    encoders: dict[str, list[torch.Tensor]] = state.get("stage1", {})
    done = state.get("stage1_done", 0)
    iters = p.pretrain_iters if p.pretrain else 0
    progress = Progress("dp2vae stage 1 (non-private encoders, never released)", k * iters, "encoder steps")
    progress.start_at(done * iters)
    while done < k:
        rows = torch.arange(done, min(k, done + p.chunk))
        template = _new_model(arch, ctx, f"stage1-init-{done}")
        models = [template] + [_new_model(arch, ctx, f"stage1-init-{done}-{i}") for i in range(1, len(rows))]
        params = {n: t.to(x.device) for n, t in stack(models).items()}
        names = list(params)
        groups = [[n for n in names if n.startswith("encoder.")], [n for n in names if n.startswith("decoder.")]]
        adam = StackedAdam(params, p.pretrain_lr)
        generator = ctx.torch_generator(f"stage1-{done}", device=str(x.device))
        for _ in range(iters):
            pick = torch.rand(len(rows), subsets.shape[1], generator=generator, device=x.device).argsort(1)[:, :batch]
            index = torch.gather(subsets[rows], 1, pick)  # [K', B]
            xb, ob = _gather(x, y, index, arch["num_classes"])
            noise = torch.randn(*index.shape, arch["latent_dim"], generator=generator, device=x.device)
            losses = stacked_loss(template, params, xb, ob, noise)  # [K', B]
            grads = dict(zip(names, torch.autograd.grad(losses.mean(1).sum(), list(params.values()))))
            clip_per_model(grads, groups, p.clip)
            adam.step(grads)
            progress.advance(len(rows))
        for n in groups[0]:
            encoders.setdefault(n, []).append(params[n].detach().cpu())
        done = int(rows[-1]) + 1
        checkpoint.save({"stage1": encoders, "stage1_done": done})
    return {n[len("encoder.") :]: torch.cat(v).to(x.device) for n, v in encoders.items()}


def train_stage1(ctx: RunContext) -> dict:
    """Stage 1 as its own job (`ctx` a stage-1 context): the stacked encoders, the partition they were trained
    on and the stage-1 key into ctx.model_dir/encoders.pt; returns a summary."""
    arch, x, y, subsets, batch = _setup(ctx, device_of(ctx))
    encoders = pretrain_encoders(ctx, arch, subsets, x, y, batch, Checkpoint(ctx))
    stacked = {n: t.cpu() for n, t in encoders.items()}
    torch.save({"key": ctx.spec.key, "subsets": subsets.cpu(), "encoders": stacked}, ctx.model_dir / ENCODERS)
    return {"architecture": arch, "subset_size": int(subsets.shape[1]), "batch_size": batch}


def load_stage1(
    stage1: RunContext, subsets: torch.Tensor, device: torch.device
) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """The encoders of the run's stage-1 job and the partition they were trained on; DataError if it is not built,
    or was built for other stage-1 settings or, in a seeded run (which draws `subsets` as stage 1 did), on another
    partition. A release's partition is secret to the stage-1 job's process: the run takes it from the file."""
    path = stage1.model_dir / ENCODERS
    if not path.is_file():
        raise DataError(f"{path}: the run's stage 1 is not built (snakemake {stage1_record(stage1.run_dir)})")
    saved = torch.load(path, map_location="cpu", weights_only=True)
    if saved.get("key") != stage1.spec.key:
        raise DataError(f"{path}: trained for stage-1 key {saved.get('key')}, this run needs {stage1.spec.key}")
    if not randomness.is_secret(stage1.spec) and not torch.equal(saved["subsets"], subsets.cpu()):
        raise DataError(f"{path}: trained on another partition of the data than this run's")
    log.info("stage 1: %d encoders loaded from %s", len(subsets), path)
    return {n: t.to(device) for n, t in saved["encoders"].items()}, saved["subsets"].to(device)


def stage2_engine(
    model: CVAE, sigma: float, subsets: int, batch: int, clip: float, generator: torch.Generator | None
) -> DPSGD:
    """Stage 2's partial-model DP-SGD engine: the decoder private (q = 1/K, clip C, noise σC on the sum), the
    encoder public but updated from the private batch without noise (A-D2), declared so that the sound ledger
    charges every per-example gradient of a step (`accounting.dp2vae_ledger`)."""
    from dpvae.privacy.dpsgd import DPSGD

    return DPSGD(
        model,
        noise_multiplier=sigma,
        sample_rate=1 / subsets,
        max_grad_norm=clip,
        expected_batch_size=batch,
        private_params=list(model.decoder.parameters()),
        public_max_grad_norm=clip,
        public_uses_private_data=True,
        max_batch_size=batch,
        generator=generator,
    )


def stage2_step(
    model: CVAE,
    engine: DPSGD,
    decoder_opt: torch.optim.Optimizer,
    encoder_adam: StackedAdam,
    encoders: dict[str, torch.Tensor],
    chosen: torch.Tensor,
    xb: torch.Tensor,
    ob: torch.Tensor,
    noise: torch.Tensor,
) -> None:
    """One stage-2 step (Alg. 2) on subset `chosen`'s batch (`chosen`: [1] on the stack's device, so the
    host never waits for it): its encoder loaded into the model, the decoder's private gradient (per-example
    clipped, noisy) and the encoder's clipped non-private one, Adam on both, the encoder's update written
    back into the stack."""
    named = dict(model.encoder.named_parameters())
    with torch.no_grad():
        for n, param in named.items():
            param.copy_(encoders[n].index_select(0, chosen)[0])
    engine.step(_forward(model, xb, ob, noise))
    decoder_opt.step()
    encoder_adam.step({n: param.grad[None] for n, param in named.items()}, rows=chosen)


@torch.compiler.disable
def _forward(model: CVAE, xb: torch.Tensor, ob: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
    """The per-example losses, never traced by torch.compile: the engine needs the layer outputs of an eager
    forward pass, on the losses' autograd path (`Call.check_unmodified`)."""
    return model.loss(xb, ob, noise)


def compiled_stage2_step(mode: CompileMode) -> Callable[..., None]:
    """`stage2_step`, or it through torch.compile in `mode` (`conditional.compiled`): the forward pass stays
    eager (`_forward`), the engine's host-side bookkeeping is never traced, so the engine's records, its noise
    stream and the ledger are the eager step's; its numbers agree with the eager step's to float rounding
    (tests/methods/test_dp2vae_compile.py)."""
    return compiled(stage2_step, mode)


def train(ctx: RunContext) -> Ledger:
    p, device = ctx.params, device_of(ctx)
    stage1 = ctx.stage1  # None without pre-training: the run initialises its encoders
    arch, x, y, subsets, batch = _setup(stage1 or ctx, device)  # subsets [K, n_k]
    k = p.subsets
    sigma = noise_multiplier(p, ctx.epsilon, ctx.delta, k, p.iters)
    checkpoint = Checkpoint(ctx)
    state = checkpoint.load()
    if state and "stage2_step" in state:
        encoders = {n: t.to(device) for n, t in state["encoders"].items()}  # name -> [K, ...]
    elif stage1 is not None and ctx.spec.stage1:
        encoders, subsets = load_stage1(stage1, subsets, device)
    else:
        encoders = pretrain_encoders(stage1 or ctx, arch, subsets, x, y, batch, checkpoint)

    # stage 2 (Alg. 2): a fresh decoder; encoder k loaded into `model.encoder` for each step
    model = _new_model(arch, ctx, "stage2-init").to(device)
    encoder_adam = StackedAdam(encoders, p.lr)
    decoder_opt = torch.optim.Adam(model.decoder.parameters(), lr=p.lr)
    draws = ctx.torch_generator("stage2-batches", device=str(device))
    noise_gen = ctx.torch_generator("stage2-noise", device=str(device))
    engine = stage2_engine(model, sigma, k, batch, p.clip, noise_gen)
    step = 0
    if state and "stage2_step" in state:
        model.decoder.load_state_dict(state["decoder"])
        decoder_opt.load_state_dict(state["decoder_opt"])
        encoder_adam.load_state_dict(
            {
                k: {n: t.to(device) for n, t in v.items()} if isinstance(v, dict) else v
                for k, v in state["encoder_adam"].items()
            }
        )
        restore_rng(state["rng"], draws, noise_gen)
        step, engine.steps = state["stage2_step"], state["engine_steps"]
    progress = Progress(
        "dp2vae stage 2 (decoder DP-SGD)",
        p.iters,
        epsilon=lambda t: dp2vae_ledger(sigma, k, t, batch, p.clip, ctx.delta, target_epsilon=ctx.epsilon),
    )
    progress.start_at(step)
    step_fn = compiled_stage2_step(p.compile)  # built afresh on resume too
    for step in range(step, p.iters):
        chosen = torch.randint(k, (1,), generator=draws, device=device)
        pick = torch.randperm(subsets.shape[1], generator=draws, device=device)[:batch]
        xb, ob = _gather(x, y, subsets.index_select(0, chosen)[0, pick], arch["num_classes"])
        noise = torch.randn(batch, arch["latent_dim"], generator=draws, device=device)
        step_fn(model, engine, decoder_opt, encoder_adam, encoders, chosen, xb, ob, noise)
        progress.advance()
        if checkpoint.due(step):
            checkpoint.save(
                {
                    "stage2_step": step + 1,
                    "engine_steps": engine.steps,
                    "decoder": model.decoder.state_dict(),
                    "decoder_opt": decoder_opt.state_dict(),
                    "encoders": encoders,
                    "encoder_adam": encoder_adam.state_dict(),
                    "rng": rng_state(draws, noise_gen),
                }
            )
    engine.close()

    torch.save(model.decoder.state_dict(), ctx.model_dir / DECODER)
    meta = {
        **arch,
        "subsets": k,
        "subset_size": int(subsets.shape[1]),
        "batch_size": batch,
        "iters": p.iters,
        "pretrain_iters": p.pretrain_iters if p.pretrain else 0,
        "noise_multiplier": sigma,
        "clip": p.clip,
        "stage1": stage1.spec.key if stage1 else None,
    }
    (ctx.model_dir / MODEL_JSON).write_text(json.dumps(meta, indent=2))
    return dp2vae_ledger(sigma, k, p.iters, batch, p.clip, ctx.delta, target_epsilon=ctx.epsilon)


def load_decoder(model_dir, device: torch.device) -> tuple[CVAEDecoder, dict]:
    meta = json.loads((model_dir / MODEL_JSON).read_text())
    decoder = CVAEDecoder(
        tuple(meta["shape"]), meta["num_classes"], meta["latent_dim"], meta["hidden"], meta["decoder_norm"]
    )
    decoder.load_state_dict(torch.load(model_dir / DECODER, map_location=device, weights_only=True))
    return decoder.to(device).eval(), meta


@torch.no_grad()
def sample(ctx: RunContext, n: int | None) -> dict[str, np.ndarray]:
    """z ~ N(0, I) decoded with class-balanced labels (0, 1, ..., K-1, 0, ...); n = None: the training-set size."""
    decoder, meta = load_decoder(model_path(ctx.run_dir), device_of(ctx))
    return sample_labelled(ctx, n, decoder, meta["latent_dim"], meta["num_classes"], tuple(meta["shape"]))
