"""MNIST-family preparation: IDX parsing and the five image variants (synthetic raw files and the mirror)."""

from __future__ import annotations

import gzip
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from raw_fixtures import write_idx, write_mnist_like
from torchvision import transforms

from dpvae.data import images, load_prepared
from dpvae.data.errors import DataError


def torchvision_fashion_32(image: np.ndarray) -> np.ndarray:
    """Mathieu et al.'s transform: Resize((32, 32)) on the PIL image, ToTensor, clamp to [1e-6, 1-1e-6]."""
    pipeline = transforms.Compose(
        [transforms.Resize(size=(32, 32)), transforms.ToTensor(), transforms.Lambda(lambda p: p.clamp(1e-6, 1 - 1e-6))]
    )
    return pipeline(Image.fromarray(image)).numpy()


def row_counts(rows: np.ndarray) -> Counter:
    return Counter(row.tobytes() for row in rows.reshape(len(rows), -1))


@pytest.fixture
def small_raw(tmp_path: Path) -> tuple[Path, np.ndarray, np.ndarray]:
    """An MNIST-like raw directory with 20 train and 10 test random images; returns (dir, train, test)."""
    rng = np.random.default_rng(0)
    train, test = rng.integers(0, 256, (20, 28, 28), dtype=np.uint8), rng.integers(0, 256, (10, 28, 28), dtype=np.uint8)
    write_mnist_like(tmp_path, train, np.arange(20) % 10, test, np.arange(10))
    return tmp_path, train, test


def test_read_idx_round_trip_and_errors(tmp_path: Path) -> None:
    array = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
    write_idx(tmp_path / "a.gz", array)
    np.testing.assert_array_equal(images.read_idx(tmp_path / "a.gz"), array)

    with gzip.open(tmp_path / "int.gz", "wb") as stream:
        stream.write(b"\x00\x00\x0c\x01" + (3).to_bytes(4, "big") + b"\x00" * 12)  # int32 IDX: not supported
    with pytest.raises(DataError, match="int.gz: not an unsigned-byte IDX"):
        images.read_idx(tmp_path / "int.gz")

    with gzip.open(tmp_path / "short.gz", "wb") as stream:
        stream.write(b"\x00\x00\x08\x01" + (5).to_bytes(4, "big") + b"\x00" * 4)
    with pytest.raises(DataError, match="short.gz: header promises shape"):
        images.read_idx(tmp_path / "short.gz")

    (tmp_path / "garbage.gz").write_bytes(b"not gzip at all")
    with pytest.raises(DataError, match="garbage.gz: cannot read"):
        images.read_idx(tmp_path / "garbage.gz")


def test_official_is_pixel_over_255_with_channel_axis(small_raw: tuple[Path, np.ndarray, np.ndarray]) -> None:
    raw_dir, train, test = small_raw
    built = images.build_official(raw_dir, 0, family="mnist")
    assert built.train.x.shape == (20, 1, 28, 28) and built.test.x.shape == (10, 1, 28, 28)
    np.testing.assert_array_equal(built.train.x[:, 0] * np.float32(255), train.astype(np.float32))
    np.testing.assert_array_equal(built.test.y, np.arange(10))


def test_p3gm_concatenates_flattens_and_holds_out_ten_percent(small_raw: tuple[Path, np.ndarray, np.ndarray]) -> None:
    raw_dir, train, test = small_raw
    built = images.build_p3gm(raw_dir, 0, family="fashion-mnist")
    assert built.train.x.shape == (27, 784) and built.test.x.shape == (3, 784)
    every = np.concatenate([built.train.x, built.test.x])
    assert row_counts(np.rint(every * 255).astype(np.uint8)) == row_counts(np.concatenate([train, test]))
    assert built.meta["label_names"][9] == "Ankle boot"


def test_fashion_32_matches_torchvision_pipeline(small_raw: tuple[Path, np.ndarray, np.ndarray]) -> None:
    raw_dir, train, _ = small_raw
    built = images.build_fashion_32(raw_dir, 0)
    assert built.train.x.shape == (20, 1, 32, 32)
    expected = np.stack([torchvision_fashion_32(image) for image in train])
    np.testing.assert_array_equal(built.train.x, expected)


