"""GS-WGAN main phase: seconds per generator iteration, eager vs through torch.compile (the `compile` parameter).

    python benchmarks/gswgan_main.py [--device cpu|cuda] [--discriminators 20] [--model-dim 8] [--batch 32]
                                     [--critic-iters 5] [--steps 5] [--warmup 2] [--repeats 3] [--threads 1]
                                     [--compile default|reduce-overhead] [--clock wall|cpu]

One iteration is what `dpvae.methods.gs_wgan.train.train` runs per generator step: `--critic-iters` WGAN-GP steps
of the drawn discriminator (`critic_iteration`) and the sanitised generator step (`generator_iteration`: each
image's gradient clipped to C/B, Gaussian noise), on random 28×28 images. "eager" runs the two functions as they
are, "compiled" as `compile: MODE` runs them (`conditional.compiled`), each on its own copy of the same state.
Prints a `device=…` line, then `gswgan_main … eager_s_per_iter=… compiled_s_per_iter=… ratio=… compile_s=…
flops_per_iter=…` (FLOPs: torch.utils.flop_counter on an eager iteration; the compiled one does the same
arithmetic; compile_s: wall seconds of the first compiled iteration). Timing: the paths alternate `--repeats`
times, median; the device synchronised before every clock read.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch
from torch.utils.flop_counter import FlopCounterMode

from dpvae.devices import device_argument, device_name, synchronize
from dpvae.methods.conditional import compiled
from dpvae.methods.gs_wgan import GSWGANParams
from dpvae.methods.gs_wgan.train import BETAS, critic_iteration, generator_iteration
from dpvae.models import gswgan as nets
from dpvae.models.stacked import StackedAdam, Streams

CLASSES = 10


class State:
    """K discriminators, one generator, their Adams and the random streams: one copy per path."""

    def __init__(self, args: argparse.Namespace, p: GSWGANParams, device: torch.device) -> None:
        torch.manual_seed(0)
        d, du = nets.init_discriminator(args.discriminators, p.model_dim, CLASSES)
        g, gu = nets.init_generator(1, p.z_dim, p.model_dim, CLASSES)
        self.d = {n: t.detach().to(device) for n, t in d.items()}
        self.du = {n: t.to(device) for n, t in du.items()}
        self.g = {n: t.to(device).requires_grad_(True) for n, t in g.items()}
        self.gu = {n: t.to(device) for n, t in gu.items()}
        self.d_opt, self.g_opt = StackedAdam(self.d, p.lr, BETAS), StackedAdam(self.g, p.lr, BETAS)
        self.rng = torch.Generator(device).manual_seed(1)
        self.streams, self.noise = Streams([self.rng]), torch.Generator(device).manual_seed(2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    device_argument(parser)
    parser.add_argument("--discriminators", type=int, default=20, help="K")
    parser.add_argument("--model-dim", type=int, default=8)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--critic-iters", type=int, default=5)
    parser.add_argument("--steps", type=int, default=5, help="timed iterations per repeat")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--compile", choices=["default", "reduce-overhead"], default="default")
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall")
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA device here")
    device = torch.device(args.device)
    torch.set_num_threads(args.threads)
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    print(f"device={device_name(args.device)} torch={torch.__version__} threads={args.threads}", flush=True)
    p = GSWGANParams.parse({"model_dim": args.model_dim, "critic_iters": args.critic_iters})
    k, batch = args.discriminators, args.batch
    n = k * 2 * batch
    data = torch.Generator(device).manual_seed(0)
    x = torch.rand(n, *nets.IMAGE, generator=data, device=device)
    y = torch.randint(CLASSES, (n,), generator=data, device=device)
    subsets = torch.randperm(n, generator=data, device=device).view(k, -1)

    def iteration(state: State, critic: Callable[..., None], sanitised: Callable[..., None]) -> None:
        s = state
        chosen = torch.randint(k, (1,), generator=s.rng, device=device)
        for _ in range(p.critic_iters):
            critic(s.d, s.du, s.g, s.gu, s.d_opt, x, y, subsets, chosen, batch, p, s.streams)
        sanitised(s.d, s.du, s.g, s.gu, s.g_opt, chosen, batch, CLASSES, k, p, s.streams, s.rng, s.noise)

    eager_state, compiled_state = State(args, p, device), State(args, p, device)
    fns = (compiled(critic_iteration, args.compile), compiled(generator_iteration, args.compile))
    paths = {
        "eager": lambda: iteration(eager_state, critic_iteration, generator_iteration),
        "compiled": lambda: iteration(compiled_state, *fns),
    }
    started = time.perf_counter()
    paths["compiled"]()
    synchronize(args.device)
    compile_s = time.perf_counter() - started
    for run in paths.values():
        for _ in range(args.warmup):
            run()
    times: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(args.repeats):
        for name, run in paths.items():
            synchronize(args.device)
            start = clock()
            for _ in range(args.steps):
                run()
            synchronize(args.device)
            times[name].append((clock() - start) / args.steps)
    with FlopCounterMode(display=False) as counter:
        iteration(eager_state, critic_iteration, generator_iteration)
    per = {name: statistics.median(t) for name, t in times.items()}
    print(
        f"gswgan_main discriminators={k} model_dim={args.model_dim} batch={batch} critic_iters={p.critic_iters} "
        f"clock={args.clock} eager_s_per_iter={per['eager']:.4f} compiled={args.compile} "
        f"compiled_s_per_iter={per['compiled']:.4f} ratio={per['compiled'] / per['eager']:.2f} "
        f"compile_s={compile_s:.1f} flops_per_iter={counter.get_total_flops()}",
        flush=True,
    )


if __name__ == "__main__":
    main()
