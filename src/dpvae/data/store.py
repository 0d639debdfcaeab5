"""The one canonical prepared format, and the seeded holdout split every preparer shares.

A prepared dataset is a directory ``<root>/prepared/<dataset_id>/`` holding ``train.npz`` and
``test.npz`` and ``meta.json``. Loaded, a split is ``x`` float32 of shape (N, ...) and ``y`` int64 of
shape (N,). On disk (format 2) the ``.npz`` files are deflate-compressed and byte-deterministic, and an
``x`` with at most 256 distinct values (every image set) is stored as ``x_codes`` uint8 with its
``x_levels`` float32, so ``x = x_levels[x_codes]`` reproduces the float32 values bit for bit; other
``x`` are stored as float32. ``meta.json`` records the sha256 of both ``.npz`` files, checked on every
load, so a truncated or altered file is refused (naming it), never used.
`write_prepared` builds the directory under a temporary name next to the target and renames it into
place (`dpvae.files.atomic_directory`), so a reader never sees a half-written dataset.
"""

from __future__ import annotations

import hashlib
import json
import math
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dpvae.data.errors import DataError
from dpvae.files import atomic_directory
from dpvae.paths import PREPARED_META

FORMAT_VERSION = 2
SPLIT_NAMES = ("train", "test")
PALETTE_MAX_LEVELS = 256  # an x with at most this many distinct values is stored as uint8 codes
ZIP_DATE = (1980, 1, 1, 0, 0, 0)  # fixed member timestamps: the same arrays give the same bytes


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

    def subset_train(self, rows: np.ndarray) -> Prepared:
        """The same dataset with only the given training rows (e.g. a seeded smoke-scale subsample)."""
        meta = {**self.meta, "train_subset": {"n": int(len(rows)), "of": len(self.train)}}
        return Prepared(Split(self.train.x[rows], self.train.y[rows]), self.test, meta)


def holdout_rows(n_records: int, *, seed: int, test_fraction: float = 0.1) -> tuple[np.ndarray, np.ndarray, dict]:
    """Row indices (train, test) of the seeded holdout of ``n_records`` and its description (`holdout_split`)."""
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    n_test = math.ceil(test_fraction * n_records)
    if not 0 < n_test < n_records:
        raise ValueError(f"x/y with {n_records} records is too small for test_fraction={test_fraction}")
    order = np.random.default_rng(seed).permutation(n_records)
    rule = {
        "rule": "seeded random holdout: numpy default_rng(seed).permutation, "
        f"first ceil({test_fraction}*N) rows -> test",
        "test_fraction": test_fraction,
        "seed": seed,
    }
    return order[n_test:], order[:n_test], rule


def holdout_split(x: np.ndarray, y: np.ndarray, *, seed: int, test_fraction: float = 0.1) -> tuple[Split, Split, dict]:
    """Shuffle the records with ``numpy.random.default_rng(seed)`` and hold out ``ceil(test_fraction * N)``.

    The test size follows scikit-learn's ``train_test_split`` rule (P3GM's split), but the permutation is
    seeded. Returns (train, test, split description for ``meta.json``); both splits keep the shuffled order.
    """
    train_rows, test_rows, rule = holdout_rows(len(y), seed=seed, test_fraction=test_fraction)
    return Split(x[train_rows], y[train_rows]), Split(x[test_rows], y[test_rows]), rule


def write_prepared(out_dir: str | Path, train: Split, test: Split, meta: dict[str, Any]) -> Path:
    """Write ``train.npz``, ``test.npz`` and ``meta.json`` to ``out_dir`` atomically; return ``out_dir``.

    ``meta`` is completed with the format version, the shapes and the sha256 of both ``.npz`` files (nothing
    computed from the values: no observed range, no storage that depends on how many distinct values they hold).
    An existing ``out_dir`` is replaced only after the new one is complete. The same arrays and meta give the same
    bytes.
    """
    out_dir = Path(out_dir)
    if train.x.shape[1:] != test.x.shape[1:]:
        raise ValueError(f"train and test x must share their record shape, got {train.x.shape} and {test.x.shape}")
    full_meta = {
        **meta,
        "format_version": FORMAT_VERSION,
        "shapes": {"train": list(train.x.shape), "test": list(test.x.shape)},
    }
    json.dumps(full_meta, default=_json_default)  # fail on a non-serialisable meta before writing anything
    with atomic_directory(out_dir) as staging:
        checksums = {}
        for name, split in zip(SPLIT_NAMES, (train, test)):
            checksums[f"{name}.npz"] = save_npz(staging / f"{name}.npz", {**encode_x(split.x), "y": split.y})
        full_meta["files_sha256"] = checksums
        meta_text = json.dumps(full_meta, indent=2, sort_keys=True, default=_json_default)
        (staging / PREPARED_META).write_text(meta_text + "\n")
    return out_dir


