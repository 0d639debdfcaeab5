"""GS-WGAN warm start: discriminator (critic) steps per second for K discriminators, vectorised vs a loop.

    python benchmarks/gswgan_discriminators.py [--discriminators 20] [--steps 2] [--model-dims 4 16 64] [--threads 2]
                                               [--device cpu|cuda]

Same work on both paths: each of K discriminators (with its own generator, as in GS-WGAN's
`source/pretrain.py`) takes `--steps` WGAN-GP critic steps on its own batch of 32 (real + generated images,
gradient penalty, Adam). "loop" runs the networks of `dpvae.models.gswgan` one model at a time (K = 1
stacks); "vectorised" runs all K at once on stacked parameters (grouped convolutions), as
`dpvae.methods.gs_wgan.train.pretrain` does. Prints `model_dim=… loop_steps_per_s=… vectorised_steps_per_s=…
ratio=…` (discriminator steps per second; median of `--repeats` alternating timings, the device synchronised
before every clock read), after a `device=<name>` line.
"""

from __future__ import annotations

import argparse
import statistics
import time
from types import SimpleNamespace

import torch

from dpvae.devices import device_argument, device_name, synchronize
from dpvae.methods.gs_wgan.train import BETAS, _critic_loss
from dpvae.models import gswgan as nets
from dpvae.models.stacked import StackedAdam

BATCH = 32


def critic_steps(d, du, g, gu, real, labels, steps: int, options, rng) -> None:
    adam = StackedAdam(d, 1e-4, BETAS)
    for _ in range(steps):
        grads = torch.autograd.grad(_critic_loss(d, du, g, gu, real, labels, options, rng), list(d.values()))
        adam.step(dict(zip(d, grads)))


def _on(stack: dict, device: str) -> dict:
    return {n: t.detach().to(device).requires_grad_(t.requires_grad) for n, t in stack.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--discriminators", type=int, default=20)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--model-dims", type=int, nargs="+", default=[4, 16, 64])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    device_argument(parser)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = args.device
    print(f"device={device_name(device)}", flush=True)
    k = args.discriminators
    generator = torch.Generator().manual_seed(0)
    real = torch.rand(k, BATCH, *nets.IMAGE, generator=generator).to(device)
    labels = torch.randint(10, (k, BATCH), generator=generator).to(device)

    def clock() -> float:
        synchronize(device)
        return time.perf_counter()

    for dim in args.model_dims:
        options = SimpleNamespace(z_dim=10, gp_weight=10.0, logit_penalty=0.001)
        torch.manual_seed(0)
        d, du = (_on(s, device) for s in nets.init_discriminator(k, dim))
        g, gu = (_on(s, device) for s in nets.init_generator(k, 10, dim))
        times: dict[str, list[float]] = {"loop": [], "vectorised": []}
        for _ in range(args.repeats):
            started = clock()
            for i in range(k):
                one = lambda s: {n: t[i : i + 1].detach().clone().requires_grad_(t.requires_grad) for n, t in s.items()}  # noqa: E731
                critic_steps(
                    one(d),
                    one(du),
                    one(g),
                    one(gu),
                    real[i : i + 1],
                    labels[i : i + 1],
                    args.steps,
                    options,
                    torch.Generator(device).manual_seed(i),
                )
            times["loop"].append(clock() - started)
            copy = lambda s: {n: t.detach().clone().requires_grad_(t.requires_grad) for n, t in s.items()}  # noqa: E731
            started = clock()
            critic_steps(
                copy(d),
                copy(du),
                copy(g),
                copy(gu),
                real,
                labels,
                args.steps,
                options,
                torch.Generator(device).manual_seed(0),
            )
            times["vectorised"].append(clock() - started)
        rate = {name: k * args.steps / statistics.median(v) for name, v in times.items()}
        print(
            f"model_dim={dim} discriminators={k} steps={args.steps} threads={args.threads} "
            f"loop_steps_per_s={rate['loop']:.3f} vectorised_steps_per_s={rate['vectorised']:.3f} "
            f"ratio={rate['vectorised'] / rate['loop']:.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
