"""DP²-VAE Table 1's Real-data FID under the readings that could explain ours (1.02) against the paper's 1.6.

    DPVAE_DATA_MIRROR=../shared/data python workflow/campaigns/dp2vae_real_fid.py [--device cuda] [--out FILE]
        [--n-train 60000] [--n-test 10000] [--batch 256]

MNIST's official splits straight from the mirror's IDX files (uint8 pixels: no rounding), through the FID metric's
extractor (`dpvae.eval.fid.extractor`, torch-fidelity's InceptionV3) twice: with torch-fidelity's TF1-compatible
bilinear resize to 299×299 (the project's protocol) and with `F.interpolate(mode="bilinear", align_corners=False)`
(pytorch-fid's, which the paper names). Per resize, FID of
  * all training images vs the test split (the project's reading of A-D7: reproduces the queue's 1.02 on a GPU),
  * each disjoint block of 10,000 training images vs the test split (a reading with equal sizes: FID's bias
    grows as n falls), mean ± sd over the blocks.
Prints one line per case and writes them as CSV (`--out`). Features of 140,000 images: about a minute on one GPU,
hours on this CPU (`--n-train 512 --n-test 256` checks the script). Public data only: nothing private is read.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import torch_fidelity.feature_extractor_inceptionv3 as inception
from torch.nn import functional as F
from torch_fidelity.metric_fid import fid_statistics_to_metric

from dpvae.data.images import load_idx_split
from dpvae.devices import device_name
from dpvae.eval.fid import extractor, weights_path
from dpvae.paths import data_mirror

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


def features(images: np.ndarray, device: str, batch: int) -> np.ndarray:
    """pool3 features [n, 2048] (float64) of uint8 grey images [n, 28, 28]."""
    features_of = extractor(weights_path(), device)
    out = []
    for start in range(0, len(images), batch):
        rgb = torch.from_numpy(np.repeat(images[start : start + batch, None], 3, axis=1)).to(device)
        out.append(features_of(rgb).double().cpu().numpy())
    return np.concatenate(out)


def fid(a: np.ndarray, b: np.ndarray) -> float:
    stats = [{"mu": f.mean(0), "sigma": np.cov(f, rowvar=False)} for f in (a, b)]
    return float(fid_statistics_to_metric(stats[0], stats[1], verbose=False)["frechet_inception_distance"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--n-train", type=int, default=60_000)
    parser.add_argument("--n-test", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    mirror = data_mirror(None)
    if mirror is None:
        print("dp2vae_real_fid: set DPVAE_DATA_MIRROR to the folder holding mnist/", file=sys.stderr)
        return 2
    train, _ = load_idx_split(Path(mirror) / "mnist", "train")
    test, _ = load_idx_split(Path(mirror) / "mnist", "test")
    train, test = train[: args.n_train], test[: args.n_test]
    block = min(BLOCK, len(train))
    rows = []
    for resize in ("tf1", "bilinear"):
        with resized_with(resize):
            f_train, f_test = (features(images, args.device, args.batch) for images in (train, test))
        blocks = [fid(f_train[s : s + block], f_test) for s in range(0, len(train) - block + 1, block)]
        rows += [
            {"resize": resize, "generated": f"train[:{len(train)}]", "reference": f"test[:{len(test)}]",
             "fid": fid(f_train, f_test), "sd": 0.0, "blocks": 1},
            {"resize": resize, "generated": f"{len(blocks)} blocks of {block} train", "reference":
             f"test[:{len(test)}]", "fid": float(np.mean(blocks)), "sd": float(np.std(blocks)), "blocks": len(blocks)},
        ]  # fmt: skip
    table = pd.DataFrame(rows)
    print(f"# {device_name(args.device)}, torch {torch.__version__}")
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    if args.out:
        table.to_csv(args.out, index=False, float_format="%.6g")
    return 0


if __name__ == "__main__":
    sys.exit(main())