def load_prepared(path: str | Path) -> Prepared:
    """Load a directory written by `write_prepared`; a missing, corrupted or inconsistent file raises `DataError`.

    The error names the file and says how to rebuild it (the rebuilt files have the same bytes).
    """
    path = Path(path)
    meta_path = path / PREPARED_META
    if not meta_path.is_file():
        raise DataError(f"prepared dataset is missing {meta_path}; {_rebuild_hint(path)}")
    try:
        meta = json.loads(meta_path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise DataError(f"{meta_path} is not valid JSON ({error}); {_rebuild_hint(path)}") from None
    if not isinstance(meta, dict) or not all(name in meta.get("shapes", {}) for name in SPLIT_NAMES):
        raise DataError(f"{meta_path} does not describe a prepared dataset (no shapes); {_rebuild_hint(path)}")
    checksums = meta.get("files_sha256", {})
    splits = {}
    for name in SPLIT_NAMES:
        file = path / f"{name}.npz"
        if not file.is_file():
            raise DataError(f"prepared dataset is missing {file}; {_rebuild_hint(path)}")
        expected = checksums.get(file.name)
        if expected is None and meta.get("format_version", 1) >= 2:
            raise DataError(f"{meta_path} records no sha256 of {file.name}; {_rebuild_hint(path)}")
        if expected is not None and (actual := _sha256(file)) != expected:
            raise DataError(
                f"{file} is corrupted: sha256 expected {expected} ({meta_path.name}), actual {actual}; "
                f"{_rebuild_hint(path)}"
            )
        try:
            with np.load(file, allow_pickle=False) as arrays:
                split = Split(decode_x(arrays, file), arrays["y"])
        except (KeyError, ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error) as error:
            raise DataError(f"{file} is not a valid split ({error}); {_rebuild_hint(path)}") from None
        if list(split.x.shape) != meta["shapes"][name]:
            raise DataError(
                f"{file} has x shape {list(split.x.shape)}, {meta_path.name} says {meta['shapes'][name]}; "
                f"{_rebuild_hint(path)}"
            )
        splits[name] = split
    return Prepared(train=splits["train"], test=splits["test"], meta=meta)


def encode_x(x: np.ndarray) -> dict[str, np.ndarray]:
    """``{"x_codes": uint8, "x_levels": float32}`` when that reproduces ``x`` bit for bit, else ``{"x": x}``."""
    flat = x.reshape(-1)
    if len(np.unique(flat[: 1 << 16])) > PALETTE_MAX_LEVELS:  # cheap early exit for continuous data
        return {"x": x}
    levels = np.unique(flat)
    if len(levels) > PALETTE_MAX_LEVELS or np.isnan(levels).any():
        return {"x": x}
    codes = np.searchsorted(levels, x).astype(np.uint8)
    if not np.array_equal(levels[codes].view(np.uint32), x.view(np.uint32)):  # e.g. -0.0 vs 0.0
        return {"x": x}
    return {"x_codes": codes, "x_levels": levels}


def decode_x(arrays: Any, file: Path) -> np.ndarray:
    """The float32 ``x`` of an opened ``.npz`` (format 1: ``x``; format 2: ``x`` or ``x_codes``/``x_levels``)."""
    if "x_codes" in arrays:
        codes, levels = arrays["x_codes"], arrays["x_levels"]
        if codes.dtype != np.uint8 or levels.dtype != np.float32 or levels.ndim != 1:
            raise ValueError(f"x_codes must be uint8 and x_levels float32 (N,), got {codes.dtype}, {levels.dtype}")
        if codes.size and int(codes.max()) >= len(levels):
            raise ValueError(f"x_codes reach {int(codes.max())} but there are {len(levels)} x_levels")
        return levels[codes]
    return arrays["x"]


def save_npz(path: Path, arrays: dict[str, np.ndarray]) -> str:
    """Write ``arrays`` as a deflate-compressed ``.npz`` with fixed member timestamps; return its sha256."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, array in arrays.items():
            member = zipfile.ZipInfo(f"{name}.npy", date_time=ZIP_DATE)
            member.compress_type = zipfile.ZIP_DEFLATED
            with archive.open(member, "w", force_zip64=True) as stream:
                np.lib.format.write_array(stream, np.asarray(array, order="C"), allow_pickle=False)  # 0-d stays 0-d
    return _sha256(path)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _rebuild_hint(path: Path) -> str:
    return (
        f"delete {path} and run the same command again: Snakemake prepares it anew from the verified raw "
        f"files (or run `python -m dpvae prepare --dataset {path.name} --root {path.parent.parent}`)"
    )


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
