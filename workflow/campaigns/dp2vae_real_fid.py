"""DP²-VAE Table 1's Real-data FID: its bias between 10,000 and 60,000 images, and the resize.

    DPVAE_DATA_MIRROR=../shared/data python workflow/campaigns/dp2vae_real_fid.py [--dataset mnist]
        [--device cuda] [--resizes tf1 bilinear] [--out FILE] [--cache DIR] [--n-train 60000] [--n-test 10000]

A dataset's official splits straight from the mirror's IDX files (uint8 pixels: no rounding), through the FID
metric's extractor (`dpvae.eval.fid.extractor`, torch-fidelity's InceptionV3; compiled on the CPU, as the metric
runs there from 10,000 images on), per resize: torch-fidelity's TF1-compatible bilinear resize to 299×299 (`tf1`,
the project's protocol) and `F.interpolate(mode="bilinear", align_corners=False)` (`bilinear`, pytorch-fid's, which
the paper names). Per resize, FID of
  * all training images vs the test split (the Real-data row at the paper's n),
  * each disjoint block of 10,000 training images vs the test split (the row at the CPU protocol's n; the first
    block is the Real-data run's own FID there), mean ± sd over the blocks.
Prints one line per case and writes them as CSV (`--out`, with the device, commit and command). Features of 70,000
images per resize: about a minute on one GPU, ~1.6 h on this 2-core CPU; with `--cache DIR` every 10,000 images'
features are kept there as they finish, so an interrupted run resumes (`--n-train 512 --n-test 256` checks the
script). Public data only: nothing private is read.
"""

from __future__ import annotations

import argparse
import contextlib
import shlex
import sys
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import torch_fidelity.feature_extractor_inceptionv3 as inception
from torch.nn import functional as F
from torch_fidelity.metric_fid import fid_statistics_to_metric

from dpvae.allocator import keep_freed_memory
from dpvae.data.images import load_idx_split
from dpvae.devices import device_name
from dpvae.eval.fid import extractor, weights_path
from dpvae.files import atomic_write
from dpvae.paths import data_mirror
from dpvae.provenance import git_commit

BLOCK = 10_000


def _bilinear(x: torch.Tensor, size: tuple[int, int], align_corners: bool = False) -> torch.Tensor:
    return F.interpolate(x, size=size, mode="bilinear", align_corners=align_corners)


@contextlib.contextmanager
def resized_with(resize: str):
    """Inside, the extractor resizes as `resize` says ('tf1': torch-fidelity's own; 'bilinear': pytorch-fid's)."""
    original = inception.interpolate_bilinear_2d_like_tensorflow1x
    if resize == "bilinear":
        inception.interpolate_bilinear_2d_like_tensorflow1x = _bilinear
    try:
        yield
    finally:
        inception.interpolate_bilinear_2d_like_tensorflow1x = original


def features(images: np.ndarray, device: str, batch: int, cache: Path | None = None) -> np.ndarray:
    """pool3 features [n, 2048] (float64) of uint8 grey images [n, 28, 28], computed BLOCK images at a time; with
    `cache`, each block's features are read from, or written to, `cache/<first>-<last>.npy`."""
    compiled = torch.device(device).type == "cpu"
    features_of = None
    out = []
    for first in range(0, len(images), BLOCK):
        block = images[first : first + BLOCK]
        path = cache / f"{first}-{first + len(block)}.npy" if cache else None
        if path and path.is_file():
            out.append(np.load(path))
            continue
        features_of = features_of or extractor(weights_path(), device, compiled)
        parts = []
        for start in range(0, len(block), batch):
            rgb = np.repeat(block[start : start + batch, None], 3, axis=1)
            n = len(rgb)
            if compiled and n < batch:  # one compiled shape: pad, drop the padding's features
                rgb = np.concatenate([rgb, np.zeros((batch - n, *rgb.shape[1:]), np.uint8)])
            parts.append(features_of(torch.from_numpy(rgb).to(device))[:n].double().cpu().numpy())
        out.append(np.concatenate(parts))
        if path:
            atomic_write(path, lambda tmp: np.save(tmp, out[-1]))
    return np.concatenate(out)


def fid(a: np.ndarray, b: np.ndarray) -> float:
    stats = [{"mu": f.mean(0), "sigma": np.cov(f, rowvar=False)} for f in (a, b)]
    return float(fid_statistics_to_metric(stats[0], stats[1], verbose=False)["frechet_inception_distance"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", choices=("mnist", "fashion-mnist"), default="mnist")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--resizes", nargs="+", choices=("tf1", "bilinear"), default=["tf1", "bilinear"])
    parser.add_argument("--n-train", type=int, default=60_000)
    parser.add_argument("--n-test", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--cache", type=Path, help="keep each 10,000 images' features here (resume)")
    args = parser.parse_args(argv)
    keep_freed_memory()  # as a job runs (dpvae.allocator)
    mirror = data_mirror(None)
    if mirror is None:
        print(f"dp2vae_real_fid: set DPVAE_DATA_MIRROR to the folder holding {args.dataset}/", file=sys.stderr)
        return 2
    train, _ = load_idx_split(Path(mirror) / args.dataset, "train")
    test, _ = load_idx_split(Path(mirror) / args.dataset, "test")
    train, test = train[: args.n_train], test[: args.n_test]
    block = min(BLOCK, len(train))
    rows = []
    for resize in args.resizes:
        with resized_with(resize):
            f_train, f_test = (
                features(images, args.device, args.batch, args.cache and args.cache / f"{resize}-{split}")
                for images, split in ((train, f"train{len(train)}"), (test, f"test{len(test)}"))
            )
        blocks = [fid(f_train[s : s + block], f_test) for s in range(0, len(train) - block + 1, block)]
        rows += [
            {"resize": resize, "generated": f"train[:{len(train)}]", "reference": f"test[:{len(test)}]",
             "fid": fid(f_train, f_test), "sd": 0.0, "blocks": 1},
            {"resize": resize, "generated": f"{len(blocks)} blocks of {block} train", "reference":
             f"test[:{len(test)}]", "fid": float(np.mean(blocks)), "sd": float(np.std(blocks)), "blocks": len(blocks)},
            {"resize": resize, "generated": f"train[:{block}]", "reference": f"test[:{len(test)}]",
             "fid": blocks[0], "sd": 0.0, "blocks": 1},
        ]  # fmt: skip
    table = pd.DataFrame(rows).assign(
        dataset=args.dataset,
        device=device_name(args.device),
        commit=git_commit(),
        command=shlex.join(["python", "workflow/campaigns/dp2vae_real_fid.py", *(argv or sys.argv[1:])]),
        date=datetime.now(UTC).strftime("%Y-%m-%d"),
    )
    print(f"# {args.dataset}: {device_name(args.device)}, torch {torch.__version__}")
    print(table.iloc[:, :6].to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    if args.out:
        table.to_csv(args.out, index=False, float_format="%.6g")
    return 0


if __name__ == "__main__":
    sys.exit(main())
