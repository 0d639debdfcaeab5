"""Seconds and operator calls per optimizer step of every DP-SGD engine on the project's two VAEs.

    python benchmarks/dpsgd_step.py [--device cpu|cuda] [--steps 10] [--models mlp conv]
                                    [--engines dpsgd termwise ...] [--quick] [--clock wall|cpu] [--epoch 60000]
                                    [--profile-steps 2]

Prints the device (`# device=cpu name=...`), then one line per case:
`model=mlp engine=termwise device=cpu clock=wall sec_per_step=0.0123 ratio_to_nonprivate=1.42 ops_per_step=512
syncs_per_step=0.0` (on CUDA also `launches_per_step=... cuda_syncs_per_step=... device_ms_per_step=...`).
`ops_per_step`: aten operator calls per step in torch.profiler (every level, views included), a
device-independent proxy for kernel launches; `syncs_per_step`: host reads of tensor data (`.item()`,
`float()`, `bool()`, `torch.equal`, `nonzero`, ...: each a device synchronisation on an accelerator);
on CUDA `launches_per_step` counts kernel launches and `cuda_syncs_per_step` cudaDeviceSynchronize /
cudaStreamSynchronize / cudaEventSynchronize / cudaMemcpy calls (`dpvae.privacy.dpsgd.profiling`).
Counts come from `--profile-steps` extra steps after the timed ones. CPU timings use 2 threads
(`--threads`); CUDA timings synchronise before every clock read, and every tensor and generator of a
case is on the device.
Models: `mlp` = P3GM MLP VAE 784→1000→30, `conv` = PriVAE conv VAE (32×32, D = 50, GroupNorm).
Every step is a full one: forward, gradient, optimizer step, on a fixed batch of 256. Cases are timed
round-robin (one step of each in turn, `--steps` rounds, median) so that load from other processes
affects them alike.
Engines: `nonprivate` (plain backward), `loop` (per-example forward/backward loop, the reference code's
way), `opacus` (opacus ghost clipping), `opacus-hooks` (opacus per-sample hooks), and this project's
`dpsgd`, `termwise` (b = 16 sub-groups, MMD_DIM batch term), `micro`, `batch`, `partial` (decoder private,
encoder public with clipped mean). Batch-wise terms: α·MMD_DIM between posterior and prior samples.
Objectives differ: φ alone (nonprivate, loop, opacus, dpsgd, partial), φ + ψ on 16 sub-groups (termwise),
φ + ψ on the whole batch (micro, batch; MMD over 256² pairs is itself costly). Each private engine's
ratio is to the non-private step of its own objective; those baselines are printed as
`nonprivate`, `nonprivate-subgroup-mmd` and `nonprivate-batch-mmd`.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from dpvae.devices import device_argument, device_name
from dpvae.models.conv_vae import ConvVAE
from dpvae.models.losses import mixture_kl, mmd_dim
from dpvae.models.mlp_vae import MLPVAE
from dpvae.privacy.dpsgd import (
    DPSGD,
    BatchAggregation,
    MicroAggregation,
    OpacusDPSGD,
    TermwiseDPSGD,
    Units,
    random_groups,
)
from dpvae.privacy.dpsgd.profiling import calls_per_step

ENGINES = ("nonprivate", "loop", "opacus", "opacus-hooks", "dpsgd", "termwise", "micro", "batch", "partial")
DEFAULT_ENGINES = tuple(e for e in ENGINES if e != "opacus-hooks")
# each private engine is compared with a non-private step of the same objective
BASELINES = {"termwise": "nonprivate-subgroup-mmd", "micro": "nonprivate-batch-mmd", "batch": "nonprivate-batch-mmd"}
NUM_GROUPS, ALPHA, CLIP, SIGMA = 16, 100.0, 1.0, 1.0


@dataclass
class Workload:
    """A model, a fixed batch and its loss terms: φ per example and ψ per sub-group."""

    model: nn.Module
    batch: Tensor
    device: torch.device
    terms: Callable[[Tensor, Tensor | None, int], tuple[Tensor, Tensor]]  # (x, groups, b) -> (φ [B], ψ [b])
    decoder: list[nn.Parameter]


def mlp_workload(batch_size: int, hidden: int, device: torch.device) -> Workload:
    model = MLPVAE(784, 30, hidden).to(device)

    def terms(x: Tensor, groups: Tensor | None, b: int) -> tuple[Tensor, Tensor]:
        mu, logvar = model.encode(x)
        z = mu + torch.randn_like(mu) * (0.5 * logvar).exp()
        phi = (model.decode(z) - x).square().sum(1) + mixture_kl(mu, logvar)
        if groups is None:
            return phi, phi.new_zeros(b)
        return phi, ALPHA * mmd_dim(z, torch.randn_like(z), Units(groups, b))

    decoder = [*model.fc3.parameters(), *model.fc4.parameters()]
    return Workload(model, torch.rand(batch_size, 784, device=device), device, terms, decoder)


def conv_workload(batch_size: int, channels: int, device: torch.device) -> Workload:
    model = ConvVAE(latent_dim=50, base_channels=channels, norm="group").to(device)

    def terms(x: Tensor, groups: Tensor | None, b: int) -> tuple[Tensor, Tensor]:
        noise, prior = torch.randn(len(x), 1, 50, device=device), torch.randn(len(x), 50, device=device)
        return model.loss_terms(x, noise, prior, groups, b, alpha=0.0 if groups is None else ALPHA)

    return Workload(
        model, torch.rand(batch_size, 1, 32, 32, device=device), device, terms, list(model.decoder.parameters())
    )


def make_step(engine: str, work: Workload, compiled: bool = False) -> Callable[[], None]:  # noqa: C901 - one branch per engine
    """One full optimizer step of `engine` on the workload's batch; `compiled`: for torch.compile, a private
    engine's forward pass kept eager (the engines refuse a traced one: its layer outputs are off the loss's
    autograd path), the rest of the step traced."""
    model, x, n, device = work.model, work.batch, len(work.batch), work.device
    private = engine not in ("nonprivate", "loop") and not engine.startswith("nonprivate-")
    terms = torch.compiler.disable(work.terms) if compiled and private else work.terms
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.SGD(params, lr=1e-6)
    common = dict(noise_multiplier=SIGMA, sample_rate=n / 60000, generator=torch.Generator(device).manual_seed(0))
    whole_batch = torch.zeros(n, dtype=torch.long, device=device)
    draws = torch.Generator(device).manual_seed(1)  # sub-group labels, drawn on the device

    def phi(batch: Tensor) -> Tensor:
        return terms(batch, None, 1)[0]

    if engine == "nonprivate":

        def run() -> None:
            optimizer.zero_grad()
            phi(x).mean().backward()
    elif engine == "nonprivate-subgroup-mmd":

        def run() -> None:
            optimizer.zero_grad()
            sample, group = terms(x, random_groups(n, NUM_GROUPS, draws, device=device), NUM_GROUPS)
            (sample.mean() + group.mean()).backward()
    elif engine == "nonprivate-batch-mmd":

        def run() -> None:
            optimizer.zero_grad()
            sample, whole = terms(x, whole_batch, 1)
            (sample.mean() + whole[0]).backward()
    elif engine == "loop":

        def run() -> None:
            total = [torch.zeros_like(p) for p in params]
            for i in range(n):
                grads = torch.autograd.grad(phi(x[i : i + 1]).sum(), params)
                factor = min(1.0, CLIP / float(torch.sqrt(sum(g.square().sum() for g in grads))))
                torch._foreach_add_(total, grads, alpha=factor)
            for p, g in zip(params, total):
                p.grad = (g + torch.randn_like(g) * SIGMA * CLIP) / n
    elif engine in ("opacus", "opacus-hooks"):
        reference = OpacusDPSGD(
            model,
            max_grad_norm=CLIP,
            noise_multiplier=SIGMA,
            expected_batch_size=n,
            mode="ghost" if engine == "opacus" else "hooks",
            generator=common["generator"],
        )

        def run() -> None:
            reference.step(phi(x))
    elif engine in ("dpsgd", "partial"):
        private = work.decoder if engine == "partial" else None
        dpsgd = DPSGD(
            model,
            max_grad_norm=CLIP,
            expected_batch_size=n,
            private_params=private,
            public_max_grad_norm=CLIP if private else None,
            public_uses_private_data=bool(private),
            max_batch_size=n if private else None,
            **common,
        )

        def run() -> None:
            dpsgd.step(phi(x))
    elif engine == "termwise":
        termwise = TermwiseDPSGD(
            model, sample_clip=CLIP, batch_clip=CLIP / 10, expected_batch_size=n, num_groups=NUM_GROUPS, **common
        )

        def run() -> None:
            groups = random_groups(n, NUM_GROUPS, draws, device=device)
            termwise.step(*terms(x, groups, NUM_GROUPS), groups)
    elif engine == "micro":
        micro = MicroAggregation(model, max_grad_norm=CLIP, expected_batch_size=n, **common)

        def run() -> None:
            sample, whole = terms(x, whole_batch, 1)
            micro.step(sample, whole[0])
    elif engine == "batch":
        batch = BatchAggregation(model, max_grad_norm=CLIP, **common)

        def run() -> None:
            sample, whole = terms(x, whole_batch, 1)
            batch.step(sample.mean() + whole[0])
    else:
        raise ValueError(f"unknown engine {engine!r}; choose from {ENGINES}")

    def step() -> None:
        run()
        optimizer.step()

    return step


def seconds_per_step(
    steps: dict[str, Callable[[], None]],
    rounds: int,
    warmup: int,
    clock: Callable[[], float] = time.perf_counter,
    synchronize: Callable[[], None] = lambda: None,
) -> dict[str, float]:
    """Median seconds per step of each case, timed round-robin so that load changes hit all cases alike;
    `synchronize` (CUDA: wait for the device) runs before every clock read."""
    for step in steps.values():
        for _ in range(warmup):
            step()
    times: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(rounds):
        for name, step in steps.items():
            synchronize()
            start = clock()
            step()
            synchronize()
            times[name].append(clock() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    device_argument(parser)
    parser.add_argument("--steps", type=int, default=10, help="timed steps per case (median reported)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps first")
    parser.add_argument(
        "--profile-steps",
        type=int,
        default=2,
        help="steps per case counted by torch.profiler (after the timed ones; 0: no counts)",
    )
    parser.add_argument("--models", nargs="+", default=["mlp", "conv"], choices=["mlp", "conv"])
    parser.add_argument(
        "--engines", nargs="+", default=list(DEFAULT_ENGINES), choices=ENGINES + tuple(BASELINES.values())
    )
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--clock",
        choices=["wall", "cpu"],
        default="wall",
        help="wall seconds, or CPU seconds of this process (with --threads 1: one core's seconds, "
        "unaffected by other processes on a shared machine)",
    )
    parser.add_argument(
        "--epoch",
        type=int,
        default=0,
        metavar="N",
        help="also print seconds per epoch of N records (steps = ceil(N / batch size))",
    )
    parser.add_argument(
        "--compile",
        choices=["default", "reduce-overhead"],
        help="also time each case through torch.compile in this mode, as '<engine>+compiled' (reduce-overhead: CUDA "
        "graphs on CUDA; a private engine's forward pass stays eager); a case that does not compile prints why instead",
    )
    parser.add_argument("--quick", action="store_true", help="tiny models, batch 8, one step: a smoke test")
    args = parser.parse_args(argv)
    if args.steps < 1 or args.warmup < 0 or args.batch_size < 1 or args.profile_steps < 0:
        parser.error("--steps and --batch-size must be >= 1, --warmup and --profile-steps >= 0")
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA device is available")
    device = torch.device(args.device)
    cuda = device.type == "cuda"
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    print(f"# device={device.type} name={device_name(args.device)} torch={torch.__version__}", flush=True)
    batch_size, width, channels = (8, 16, 4) if args.quick else (args.batch_size, 1000, 32)
    steps, warmup = (1, 0) if args.quick else (args.steps, args.warmup)
    profile_steps = min(args.profile_steps, 1) if args.quick else args.profile_steps
    synchronize = torch.cuda.synchronize if cuda else (lambda: None)
    for model_name in args.models:
        baselines = {e: BASELINES.get(e, "nonprivate") for e in args.engines}
        cases = list(dict.fromkeys(["nonprivate", *baselines.values(), *args.engines]))
        make = mlp_workload if model_name == "mlp" else conv_workload
        size = width if model_name == "mlp" else channels
        step_fns = {e: make_step(e, make(batch_size, size, device)) for e in cases}
        failed: dict[str, str] = {}
        if args.compile:  # a workload of its own: a failed compilation may leave its engine half-stepped
            for e in cases:
                compiled = torch.compile(make_step(e, make(batch_size, size, device), True), mode=args.compile)
                try:
                    compiled()  # compiles
                except Exception as error:  # noqa: BLE001 - the reason is the result
                    failed[e] = f"{type(error).__name__}: {str(error).splitlines()[0][:160]}"
                else:
                    step_fns[f"{e}+compiled"] = compiled
        seconds = seconds_per_step(
            step_fns, steps, warmup, time.process_time if args.clock == "cpu" else time.perf_counter, synchronize
        )
        shown = [c for c in cases if c.startswith("nonprivate")] + [
            e for e in args.engines if not e.startswith("nonprivate")
        ]
        for engine in [name for e in shown for name in (e, f"{e}+compiled") if name in step_fns]:
            plain = engine.removesuffix("+compiled")
            baseline = BASELINES.get(plain, plain if plain.startswith("nonprivate") else "nonprivate")
            per_epoch = f" sec_per_epoch={seconds[engine] * -(-args.epoch // batch_size):.0f}" if args.epoch else ""
            counts = ""
            if profile_steps:
                calls = calls_per_step(step_fns[engine], profile_steps, cuda)
                counts = "".join(f" {key}_per_step={value:.1f}" for key, value in calls.items())
            print(
                f"model={model_name} engine={engine} device={device.type} clock={args.clock} "
                f"sec_per_step={seconds[engine]:.4f}{per_epoch} "
                f"ratio_to_nonprivate={seconds[engine] / seconds[baseline]:.2f}{counts}",
                flush=True,
            )
        for engine, reason in failed.items():
            print(f'model={model_name} engine={engine}+compiled device={device.type} compile_failed="{reason}"')


if __name__ == "__main__":
    main()
