"""DP²-VAE: stage 1 vectorised (stacked) vs one encoder at a time, and a stage-2 private step vs a non-private one.

    python benchmarks/dp2vae_stage1.py [--device cpu|cuda] [--widths 8,8 16,8 64,32] [--batch 32] [--encoders 20]
                                       [--chunk 20] [--iters 3] [--steps 10] [--repeats 3] [--threads 2] [--quick]
                                       [--parts stage1 stage2] [--compile default|reduce-overhead] [--clock wall|cpu]

stage 1: `--encoders` K models (encoder + its own decoder, docs/papers.md §4.2 CVAE on 28×28 MNIST-shaped data),
`--iters` Adam steps each on batches of `--batch`, batch gradients of encoder and decoder clipped to C = 1
separately (Alg. 1). "loop" trains one `CVAE` after the other with torch.optim.Adam and clip_grad_norm_ (the
reference way); "vectorised" trains `--chunk` of them at a time on stacked parameters (`stacked_loss`,
`clip_per_model`, `StackedAdam`), as `dpvae.methods.dp2vae.train.pretrain_encoders` does. One line per width:
`stage1 width=16,8 ... loop_enc_per_s=… vectorised_enc_per_s=… ratio=…`.

stage 2: seconds per step of the project's private decoder step (`impl.dp2vae.stage2_step`: subset k's encoder
loaded from a stack of K, per-example clipped noisy decoder gradient from the partial-model DP-SGD engine,
clipped non-private encoder update, Adam on both) against a non-private step of the same model (a second
`CVAE` with the same weights: mean loss, backward, Adam on all parameters), and their ratio. One line per
width: `stage2 width=512,256 batch=32 ... private_s_per_step=… nonprivate_s_per_step=… ratio=…`, then FLOPs per
step (torch.utils.flop_counter, the eager steps: a compiled step does the same arithmetic) and aten operator
calls per step (torch.profiler, every level; on CUDA also kernel launches: `dpvae.privacy.dpsgd.profiling`).
`--compile MODE` adds the private step as DP²-VAE's `compile` parameter runs it
(`impl.dp2vae.compiled_stage2_step`: torch.compile in MODE, reduce-overhead = CUDA graphs on CUDA) on a copy of
the same state: `compiled_s_per_step=… compiled_ratio=…` (to the eager private step) and `compile_s=…` (wall
seconds of its first call, the compilation; not timed in the steps).

Timing: the paths alternate, `--repeats` times, median; `--warmup` untimed steps first; on CUDA every
timed region starts and ends with `torch.cuda.synchronize()`. Every tensor and generator lives on `--device`.
`--clock cpu` times with this process's CPU seconds (one thread: one core's seconds, unaffected by other
processes on a shared machine). `--quick`: a CPU check in well under a minute (widths 8,8, K = 8, chunk 4,
2 iterations, 3 steps, 1 repeat, 1 thread: on a 2-core machine shared with other jobs, 2 OpenMP threads can
run 40× slower than 1).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch
from torch.utils.flop_counter import FlopCounterMode

from dpvae.devices import device_argument, device_name, synchronize
from dpvae.methods.dp2vae.train import compiled_stage2_step, stage2_engine, stage2_step
from dpvae.models.cvae import CVAE, stacked_loss
from dpvae.models.stacked import StackedAdam, clip_per_model, stack
from dpvae.privacy.dpsgd.profiling import calls_per_step

SHAPE, CLASSES, LATENT, CLIP, SIGMA = (1, 28, 28), 10, 8, 1.0, 1.0
QUICK = {"widths": ["8,8"], "encoders": 8, "chunk": 4, "iters": 2, "steps": 3, "warmup": 1, "repeats": 1, "threads": 1}


CLOCK = {"wall": time.perf_counter, "cpu": time.process_time}
clock = time.perf_counter


def timed(run: Callable[[], None], device: torch.device) -> float:
    """Seconds of `run()` (`--clock`), synchronised on CUDA."""
    synchronize(str(device))
    started = clock()
    run()
    synchronize(str(device))
    return clock() - started


def data(
    shape: tuple[int, ...], batch: int, device: torch.device, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Images in [0, 1] [*shape, B, C, H, W], one-hot labels [*shape, B, classes], noise [*shape, B, D]."""
    x = torch.rand(*shape, batch, *SHAPE, generator=generator, device=device)
    labels = torch.randint(CLASSES, (*shape, batch), generator=generator, device=device)
    onehot = torch.nn.functional.one_hot(labels, CLASSES).float()
    return x, onehot, torch.randn(*shape, batch, LATENT, generator=generator, device=device)


# ------------------------------------------------------------------------------------------------- stage 1


