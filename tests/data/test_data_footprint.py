"""The prepared format on disk: uint8 codes for images, compression, byte-determinism, checksums on load.

Loading must give exactly the float32 values the preparers compute (bit for bit), however they are stored.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from dpvae.data import store
from dpvae.data.errors import DataError
from dpvae.data.registry import get_dataset
from dpvae.data.store import Split, load_prepared, write_prepared


def members(npz: Path) -> set[str]:
    with zipfile.ZipFile(npz) as archive:
        return {name.removesuffix(".npy") for name in archive.namelist()}


def bits(x: np.ndarray) -> np.ndarray:
    return x.view(np.uint32)


def image_split(n: int, seed: int, low: float = 0.0, high: float = 1.0) -> Split:
    """Images as the preparers make them: pixel / 255 in float32, optionally clamped."""
    pixels = np.random.default_rng(seed).integers(0, 256, size=(n, 1, 8, 8), dtype=np.uint8)
    x = np.clip(pixels.astype(np.float32) / np.float32(255), np.float32(low), np.float32(high))
    return Split(x, np.arange(n, dtype=np.int64) % 10)


@pytest.mark.parametrize(("low", "high"), [(0.0, 1.0), (1e-6, 1 - 1e-6)])
def test_images_are_stored_as_uint8_codes_and_load_bit_for_bit(tmp_path: Path, low: float, high: float) -> None:
    train, test = image_split(300, 0, low, high), image_split(50, 1, low, high)
    out = write_prepared(tmp_path / "toy", train, test, {})
    assert members(out / "train.npz") == {"x_codes", "x_levels", "y"}
    with np.load(out / "train.npz") as arrays:
        assert arrays["x_codes"].dtype == np.uint8 and arrays["x_levels"].dtype == np.float32
    loaded = load_prepared(out)
    assert loaded.train.x.dtype == np.float32 and loaded.train.x.shape == train.x.shape
    assert np.array_equal(bits(loaded.train.x), bits(train.x)) and np.array_equal(bits(loaded.test.x), bits(test.x))
    assert (out / "train.npz").stat().st_size < train.x.nbytes / 3


def test_continuous_data_and_signed_zeros_stay_float32(tmp_path: Path) -> None:
    continuous = Split(np.random.default_rng(0).normal(size=(400, 3)).astype(np.float32), np.zeros(400, np.int64))
    signed = np.zeros((4, 3), np.float32)
    signed[0, 0] = -0.0
    zeros = Split(signed, np.zeros(4, np.int64))
    out = write_prepared(tmp_path / "toy", continuous, zeros, {})
    assert members(out / "train.npz") == members(out / "test.npz") == {"x", "y"}
    loaded = load_prepared(out)
    assert np.array_equal(bits(loaded.train.x), bits(continuous.x))
    assert np.signbit(loaded.test.x[0, 0]) and not np.signbit(loaded.test.x[0, 1])


def test_same_arrays_give_the_same_bytes(tmp_path: Path) -> None:
    train, test = image_split(100, 0), image_split(20, 1)
    first = write_prepared(tmp_path / "a" / "toy", train, test, {"seed": 0})
    second = write_prepared(tmp_path / "b" / "toy", train, test, {"seed": 0})
    for name in ("train.npz", "test.npz", "meta.json"):
        assert (first / name).read_bytes() == (second / name).read_bytes(), name


def test_format_1_directories_still_load(tmp_path: Path) -> None:
    """Directories prepared before format 2 (plain float32 np.savez, no checksums) stay readable."""
    out = tmp_path / "old"
    out.mkdir()
    split = image_split(10, 0)
    for name in ("train", "test"):
        np.savez(out / f"{name}.npz", x=split.x, y=split.y)
    meta = {"format_version": 1, "shapes": {"train": list(split.x.shape), "test": list(split.x.shape)}}
    (out / "meta.json").write_text(json.dumps(meta))
    assert np.array_equal(load_prepared(out).train.x, split.x)


def corrupt(path: Path, how: str) -> None:
    data = path.read_bytes()
    if how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif how == "same-size garbage":
        path.write_bytes(np.random.default_rng(0).integers(0, 256, len(data), dtype=np.uint8).tobytes())
    elif how == "one byte changed":
        middle = len(data) // 2
        path.write_bytes(data[:middle] + bytes([data[middle] ^ 1]) + data[middle + 1 :])
    else:
        raise AssertionError(how)


@pytest.mark.parametrize("how", ["truncated", "same-size garbage", "one byte changed"])
def test_a_corrupted_prepared_file_is_refused_naming_it_and_saying_what_to_do(tmp_path: Path, how: str) -> None:
    out = write_prepared(tmp_path / "prepared" / "toy", image_split(200, 0), image_split(20, 1), {})
    corrupt(out / "train.npz", how)
    with pytest.raises(DataError) as error:
        load_prepared(out)
    message = str(error.value)
    assert f"{out / 'train.npz'} is corrupted: sha256 expected" in message
    assert f"delete {out} and run the same command again" in message


def test_garbage_meta_json_is_refused_naming_it(tmp_path: Path) -> None:
    out = write_prepared(tmp_path / "toy", image_split(20, 0), image_split(20, 1), {})
    for garbage in (b"\xff\xfe\x00binary", b"[1, 2]", b'{"shapes": {}}'):
        (out / "meta.json").write_bytes(garbage)
        with pytest.raises(DataError, match=str(out / "meta.json")):
            load_prepared(out)


def test_a_split_with_codes_beyond_its_levels_is_refused(tmp_path: Path) -> None:
    out = write_prepared(tmp_path / "toy", image_split(20, 0), image_split(20, 1), {})
    codes = np.full((20, 1, 8, 8), 255, np.uint8)
    arrays = {"x_codes": codes, "x_levels": np.array([0.0, 1.0], np.float32), "y": np.zeros(20, np.int64)}
    meta = json.loads((out / "meta.json").read_text())
    meta["files_sha256"]["test.npz"] = store.save_npz(out / "test.npz", arrays)
    (out / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(DataError, match=f"{out / 'test.npz'} is not a valid split .*x_codes reach 255"):
        load_prepared(out)


# ---- the real image sets (offline mirror) ------------------------------------------------------------


@pytest.mark.parametrize("dataset_id", ["mnist", "fashion-mnist-32", "mnist-p3gm", "mnist-lvae"])
def test_real_image_sets_load_exactly_as_their_preparers_compute_them(
    dataset_id: str, prepared_from_mirror: Callable[[str], Path]
) -> None:
    path = prepared_from_mirror(dataset_id)
    spec = get_dataset(dataset_id)
    built = spec.build(path.parent.parent / "raw" / spec.source, 0)
    loaded = load_prepared(path)
    for name in ("train", "test"):
        expected, actual = getattr(built, name), getattr(loaded, name)
        assert actual.x.dtype == np.float32 and np.array_equal(bits(actual.x), bits(expected.x)), name
        assert np.array_equal(actual.y, expected.y), name
    on_disk = sum(f.stat().st_size for f in path.glob("*.npz"))
    assert on_disk < (built.train.x.nbytes + built.test.x.nbytes) / 4, "uint8 codes: at most a quarter of float32"
