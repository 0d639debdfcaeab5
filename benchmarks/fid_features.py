"""FID's Inception features on the CPU: torch-fidelity's plain extractor vs the project's paths (channels-last
eager, used below `COMPILE_MIN_IMAGES`; channels-last compiled with frozen weights, used from it on).

    DPVAE_DATA_MIRROR=../shared/data python benchmarks/fid_features.py [--images 256] [--batch 64] [--repeats 3]
    DPVAE_DATA_MIRROR=../shared/data python benchmarks/fid_features.py --device cuda [--images 4096] [--batches 64,256]

Prints one line per path: images per wall second and per CPU second (process time, both threads: the fairer
number on a machine shared with other jobs), the largest feature difference from the plain path relative to the
largest feature, and the compile time; then the FLOPs per image (torch.utils.flop_counter, the plain path:
about 11.4 GFLOP (5.7 GMAC), the 299x299 InceptionV3) and the rate in GFLOP/s. The paths alternate, `--repeats`
times, best of the repeats per path. MNIST-shaped random images ([N, 1, 28, 28], resized to 299 inside the extractor).

With `--device cuda`: the metric's own `statistics` (uint8 conversion, features, float64 sums on the GPU) per
batch size of `--batches`, with the deterministic kernels a job runs with (`dpvae.devices.repeatable`) and without:
images per second, GFLOP/s, and the largest difference of the mean feature from the first case's, relative to its
largest entry. The FID jobs of DP²-VAE's paper protocol (60,000 images, batch 64) ran at ~170 images/s each with
six at once on one H200 (benchmarks/README.md): what batch size and kernels a window's FID should use.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from dpvae.allocator import malloc_argument, malloc_setting
from dpvae.devices import device_name
from dpvae.eval.fid import extractor, to_uint8_rgb, weights_path


def on_cuda(images: int, batches: list[int]) -> None:
    """The metric's `statistics` on CUDA per batch size, deterministic kernels on and off (see the docstring)."""
    from torch.utils.flop_counter import FlopCounterMode

    from dpvae.devices import repeatable, synchronize
    from dpvae.eval.fid import statistics

    weights = weights_path()
    x = np.random.default_rng(0).random((images, 1, 28, 28)).astype(np.float32)
    model = extractor(weights)
    with FlopCounterMode(display=False) as counter:
        model(torch.from_numpy(to_uint8_rgb(x[:1])))
    gflop = counter.get_total_flops() / 1e9
    print(f"device={device_name('cuda')} torch={torch.__version__} images={images} gflop_per_image={gflop:.2f}")
    first = None
    for setting in ("deterministic", "default"):
        repeatable("cuda", on=setting == "deterministic")
        for batch in batches:
            statistics(x[:batch], batch, weights, "cuda")  # warm-up: the model's load, cuDNN's plans
            synchronize("cuda")
            started = time.perf_counter()
            mu = statistics(x, batch, weights, "cuda")["mu"]
            per_s = images / (time.perf_counter() - started)
            first = mu if first is None else first
            relative = float(np.abs(mu - first).max() / np.abs(first).max())
            print(
                f"fid_statistics kernels={setting} batch={batch} images_per_s={per_s:.1f} "
                f"gflop_per_s={per_s * gflop:.0f} max_rel_diff_mu={relative:.1e}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=256)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--batches", default="64,256", help="with --device cuda: batch sizes, comma-separated")
    malloc_argument(parser)
    args = parser.parse_args()
    malloc = malloc_setting(args.default_malloc)
    if args.device == "cuda":
        return on_cuda(args.images, [int(b) for b in args.batches.split(",")])
    from torch.utils.flop_counter import FlopCounterMode
    from torch_fidelity.feature_extractor_inceptionv3 import FeatureExtractorInceptionV3

    weights = weights_path()
    x = np.random.default_rng(0).random((args.images, 1, 28, 28)).astype(np.float32)
    batches = [torch.from_numpy(to_uint8_rgb(x[i : i + args.batch])) for i in range(0, len(x), args.batch)]
    plain_model = FeatureExtractorInceptionV3(
        "inception-v3-compat", ["2048"], feature_extractor_weights_path=str(weights)
    )
    plain_model.eval()

    def plain(images: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return plain_model(images)[0]

    started = time.perf_counter()
    compiled = extractor(weights, compiled=True)
    compiled(batches[0])  # compiles (one shape: the batch)
    compile_s = time.perf_counter() - started
    paths = {"plain": plain, "channels_last": extractor(weights), "compiled": compiled}
    reference = torch.cat([plain(b) for b in batches])
    best: dict[str, tuple[float, float, float]] = {}
    for _ in range(args.repeats):
        for name, features_of in paths.items():
            wall, cpu = time.perf_counter(), time.process_time()
            out = torch.cat([features_of(b) for b in batches if len(b) == args.batch])
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            n = len(out)
            relative = float((out - reference[:n]).abs().max() / reference[:n].abs().max())
            previous = best.get(name, (0.0, 0.0, relative))
            best[name] = (max(previous[0], n / wall), max(previous[1], n / cpu), relative)
    with FlopCounterMode(display=False) as counter:
        plain(batches[0][:1])
    gflop = counter.get_total_flops() / 1e9
    print(
        f"device={device_name('cpu')} threads={torch.get_num_threads()} images={args.images} batch={args.batch}"
        f" malloc={malloc}"
    )
    for name, (per_wall, per_cpu, relative) in best.items():
        extra = f" compile_s={compile_s:.0f}" if name == "compiled" else ""
        print(
            f"fid_features path={name} images_per_s={per_wall:.2f} images_per_cpu_s={per_cpu:.2f} "
            f"gflop_per_s={per_wall * gflop:.1f} max_rel_diff={relative:.1e}{extra}"
        )
    print(f"gflop_per_image={gflop:.2f}")


if __name__ == "__main__":
    main()