def loop(models: list[CVAE], batches) -> None:
    x, onehot, noise = batches
    for i, model in enumerate(models):
        optimizer = torch.optim.Adam(model.parameters(), 1e-4)
        for t in range(x.shape[0]):
            optimizer.zero_grad()
            model.loss(x[t, i], onehot[t, i], noise[t, i]).mean().backward()
            torch.nn.utils.clip_grad_norm_(model.encoder.parameters(), CLIP)
            torch.nn.utils.clip_grad_norm_(model.decoder.parameters(), CLIP)
            optimizer.step()


def vectorised(models: list[CVAE], batches, chunk: int) -> None:
    x, onehot, noise = batches
    for start in range(0, len(models), chunk):
        rows = slice(start, start + chunk)
        params = stack(models[rows])
        names = list(params)
        groups = [[n for n in names if n.startswith("encoder.")], [n for n in names if n.startswith("decoder.")]]
        adam = StackedAdam(params, 1e-4)
        for t in range(x.shape[0]):
            losses = stacked_loss(models[0], params, x[t, rows], onehot[t, rows], noise[t, rows])
            grads = dict(zip(names, torch.autograd.grad(losses.mean(1).sum(), list(params.values()))))
            clip_per_model(grads, groups, CLIP)
            adam.step(grads)


def bench_stage1(args: argparse.Namespace, hidden: list[int], device: torch.device) -> str:
    generator = torch.Generator(device=device).manual_seed(0)
    batches = data((args.iters, args.encoders), args.batch, device, generator)
    torch.manual_seed(0)
    models = [CVAE(SHAPE, CLASSES, LATENT, hidden).to(device) for _ in range(args.encoders)]
    paths = {"loop": loop, "vectorised": lambda m, b: vectorised(m, b, args.chunk)}
    times: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(args.repeats):
        for name, run in paths.items():
            fresh = [CVAE(SHAPE, CLASSES, LATENT, hidden).to(device) for _ in range(args.encoders)]
            for model, source in zip(fresh, models):
                model.load_state_dict(source.state_dict())
            times[name].append(timed(lambda: run(fresh, batches), device))
    rate = {k: args.encoders / statistics.median(v) for k, v in times.items()}
    return (
        f"stage1 width={','.join(map(str, hidden))} encoders={args.encoders} chunk={args.chunk} iters={args.iters} "
        f"batch={args.batch} loop_enc_per_s={rate['loop']:.3f} vectorised_enc_per_s={rate['vectorised']:.3f} "
        f"ratio={rate['vectorised'] / rate['loop']:.2f}"
    )


# ------------------------------------------------------------------------------------------------- stage 2


class Stage2:
    """A private stage-2 setup: the model, K stacked encoders (copies of its encoder: their values do not change
    the cost), updated one row per step, its engine and optimizers."""

    def __init__(self, source: CVAE, hidden: list[int], encoders: int, batch: int, device: torch.device) -> None:
        self.model = CVAE(SHAPE, CLASSES, LATENT, hidden).to(device)
        self.model.load_state_dict(source.state_dict())
        self.encoders = {
            n: p.detach()[None].repeat(encoders, *([1] * p.dim())) for n, p in self.model.encoder.named_parameters()
        }
        self.encoder_adam = StackedAdam(self.encoders, 1e-4)
        self.decoder_opt = torch.optim.Adam(self.model.decoder.parameters(), lr=1e-4)
        noise = torch.Generator(device=device).manual_seed(1)
        self.engine = stage2_engine(self.model, SIGMA, encoders, batch, CLIP, noise)

    def step(self, fn: Callable[..., None], chosen, x, onehot, noise) -> None:
        fn(self.model, self.engine, self.decoder_opt, self.encoder_adam, self.encoders, chosen, x, onehot, noise)


def flops(run: Callable[[], None]) -> int:
    """Floating-point operations of one call of `run` (torch.utils.flop_counter: matmuls and convolutions)."""
    with FlopCounterMode(display=False) as counter:
        run()
    return counter.get_total_flops()


