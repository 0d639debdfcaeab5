"""MNIST and Fashion-MNIST: IDX reader and the five image preparations built on them.

* official split, (N, 1, 28, 28) in [0, 1] (DP²-VAE);
* P3GM: train+test concatenated, seeded 90/10 holdout, flattened (N, 784) in [0, 1];
* Mathieu/PriVAE Fashion-MNIST 32×32: PIL bilinear resize, clamped to [1e-6, 1 - 1e-6];
* LVAE: binarised MNIST, 9,999 seeded training images plus one all-white outlier.

Their public domain (recorded in the prepared meta as `domain`): pixels are unsigned bytes by the IDX format,
so /255 lies in [0, 1] whatever the images; the label set is the ten published classes.
"""

from __future__ import annotations

import gzip
import struct
import zlib
from pathlib import Path

import numpy as np
from PIL import Image

from dpvae.data.domain import images_domain
from dpvae.data.errors import DataError
from dpvae.data.sources import RemoteFile
from dpvae.data.store import Prepared, Split, holdout_split

MANIFEST_NOTE = "sha256 from the verified shared copy's MANIFEST.tsv; its md5 equals the dataset authors' published md5"
IDX_NAMES = {
    "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
    "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
}
DIGIT_NAMES = tuple(str(digit) for digit in range(10))
FASHION_NAMES = (
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
)  # fmt: skip
LABEL_NAMES = {"mnist": DIGIT_NAMES, "fashion-mnist": FASHION_NAMES}

MNIST_MIRRORS = (
    "https://ossci-datasets.s3.amazonaws.com/mnist/",  # torchvision's mirror
    "https://storage.googleapis.com/cvdf-datasets/mnist/",  # TensorFlow's mirror
    "http://yann.lecun.com/exdb/mnist/",  # original
)
FASHION_MIRRORS = (
    "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",  # original (torchvision uses it)
    "https://storage.googleapis.com/tensorflow/tf-keras-datasets/",  # Keras' mirror
    "https://raw.githubusercontent.com/zalandoresearch/fashion-mnist/master/data/fashion/",
)


def _remotes(mirrors: tuple[str, ...], table: tuple[tuple[str, str, str, int], ...]) -> tuple[RemoteFile, ...]:
    """RemoteFiles from rows (file name, sha256, md5, size), each downloadable from every mirror."""
    return tuple(
        RemoteFile(name, tuple(base + name for base in mirrors), sha256, md5, size, MANIFEST_NOTE)
        for name, sha256, md5, size in table
    )


MNIST_FILES = _remotes(
    MNIST_MIRRORS,
    (
        ("train-images-idx3-ubyte.gz", "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609",
         "f68b3c2dcbeaaa9fbdd348bbdeb94873", 9912422),
        ("train-labels-idx1-ubyte.gz", "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c",
         "d53e105ee54ea40749a09fcbcd1e9432", 28881),
        ("t10k-images-idx3-ubyte.gz", "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6",
         "9fb629c4189551a2d022fa330f9573f3", 1648877),
        ("t10k-labels-idx1-ubyte.gz", "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6",
         "ec29112dd5afa0611ce80d1b7f02629c", 4542),
    ),
)  # fmt: skip
FASHION_MNIST_FILES = _remotes(
    FASHION_MIRRORS,
    (
        ("train-images-idx3-ubyte.gz", "3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84",
         "8d4fb7e6c68d591d4c3dfef9ec88bf0d", 26421880),
        ("train-labels-idx1-ubyte.gz", "a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845",
         "25c81989df183df01b3e8a0aad5dffbe", 29515),
        ("t10k-images-idx3-ubyte.gz", "346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073",
         "bef4ecab320f06d8554ea6380940ec79", 4422102),
        ("t10k-labels-idx1-ubyte.gz", "67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5",
         "bb300cfdad3c16e7a12a480ee83cd310", 5148),
    ),
)  # fmt: skip

CLAMP_EPS = 1e-6  # Mathieu et al.'s Constants.eta
LVAE_N_SAMPLED = 9_999
LVAE_THRESHOLD = 0.5
OUTLIER_LABEL = -1


def read_idx(path: Path) -> np.ndarray:
    """Read an unsigned-byte IDX file (optionally gzip-compressed) into a uint8 array of its shape."""
    try:
        with (gzip.open if path.suffix == ".gz" else open)(path, "rb") as stream:
            data = stream.read()
    except (OSError, EOFError, zlib.error) as error:
        raise DataError(f"{path}: cannot read ({error})") from error
    if len(data) < 4 or data[:3] != b"\x00\x00\x08":
        raise DataError(f"{path}: not an unsigned-byte IDX file (header {data[:4].hex()})")
    n_dims = data[3]
    header_bytes = 4 + 4 * n_dims
    shape = struct.unpack(f">{n_dims}I", data[4:header_bytes])
    payload = np.frombuffer(data, dtype=np.uint8, offset=header_bytes)
    if payload.size != int(np.prod(shape)):
        raise DataError(f"{path}: header promises shape {shape} but holds {payload.size} values")
    return payload.reshape(shape)


