"""The one canonical prepared format, and the seeded holdout split every preparer shares.

A prepared dataset is a directory ``<root>/prepared/<dataset_id>/`` holding ``train.npz`` and
``test.npz`` (arrays ``x`` float32 of shape (N, ...) and ``y`` int64 of shape (N,)) and ``meta.json``.
`write_prepared` builds the directory under a temporary name next to the target and renames it into
place, so a reader never sees a half-written dataset.
"""

from __future__ import annotations

import json
import math
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dpvae.data.errors import DataError

FORMAT_VERSION = 1
SPLIT_NAMES = ("train", "test")


@dataclass(frozen=True)
class Split:
    """One split: inputs ``x`` (float32, first axis = records) and labels ``y`` (int64, one per record)."""

    x: np.ndarray
    y: np.ndarray

    def __post_init__(self) -> None:
        if not isinstance(self.x, np.ndarray) or self.x.dtype != np.float32 or self.x.ndim < 2:
            raise ValueError(f"x must be a float32 array of shape (N, ...), got {_describe(self.x)}")
        if not isinstance(self.y, np.ndarray) or self.y.dtype != np.int64 or self.y.ndim != 1:
            raise ValueError(f"y must be an int64 array of shape (N,), got {_describe(self.y)}")
        if len(self.x) != len(self.y):
            raise ValueError(f"x and y must have the same length, got {len(self.x)} and {len(self.y)}")

    def __len__(self) -> int:
        return len(self.y)


@dataclass(frozen=True)
class Prepared:
    """A loaded prepared dataset: its two splits and its metadata (``meta.json``)."""

    train: Split
    test: Split
    meta: dict[str, Any]

    def subset_train(self, rows: np.ndarray) -> "Prepared":
        """The same dataset with only the given training rows (e.g. a seeded smoke-scale subsample)."""
        meta = {**self.meta, "train_subset": {"n": int(len(rows)), "of": len(self.train)}}
        return Prepared(Split(self.train.x[rows], self.train.y[rows]), self.test, meta)


def holdout_split(x: np.ndarray, y: np.ndarray, *, seed: int, test_fraction: float = 0.1) -> tuple[Split, Split, dict]:
    """Shuffle the records with ``numpy.random.default_rng(seed)`` and hold out ``ceil(test_fraction * N)``.

    The test size follows scikit-learn's ``train_test_split`` rule (P3GM's split), but the permutation is
    seeded. Returns (train, test, split description for ``meta.json``); both splits keep the shuffled order.
    """
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    n_records = len(y)
    n_test = math.ceil(test_fraction * n_records)
    if not 0 < n_test < n_records:
        raise ValueError(f"x/y with {n_records} records is too small for test_fraction={test_fraction}")
    order = np.random.default_rng(seed).permutation(n_records)
    test_rows, train_rows = order[:n_test], order[n_test:]
    rule = {
        "rule": "seeded random holdout: numpy default_rng(seed).permutation, "
        f"first ceil({test_fraction}*N) rows -> test",
        "test_fraction": test_fraction,
        "seed": seed,
    }
    return Split(x[train_rows], y[train_rows]), Split(x[test_rows], y[test_rows]), rule


def write_prepared(out_dir: str | Path, train: Split, test: Split, meta: dict[str, Any]) -> Path:
    """Write ``train.npz``, ``test.npz`` and ``meta.json`` to ``out_dir`` atomically; return ``out_dir``.

    ``meta`` is completed with the format version, the shapes, and the observed value range of ``x``.
    An existing ``out_dir`` is replaced only after the new one is complete.
    """
    out_dir = Path(out_dir)
    if train.x.shape[1:] != test.x.shape[1:]:
        raise ValueError(f"train and test x must share their record shape, got {train.x.shape} and {test.x.shape}")
    full_meta = {
        **meta,
        "format_version": FORMAT_VERSION,
        "shapes": {"train": list(train.x.shape), "test": list(test.x.shape)},
        "x_observed_range": [
            float(min(train.x.min(), test.x.min())),
            float(max(train.x.max(), test.x.max())),
        ],
    }
    meta_text = json.dumps(full_meta, indent=2, sort_keys=True, default=_json_default)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", suffix=".tmp", dir=out_dir.parent))
    try:
        for name, split in zip(SPLIT_NAMES, (train, test)):
            np.savez(staging / f"{name}.npz", x=split.x, y=split.y)
        (staging / "meta.json").write_text(meta_text + "\n")
        _swap_into_place(staging, out_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out_dir


def load_prepared(path: str | Path) -> Prepared:
    """Load a directory written by `write_prepared`; a missing or inconsistent file raises `DataError`."""
    path = Path(path)
    meta_path = path / "meta.json"
    if not meta_path.is_file():
        raise DataError(f"prepared dataset is missing {meta_path}")
    meta = json.loads(meta_path.read_text())
    splits = {}
    for name in SPLIT_NAMES:
        file = path / f"{name}.npz"
        if not file.is_file():
            raise DataError(f"prepared dataset is missing {file}")
        with np.load(file, allow_pickle=False) as arrays:
            try:
                split = Split(arrays["x"], arrays["y"])
            except (KeyError, ValueError) as error:
                raise DataError(f"{file} is not a valid split: {error}") from error
        if list(split.x.shape) != meta["shapes"][name]:
            raise DataError(f"{file} has x shape {list(split.x.shape)}, meta.json says {meta['shapes'][name]}")
        splits[name] = split
    return Prepared(train=splits["train"], test=splits["test"], meta=meta)


def _swap_into_place(staging: Path, out_dir: Path) -> None:
    """Rename ``staging`` to ``out_dir``, moving an older ``out_dir`` aside first and deleting it after."""
    if not out_dir.exists():
        staging.rename(out_dir)
        return
    retired = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", suffix=".old", dir=out_dir.parent))
    retired.rmdir()
    out_dir.rename(retired)
    staging.rename(out_dir)
    shutil.rmtree(retired)


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"meta value {value!r} of type {type(value).__name__} is not JSON-serialisable")


def _describe(array: Any) -> str:
    if isinstance(array, np.ndarray):
        return f"{array.dtype} array of shape {array.shape}"
    return type(array).__name__