def bench_stage2(args: argparse.Namespace, hidden: list[int], device: torch.device) -> str:
    torch.manual_seed(0)
    source = CVAE(SHAPE, CLASSES, LATENT, hidden).to(device)
    private = Stage2(source, hidden, args.encoders, args.batch, device)
    public = CVAE(SHAPE, CLASSES, LATENT, hidden).to(device)
    public.load_state_dict(source.state_dict())
    adam = torch.optim.Adam(public.parameters(), lr=1e-4)
    generator = torch.Generator(device=device).manual_seed(0)
    chosen = torch.randint(args.encoders, (args.warmup + args.steps, 1), generator=torch.Generator().manual_seed(2))
    chosen = chosen.to(device)
    xs, onehots, noises = data((args.warmup + args.steps,), args.batch, device, generator)

    def private_steps(steps: range) -> None:
        for t in steps:
            private.step(stage2_step, chosen[t], xs[t], onehots[t], noises[t])

    def public_steps(steps: range) -> None:
        for t in steps:
            adam.zero_grad()
            public.loss(xs[t], onehots[t], noises[t]).mean().backward()
            adam.step()

    paths = {"private": private_steps, "nonprivate": public_steps}
    compiled_line = ""
    if args.compile:
        compiled = Stage2(source, hidden, args.encoders, args.batch, device)
        fn = compiled_stage2_step(args.compile)
        started = time.perf_counter()  # wall seconds: the compiler works in subprocesses too
        compiled.step(fn, chosen[0], xs[0], onehots[0], noises[0])
        synchronize(str(device))
        compile_s = time.perf_counter() - started

        def compiled_steps(steps: range) -> None:
            for t in steps:
                compiled.step(fn, chosen[t], xs[t], onehots[t], noises[t])

        paths["compiled"] = compiled_steps
    warm, measured = range(args.warmup), range(args.warmup, args.warmup + args.steps)
    for run in paths.values():
        run(warm)
    times: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(args.repeats):
        for name, run in paths.items():
            times[name].append(timed(lambda: run(measured), device) / args.steps)
    per_step = {k: statistics.median(v) for k, v in times.items()}
    one = range(args.warmup, args.warmup + 1)
    counts = {name: calls_per_step(lambda run=run: run(one), 1, device.type == "cuda") for name, run in paths.items()}
    work = {
        name: flops(lambda run=run: run(one))
        for name, run in (("private", private_steps), ("nonprivate", public_steps))
    }
    if args.compile:
        compiled.engine.close()
        compiled_line = (
            f" compiled={args.compile} compiled_s_per_step={per_step['compiled']:.5f} "
            f"compiled_ratio={per_step['compiled'] / per_step['private']:.2f} compile_s={compile_s:.1f}"
        )
    private.engine.close()
    calls = "".join(f" {name}_{key}_per_step={value:.0f}" for name, c in counts.items() for key, value in c.items())
    return (
        f"stage2 width={','.join(map(str, hidden))} batch={args.batch} encoders={args.encoders} steps={args.steps} "
        f"clock={args.clock} private_s_per_step={per_step['private']:.5f} "
        f"nonprivate_s_per_step={per_step['nonprivate']:.5f} ratio={per_step['private'] / per_step['nonprivate']:.2f}"
        f"{compiled_line} private_flops_per_step={work['private']} nonprivate_flops_per_step={work['nonprivate']}"
        f"{calls}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    device_argument(parser)
    parser.add_argument("--parts", nargs="+", choices=["stage1", "stage2"], default=["stage1", "stage2"])
    parser.add_argument("--widths", nargs="+", default=["8,8", "16,8", "64,32"], help="conv channels, e.g. 512,256")
    parser.add_argument("--batch", type=int, default=32, help="B, records per step")
    parser.add_argument("--encoders", type=int, default=20, help="K: encoders trained (stage 1) / stacked (stage 2)")
    parser.add_argument("--chunk", type=int, default=20, help="stage-1 encoders vectorised at once")
    parser.add_argument("--iters", type=int, default=3, help="stage-1 Adam steps per encoder")
    parser.add_argument("--steps", type=int, default=10, help="timed stage-2 steps per repeat")
    parser.add_argument("--warmup", type=int, default=3, help="untimed stage-2 steps first")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--compile",
        choices=["default", "reduce-overhead"],
        help="also time the stage-2 step through torch.compile in this mode (DP²-VAE's `compile` parameter)",
    )
    parser.add_argument("--clock", choices=sorted(CLOCK), default="wall", help="wall seconds or this process's CPU")
    parser.add_argument("--quick", action="store_true", help="a CPU check in well under a minute")
    args = parser.parse_args()
    global clock
    clock = CLOCK[args.clock]
    if args.quick:
        for key, value in QUICK.items():
            setattr(args, key, value)
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA device here")
    device = torch.device(args.device)
    torch.set_num_threads(args.threads)
    print(
        f"device={device_name(args.device)} torch={torch.__version__} threads={args.threads} clock={args.clock}",
        flush=True,
    )
    for width in args.widths:
        hidden = [int(h) for h in width.split(",")]
        for part, bench in (("stage1", bench_stage1), ("stage2", bench_stage2)):
            if part in args.parts:
                print(bench(args, hidden, device), flush=True)


if __name__ == "__main__":
    main()
