"""GS-WGAN warm start: discriminator (critic) steps per second for K discriminators, vectorised vs a loop.

    python benchmarks/gswgan_discriminators.py [--cases 50:2:4 32:4:32] [--threads 1 2] [--chunk 16]
                                               [--iters 2] [--critic-iters 5] [--repeats 3] [--device cpu|cuda]

Each case K:md:B is K discriminators of width md (each with its own generator, as GS-WGAN's
`source/pretrain.py`) on batches of B. Both paths run the method's own `dpvae.methods.gs_wgan.train.warm_start`:
`--iters` warm-start iterations (`--critic-iters` WGAN-GP critic steps on real and generated images with the
gradient penalty, then a generator step; Adam), model initialisation included. "loop" trains one pair after
the other with `torch.optim.Adam` (`vectorised: false`); "vectorised" trains `--chunk` pairs at a time on
stacked parameters (grouped convolutions, `StackedAdam`), as the method does by default. A discriminator step
is one critic step with its share of the generator step: steps/s = K · iters · critic_iters / seconds.

FLOPs per discriminator step (`torch.utils.flop_counter.FlopCounterMode`: matrix products and convolutions,
forward and backward, counted once outside the clock; a grouped convolution's weight gradient corrected, see
`grouped_conv_backward_flop`) stand beside each timing: the two paths do the same
arithmetic, so a ratio away from 1 is overhead, not work. On CUDA, `peak_mb_per_pair` is the vectorised
path's peak allocated memory over the chunk (what `chunk` is chosen by). One line per case and thread count,
`case=K:md:B threads=… loop_steps_per_s=… vectorised_steps_per_s=… ratio=… flops_per_step_loop=… …`, after a
`device=<name>` line. Timing: the paths alternate `--repeats` times, median; the device synchronised before
every clock read. (The H200 record of 2026-11-26 timed critic steps alone, without the generator step.)
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import torch
from torch.utils.flop_counter import FlopCounterMode, conv_backward_flop

from dpvae.devices import device_argument, device_name, synchronize
from dpvae.methods.base import RunContext
from dpvae.methods.gs_wgan import GSWGANParams
from dpvae.methods.gs_wgan.train import warm_start
from dpvae.runspec import RunSpec

CLASSES = 10


def grouped_conv_backward_flop(*args, out_shape, **kwargs) -> int:
    """torch's count of a convolution's backward, with the weight gradient's divided by `groups`: torch (2.13)
    counts a grouped convolution's weight gradient as if it were dense, `groups` times too many."""
    count = conv_backward_flop.__wrapped__  # on shapes
    *head, groups, mask = args
    grad_input = count(*head, groups, [mask[0], False, False], out_shape=out_shape, **kwargs)
    return grad_input + count(*head, groups, [False, mask[1], False], out_shape=out_shape, **kwargs) // groups


def _case(text: str) -> tuple[int, int, int]:
    k, dim, batch = (int(v) for v in text.split(":"))
    return k, dim, batch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=_case, nargs="+", default=[(50, 2, 4), (32, 4, 32)], help="K:md:B")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--chunk", type=int, default=16)
    parser.add_argument("--iters", type=int, default=2)
    parser.add_argument("--critic-iters", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    device_argument(parser)
    args = parser.parse_args()
    device = args.device
    print(f"device={device_name(device)} torch={torch.__version__}", flush=True)

    def clock() -> float:
        synchronize(device)
        return time.perf_counter()

    for k, dim, batch in args.cases:
        generator = torch.Generator().manual_seed(0)
        n = 2 * batch * k  # subsets of 2B records
        x = torch.rand(n, 1, 28, 28, generator=generator).to(device)
        y = torch.randint(CLASSES, (n,), generator=generator).to(device)
        subsets = torch.randperm(n, generator=generator).reshape(k, 2 * batch).to(device)
        groups = {
            "loop": [[i] for i in range(k)],
            "vectorised": [list(range(i, min(k, i + args.chunk))) for i in range(0, k, args.chunk)],
        }
        contexts = {
            name: RunContext(
                RunSpec.standalone("benchmark", tempfile.gettempdir(), method="gs-wgan", device=device),
                Path(tempfile.gettempdir()),
                GSWGANParams(
                    discriminators=k,
                    batch_size=batch,
                    pretrain_iters=args.iters,
                    model_dim=dim,
                    critic_iters=args.critic_iters,
                    chunk=args.chunk,
                    vectorised=name == "vectorised",
                ),
            )
            for name in groups
        }

        def run(name: str, rows: list[int]) -> None:
            warm_start(contexts[name], x, y, subsets, rows, batch, CLASSES)

        steps = k * args.iters * args.critic_iters
        flops = {}
        for name, rows in (("loop", [0]), ("vectorised", groups["vectorised"][0])):
            with FlopCounterMode(
                display=False, custom_mapping={torch.ops.aten.convolution_backward: grouped_conv_backward_flop}
            ) as counter:
                run(name, rows)
            flops[name] = counter.get_total_flops() / (len(rows) * args.iters * args.critic_iters)
        peak = ""
        if device.startswith("cuda"):
            torch.cuda.reset_peak_memory_stats(device)
            run("vectorised", groups["vectorised"][0])
            per_pair = torch.cuda.max_memory_allocated(device) / 2**20 / len(groups["vectorised"][0])
            peak = f" peak_mb_per_pair={per_pair:.1f}"
        for threads in args.threads:
            torch.set_num_threads(threads)
            times: dict[str, list[float]] = {name: [] for name in groups}
            for _ in range(args.repeats):
                for name, parts in groups.items():
                    started = clock()
                    for rows in parts:
                        run(name, rows)
                    times[name].append(clock() - started)
            rate = {name: steps / statistics.median(v) for name, v in times.items()}
            print(
                f"case={k}:{dim}:{batch} discriminators={k} model_dim={dim} batch={batch} chunk={args.chunk} "
                f"iters={args.iters} critic_iters={args.critic_iters} threads={threads} "
                f"loop_steps_per_s={rate['loop']:.3f} vectorised_steps_per_s={rate['vectorised']:.3f} "
                f"ratio={rate['vectorised'] / rate['loop']:.2f} flops_per_step_loop={flops['loop']:.4g} "
                f"flops_per_step_vectorised={flops['vectorised']:.4g}{peak}",
                flush=True,
            )


if __name__ == "__main__":
    main()