def test_lvae_binarises_at_half_and_appends_one_white_outlier(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    train = rng.choice(np.array([0, 127, 128, 255], dtype=np.uint8), size=(10_000, 28, 28))
    test = np.full((3, 28, 28), 127, dtype=np.uint8)
    test[0] = 128
    write_mnist_like(tmp_path, train, np.arange(10_000) % 10, test, np.zeros(3))
    built = images.build_lvae(tmp_path, seed=0)
    outlier = built.meta["outlier_index"]
    assert built.train.x.shape == (10_000, 1, 28, 28) and outlier == 9_999
    assert built.train.x[outlier].min() == 1.0 and built.train.y[outlier] == -1
    assert np.array_equal(built.test.x[:, 0, 0, 0], [1.0, 0.0, 0.0]), "pixel 128 -> 1, 127 -> 0"
    binarised_pool = row_counts((train >= 128).astype(np.float32))
    kept = built.train.x[np.arange(10_000) != outlier, 0]
    assert all(binarised_pool[row] > 0 for row in row_counts(kept)), "non-outliers are binarised MNIST-train images"
    assert len(row_counts(kept)) == 9_999, "draws are without replacement"


def test_prepare_is_deterministic_per_seed(small_raw: tuple[Path, np.ndarray, np.ndarray]) -> None:
    raw_dir, _, _ = small_raw
    first, again, other = (images.build_p3gm(raw_dir, seed, family="mnist") for seed in (0, 0, 1))
    np.testing.assert_array_equal(first.train.x, again.train.x)
    np.testing.assert_array_equal(first.test.y, again.test.y)
    assert not np.array_equal(first.test.x, other.test.x)


# ---- prepared from the offline mirror (real data) -------------------------------------------------


def test_mirror_mnist_and_fashion_official(prepared_from_mirror: Callable[[str], Path]) -> None:
    class_count_ranges = {"mnist": ((5421, 6742), (892, 1135)), "fashion-mnist": ((6000, 6000), (1000, 1000))}
    for dataset_id, (train_range, test_range) in class_count_ranges.items():
        prepared = load_prepared(prepared_from_mirror(dataset_id))
        assert prepared.train.x.shape == (60_000, 1, 28, 28) and prepared.test.x.shape == (10_000, 1, 28, 28)
        assert prepared.train.x.min() == 0.0 and prepared.train.x.max() == 1.0
        for split, (low, high) in ((prepared.train, train_range), (prepared.test, test_range)):
            counts = np.bincount(split.y, minlength=10)
            assert counts.min() == low and counts.max() == high
        assert prepared.meta["raw_files_sha256"]["train-images-idx3-ubyte.gz"] == next(
            f.sha256
            for f in (images.MNIST_FILES if dataset_id == "mnist" else images.FASHION_MNIST_FILES)
            if f.filename == "train-images-idx3-ubyte.gz"
        )


def test_mirror_mnist_p3gm_is_a_70k_holdout_of_all_images(prepared_from_mirror: Callable[[str], Path]) -> None:
    p3gm, official = load_prepared(prepared_from_mirror("mnist-p3gm")), load_prepared(prepared_from_mirror("mnist"))
    assert p3gm.train.x.shape == (63_000, 784) and p3gm.test.x.shape == (7_000, 784)
    every = np.concatenate([p3gm.train.x, p3gm.test.x])
    assert row_counts(every) == row_counts(np.concatenate([official.train.x, official.test.x]))
    labels = np.concatenate([p3gm.train.y, p3gm.test.y])
    assert np.array_equal(np.bincount(labels), np.bincount(np.concatenate([official.train.y, official.test.y])))


def test_mirror_fashion_32_range_and_torchvision_agreement(
    prepared_from_mirror: Callable[[str], Path], mirror: Path
) -> None:
    prepared = load_prepared(prepared_from_mirror("fashion-mnist-32"))
    assert prepared.train.x.shape == (60_000, 1, 32, 32) and prepared.test.x.shape == (10_000, 1, 32, 32)
    assert prepared.train.x.min() >= np.float32(1e-6) and prepared.train.x.max() <= np.float32(1 - 1e-6)
    raw_test = images.read_idx(mirror / "fashion-mnist" / "t10k-images-idx3-ubyte.gz")
    picks = np.random.default_rng(0).choice(10_000, 64, replace=False)
    expected = np.stack([torchvision_fashion_32(raw_test[index]) for index in picks])
    np.testing.assert_array_equal(prepared.test.x[picks], expected)


def test_mirror_mnist_lvae(prepared_from_mirror: Callable[[str], Path], mirror: Path) -> None:
    prepared = load_prepared(prepared_from_mirror("mnist-lvae"))
    outlier = prepared.meta["outlier_index"]
    assert prepared.train.x.shape == (10_000, 1, 28, 28) and prepared.test.x.shape == (10_000, 1, 28, 28)
    assert set(np.unique(prepared.train.x)) == {0.0, 1.0}
    white = prepared.train.x.reshape(10_000, -1).min(axis=1) == 1.0
    assert np.flatnonzero(white).tolist() == [outlier] and prepared.train.y[outlier] == -1
    raw_test = images.read_idx(mirror / "mnist" / "t10k-images-idx3-ubyte.gz")
    np.testing.assert_array_equal(prepared.test.x[:, 0], (raw_test >= 128).astype(np.float32))
    assert prepared.train.y[np.arange(10_000) != outlier].min() >= 0
