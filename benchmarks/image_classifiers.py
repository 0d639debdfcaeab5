"""DP²-VAE's downstream classifiers per device: epochs per second of the MLP's and the CNN's fits as a job trains them.

    python benchmarks/image_classifiers.py [--device cuda] [--images 60000] [--epochs 3] [--repeats 5] [--quick]

Per classifier, `--repeats` fits trained as a job trains them (`dpvae.eval.image_classifiers.fit_groups`: together
in one vectorised loop on CUDA, one at a time on the CPU) on `--images` random MNIST-shaped images (10 classes,
batch 512, 10 % held out: every epoch also scores the held-out part, as in a job) for `--epochs` epochs (patience
above them: no early stop): epochs per second of all the fits (`epochs_per_s`) and per fit (`fit_epochs_per_s`,
`--repeats` times it). On CUDA twice, with the deterministic kernels a job runs
with (`dpvae.devices.repeatable`) and without them; on the CPU once. Then LR's one fit (scikit-learn, the CPU) on
the same images, and per classifier the FLOPs of one training step per image (torch.utils.flop_counter) and the
rate of all the fits in GFLOP/s. A job of the paper's protocol runs LR once and the MLP's and the CNN's 5 fits to
early stopping (30-60 epochs each on 60,000 MNIST-like images, measured on one H200; docs/dp2vae.md).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from dpvae.allocator import malloc_argument, malloc_setting
from dpvae.devices import device_argument, device_name, repeatable, synchronize
from dpvae.eval.image_classifiers import ImageClassifierOptions, _lr_accuracy, _torch_accuracies, fit_groups
from dpvae.models import classifiers

CLASSES = 10


def step_flops(kind: str, shape: tuple[int, ...]) -> int:
    """FLOPs of one forward + backward of one image (matmuls and convolutions)."""
    from torch.utils.flop_counter import FlopCounterMode

    model = getattr(classifiers, kind)(shape, CLASSES)
    with FlopCounterMode(display=False) as counter:
        torch.nn.functional.cross_entropy(model(torch.zeros(1, *shape)), torch.zeros(1, dtype=torch.long)).backward()
    return counter.get_total_flops()


def epochs_per_s(kind: str, x: np.ndarray, y: np.ndarray, epochs: int, repeats: int, device: str) -> float:
    """Epochs per second of `repeats` fits, trained as a job trains them on `device`."""
    options = ImageClassifierOptions(max_epochs=epochs, patience=epochs + 1)
    synchronize(device)
    started = time.perf_counter()
    for group in fit_groups(list(range(repeats)), device):
        _torch_accuracies(kind, x, y, x[:2048], y[:2048], CLASSES, options, group, device)
    synchronize(device)
    return epochs / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    device_argument(parser)
    parser.add_argument("--images", type=int, default=60_000)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=5, help="fits of a classifier (a job's 5)")
    parser.add_argument("--quick", action="store_true", help="1,024 images, 1 epoch: a check of the script")
    malloc_argument(parser)
    args = parser.parse_args()
    malloc = malloc_setting(args.default_malloc)
    if args.quick:
        args.images, args.epochs = 1024, 1
    if args.repeats < 1:
        raise SystemExit(f"image_classifiers: --repeats {args.repeats}; it takes 1 or more fits")
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("image_classifiers: --device cuda, but torch sees no CUDA device")
    rng = np.random.default_rng(0)
    y = rng.integers(0, CLASSES, args.images)
    x = (rng.random((args.images, 1, 28, 28)) * 0.5 + y[:, None, None, None] / (2 * CLASSES)).astype(np.float32)
    print(
        f"# device={args.device} name={device_name(args.device)} torch={torch.__version__} images={args.images}"
        f" malloc={malloc}"
    )
    settings = ["deterministic", "default"] if args.device == "cuda" else ["default"]
    for kind in ("mlp", "cnn"):
        flops = step_flops(kind, x.shape[1:])
        for setting in settings:
            repeatable(args.device, on=setting == "deterministic")
            epochs_per_s(kind, x[:1024], y[:1024], 1, args.repeats, args.device)  # warm-up: kernels, memory pool
            rate = epochs_per_s(kind, x, y, args.epochs, args.repeats, args.device)
            gflop_per_s = rate * args.repeats * 0.9 * args.images * flops / 1e9  # the 90 % trained on
            print(
                f"image_classifiers kind={kind} kernels={setting} repeats={args.repeats} epochs_per_s={rate:.3f} "
                f"fit_epochs_per_s={rate * args.repeats:.3f} flop_per_image_step={flops} gflop_per_s={gflop_per_s:.1f}",
                flush=True,
            )
    started = time.perf_counter()
    _lr_accuracy(x, y, x[:2048], y[:2048], seed=0)
    print(f"image_classifiers kind=lr fit_s={time.perf_counter() - started:.1f} threads={torch.get_num_threads()}")


if __name__ == "__main__":
    main()
