"""CelebA 32×32 preparation on a small fixture in the official raw layout (zip + partition + attributes)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from raw_fixtures import write_celeba

from dpvae.data import celeba
from dpvae.data.errors import DataError

PARTITIONS = [0, 0, 1, 0, 2, 0, 2, 0, 0, 1, 2, 0]
MALE = [1, 0, 1, 1, 0, 0, 1, 0, 1, 0, 0, 1]


@pytest.fixture
def celeba_raw(tmp_path: Path) -> Path:
    write_celeba(tmp_path, PARTITIONS, MALE, np.random.default_rng(0))
    return tmp_path


def test_celeba_draws_train_from_the_train_partition_and_keeps_the_test_partition(celeba_raw: Path) -> None:
    built = celeba.build_celeba(celeba_raw, seed=0, n_train=5)
    assert built.train.x.shape == (5, 3, 32, 32) and built.test.x.shape == (3, 3, 32, 32)
    assert built.test.y.tolist() == [0, 1, 0], "test = images 5, 7, 11 in file order, y = Male"
    train_pool_male = {MALE[index] for index, part in enumerate(PARTITIONS) if part == 0}
    assert set(built.train.y.tolist()) <= train_pool_male and built.meta["label_names"] == ["female", "male"]
    assert 0.0 <= built.train.x.min() and built.train.x.max() <= 1.0


def test_celeba_centre_crop_removes_the_top_and_bottom_bands(celeba_raw: Path) -> None:
    built = celeba.build_celeba(celeba_raw, seed=0, n_train=2)
    red, green = built.test.x[:, 0], built.test.x[:, 1]
    assert red.max() < 0.15, "red bands (rows 0-19 and 198-217) must be cropped away"
    assert green.min() > 0.7


def test_centre_square_resize_matches_torchvision_crop_offsets() -> None:
    pixels = np.zeros((218, 178, 3), dtype=np.uint8)
    pixels[20:198] = 255
    square = celeba.centre_square_resize(Image.fromarray(pixels), 178)
    assert square.shape == (178, 178, 3) and square.min() == 255
    shifted = celeba.centre_square_resize(Image.fromarray(np.roll(pixels, 1, axis=0)), 178)
    assert shifted.min() == 0, "an off-centre band must show: the crop is at rows 20..197"


def test_celeba_seed_selects_a_different_subset_deterministically(celeba_raw: Path) -> None:
    first, again, other = (celeba.build_celeba(celeba_raw, seed=seed, n_train=3) for seed in (0, 0, 4))
    np.testing.assert_array_equal(first.train.x, again.train.x)
    assert not np.array_equal(first.train.x, other.train.x)


def test_celeba_errors(celeba_raw: Path) -> None:
    with pytest.raises(ValueError, match="n_train=8 exceeds the 7 images"):
        celeba.build_celeba(celeba_raw, seed=0, n_train=8)
    (celeba_raw / "list_eval_partition.txt").write_text("999999.jpg 0\n")
    with pytest.raises(DataError, match="999999.jpg"):
        celeba.build_celeba(celeba_raw, seed=0, n_train=1)
    (celeba_raw / "list_eval_partition.txt").write_text("000001.jpg 7\n")
    with pytest.raises(DataError, match="list_eval_partition.txt"):
        celeba.read_partition(celeba_raw / "list_eval_partition.txt")
    (celeba_raw / "list_attr_celeba.txt").write_text("1\nYoung\n000001.jpg 1\n")
    with pytest.raises(DataError, match="'Male'"):
        celeba.read_attributes(celeba_raw / "list_attr_celeba.txt")