def load_idx_split(raw_dir: Path, split: str) -> tuple[np.ndarray, np.ndarray]:
    """(uint8 images (N, 28, 28), int64 labels (N,)) of the official 'train' or 'test' split."""
    image_file, label_file = (raw_dir / name for name in IDX_NAMES[split])
    images, labels = read_idx(image_file), read_idx(label_file).astype(np.int64)
    if images.ndim != 3 or labels.ndim != 1 or len(images) != len(labels):
        raise DataError(f"{image_file} {images.shape} and {label_file} {labels.shape} do not pair up")
    if labels.min() < 0 or labels.max() > 9:
        raise DataError(f"{label_file}: labels outside 0..9")
    return images, labels


def _unit_interval(images: np.ndarray) -> np.ndarray:
    return images.astype(np.float32) / np.float32(255)


def _label_meta(family: str) -> dict:
    """The label names and the public domain: pixels 0..255 by the IDX format (unsigned bytes), /255 into [0, 1];
    the ten published classes."""
    return {"label_names": list(LABEL_NAMES[family]), "domain": images_domain(LABEL_NAMES[family]).to_dict()}


def build_official(raw_dir: Path, seed: int, *, family: str) -> Prepared:
    """Official 60k/10k split, x (N, 1, 28, 28) = pixel / 255."""
    splits = []
    for split in ("train", "test"):
        images, labels = load_idx_split(raw_dir, split)
        splits.append(Split(_unit_interval(images)[:, None], labels))
    meta = {"scaling": "pixel / 255", "split": {"rule": "official train/test files"}, **_label_meta(family)}
    return Prepared(splits[0], splits[1], meta)


def build_p3gm(raw_dir: Path, seed: int, *, family: str) -> Prepared:
    """P3GM: official train+test concatenated (70k), x flattened (N, 784) = pixel / 255, seeded 90/10 split."""
    parts = [load_idx_split(raw_dir, split) for split in ("train", "test")]
    images = np.concatenate([images for images, _ in parts])
    labels = np.concatenate([labels for _, labels in parts])
    train, test, split_meta = holdout_split(_unit_interval(images).reshape(len(images), -1), labels, seed=seed)
    split_meta["before_split"] = "official train rows then official test rows"
    return Prepared(train, test, {"scaling": "pixel / 255", "split": split_meta, **_label_meta(family)})


def resize_bilinear(images: np.ndarray, size: int) -> np.ndarray:
    """Resize uint8 greyscale images (N, H, W) to (N, size, size) exactly as torchvision's
    ``transforms.Resize`` does on PIL images: ``PIL.Image.resize(..., BILINEAR)`` with 8-bit rounding.

    A vectorised ``torch.nn.functional.interpolate`` differs from PIL by ±1 grey level on ~10 % of
    pixels, so the PIL path is kept for bit-exact agreement with Mathieu et al.'s data pipeline.
    """
    out = np.empty((len(images), size, size), dtype=np.uint8)
    for index, image in enumerate(images):
        out[index] = np.asarray(Image.fromarray(image).resize((size, size), Image.Resampling.BILINEAR))
    return out


def build_fashion_32(raw_dir: Path, seed: int) -> Prepared:
    """Mathieu/PriVAE Fashion-MNIST: official split, 28→32 bilinear (PIL), /255, clamped to [1e-6, 1-1e-6]."""
    splits = []
    low, high = np.float32(CLAMP_EPS), np.float32(1 - CLAMP_EPS)
    for split in ("train", "test"):
        images, labels = load_idx_split(raw_dir, split)
        x = np.clip(_unit_interval(resize_bilinear(images, 32)), low, high)[:, None]
        splits.append(Split(x, labels))
    meta = {
        "scaling": "PIL bilinear resize 28x28 -> 32x32 (torchvision Resize on PIL), pixel / 255, "
        "clamp to [1e-6, 1 - 1e-6]",
        "split": {"rule": "official train/test files"},
        **_label_meta("fashion-mnist"),
    }
    return Prepared(splits[0], splits[1], meta)


def _binarise(images: np.ndarray) -> np.ndarray:
    return (_unit_interval(images) > LVAE_THRESHOLD).astype(np.float32)[:, None]


def build_lvae(raw_dir: Path, seed: int) -> Prepared:
    """LVAE: binarised MNIST (pixel/255 > 0.5); train = 9,999 seeded draws from MNIST train + one all-white image.

    The white outlier is the last training record (``outlier_index`` in meta) with label -1; test is the
    whole binarised MNIST test set.
    """
    train_images, train_labels = load_idx_split(raw_dir, "train")
    test_images, test_labels = load_idx_split(raw_dir, "test")
    chosen = np.sort(np.random.default_rng(seed).choice(len(train_images), LVAE_N_SAMPLED, replace=False))
    white = np.ones((1, *train_images.shape[1:]), dtype=np.float32)[:, None]
    x_train = np.concatenate([_binarise(train_images[chosen]), white])
    y_train = np.concatenate([train_labels[chosen], [OUTLIER_LABEL]])
    meta = {
        "scaling": f"binarised: pixel / 255 > {LVAE_THRESHOLD}",
        "split": {
            "rule": f"train = {LVAE_N_SAMPLED} MNIST-train images drawn uniformly without replacement "
            "(numpy default_rng(seed).choice, sorted) + one all-white image; test = MNIST test",
            "seed": seed,
        },
        "outlier_index": LVAE_N_SAMPLED,
        "outlier_label": OUTLIER_LABEL,
        **_label_meta("mnist"),
    }
    return Prepared(Split(x_train, y_train), Split(_binarise(test_images), test_labels), meta)
