"""DP²-VAE stage 1: encoders pre-trained per second, vectorised (stacked, `models.stacked`) vs one at a time.

    python benchmarks/dp2vae_stage1.py [--encoders 20] [--iters 3] [--widths 8,8 16,8 64,32] [--threads 2]

Same work on both paths: `--encoders` models (encoder + its own decoder, PAPERS.md §4.2 CVAE on 28×28 MNIST-
shaped data), `--iters` Adam steps each on batches of 32, batch gradients of encoder and decoder clipped to
C = 1 separately (Alg. 1). "loop" trains one `CVAE` module after the other with torch.optim.Adam and
clip_grad_norm_ (the reference way); "vectorised" trains all of them at once on stacked parameters
(`stacked_loss`, `clip_per_model`, `StackedAdam`), as `dpvae.methods.impl.dp2vae.pretrain_encoders` does.
Prints one line per width: `width=16,8 loop_enc_per_s=… vectorised_enc_per_s=… ratio=…`; the two paths are
timed alternately, `--repeats` times, median.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from dpvae.models.cvae import CVAE, stacked_loss
from dpvae.models.stacked import StackedAdam, clip_per_model, stack

SHAPE, CLASSES, LATENT, BATCH, CLIP = (1, 28, 28), 10, 8, 32, 1.0


def data(k: int, iters: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    x = torch.rand(iters, k, BATCH, *SHAPE, generator=generator)
    onehot = torch.nn.functional.one_hot(torch.randint(CLASSES, (iters, k, BATCH), generator=generator), CLASSES)
    return x, onehot.float(), torch.randn(iters, k, BATCH, LATENT, generator=generator)


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


def vectorised(models: list[CVAE], batches) -> None:
    x, onehot, noise = batches
    params = stack(models)
    names = list(params)
    groups = [[n for n in names if n.startswith("encoder.")], [n for n in names if n.startswith("decoder.")]]
    adam = StackedAdam(params, 1e-4)
    for t in range(x.shape[0]):
        losses = stacked_loss(models[0], params, x[t], onehot[t], noise[t])
        grads = dict(zip(names, torch.autograd.grad(losses.mean(1).sum(), list(params.values()))))
        clip_per_model(grads, groups, CLIP)
        adam.step(grads)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--encoders", type=int, default=20)
    parser.add_argument("--iters", type=int, default=3)
    parser.add_argument("--widths", nargs="+", default=["8,8", "16,8", "64,32"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    batches = data(args.encoders, args.iters)
    for width in args.widths:
        hidden = [int(h) for h in width.split(",")]
        torch.manual_seed(0)
        models = [CVAE(SHAPE, CLASSES, LATENT, hidden) for _ in range(args.encoders)]
        times: dict[str, list[float]] = {"loop": [], "vectorised": []}
        for _ in range(args.repeats):
            for name, run in (("loop", loop), ("vectorised", vectorised)):
                fresh = [CVAE(SHAPE, CLASSES, LATENT, hidden) for _ in range(args.encoders)]
                for model, source in zip(fresh, models):
                    model.load_state_dict(source.state_dict())
                started = time.perf_counter()
                run(fresh, batches)
                times[name].append(time.perf_counter() - started)
        rate = {k: args.encoders / statistics.median(v) for k, v in times.items()}
        print(f"width={width} encoders={args.encoders} iters={args.iters} threads={args.threads} "
              f"loop_enc_per_s={rate['loop']:.3f} vectorised_enc_per_s={rate['vectorised']:.3f} "
              f"ratio={rate['vectorised'] / rate['loop']:.2f}", flush=True)


if __name__ == "__main__":
    main()
