"""Generated data: pinwheel geometry (MATLAB axis swap, clockwise rotation) and two-Gaussian moments."""

from __future__ import annotations

import numpy as np
import pytest

from dpvae.data import synthetic


@pytest.fixture(scope="module")
def big_pinwheel() -> tuple[np.ndarray, np.ndarray]:
    options = synthetic.PINWHEEL_OPTIONS | {"num_per_class": 25_000}
    return synthetic.pinwheel(np.random.default_rng(0), **options)


def test_pinwheel_radius_spread_is_the_tangential_std_of_the_matlab_code(
    big_pinwheel: tuple[np.ndarray, np.ndarray],
) -> None:
    points, _ = big_pinwheel
    radius = np.hypot(points[:, 0], points[:, 1])
    # MATLAB: u = 1 + 0.3 e1 (radius), v = 0.1 e2; the usual Python port swaps them (radius std ~0.1).
    assert radius.std() == pytest.approx(0.3, abs=0.006)
    assert radius.mean() == pytest.approx(1.005, abs=0.005)


def test_pinwheel_points_lie_on_clockwise_spiral_arms(big_pinwheel: tuple[np.ndarray, np.ndarray]) -> None:
    points, classes = big_pinwheel
    radius = np.hypot(points[:, 0], points[:, 1])
    polar = np.arctan2(points[:, 1], points[:, 0])
    # (u, v) @ [[cos a, -sin a], [sin a, cos a]] rotates by -a, so polar = -a + atan2(v, u), a = 2πk/4 + 0.25 e^u.
    residual = np.angle(np.exp(1j * (polar + 2 * np.pi * classes / 4 + 0.25 * np.exp(radius))))
    offset = radius * np.sin(residual)  # = v exactly, up to using the radius for u inside e^u
    assert abs(offset.mean()) < 0.005
    assert offset.std() == pytest.approx(0.1, abs=0.004), "the second coordinate is scaled by radial_std = 0.1"


def test_pinwheel_classes_are_grouped_and_balanced(big_pinwheel: tuple[np.ndarray, np.ndarray]) -> None:
    _, classes = big_pinwheel
    assert np.array_equal(classes, np.repeat(np.arange(4), 25_000)) and classes.dtype == np.int64


def test_build_pinwheel_makes_two_independent_400_point_draws() -> None:
    built = synthetic.build_pinwheel(None, seed=0)
    assert built.train.x.shape == (400, 2) and built.test.x.shape == (400, 2) and built.train.x.dtype == np.float32
    assert np.bincount(built.train.y).tolist() == [100] * 4 and np.bincount(built.test.y).tolist() == [100] * 4
    assert not np.allclose(built.train.x, built.test.x)
    again, other = synthetic.build_pinwheel(None, seed=0), synthetic.build_pinwheel(None, seed=1)
    np.testing.assert_array_equal(built.test.x, again.test.x)
    assert not np.array_equal(built.train.x, other.train.x)


@pytest.mark.parametrize("dim", [1, 5, 20])
def test_two_gaussians_have_unit_covariance_and_opposite_means(dim: int) -> None:
    built = synthetic.build_two_gaussians(None, seed=0, dim=dim)
    assert built.train.x.shape == (18_000, dim) and built.test.x.shape == (2_000, dim)
    x = np.concatenate([built.train.x, built.test.x]).astype(np.float64)
    y = np.concatenate([built.train.y, built.test.y])
    assert np.array_equal(np.bincount(y), [10_000, 10_000])
    tolerance = 5 / np.sqrt(10_000)
    for label, sign in ((0, -1.0), (1, 1.0)):
        members = x[y == label]
        assert np.abs(members.mean(axis=0) - sign).max() < tolerance
        assert np.abs(np.atleast_2d(np.cov(members, rowvar=False)) - np.eye(dim)).max() < 0.06


def test_two_gaussians_reject_bad_dimension() -> None:
    with pytest.raises(ValueError, match="dim"):
        synthetic.two_gaussians(np.random.default_rng(0), 0, 10)


def test_celeba_standin_has_celeba32s_schema_and_says_it_is_a_stand_in(tmp_path):
    from dpvae.data import prepare_dataset
    from dpvae.data.registry import get_dataset
    from dpvae.data.store import load_prepared

    data = load_prepared(prepare_dataset("celeba32-standin", tmp_path, seed=0))
    assert data.train.x.shape[1:] == (3, 32, 32) and data.test.x.shape[1:] == (3, 32, 32)
    assert 0 <= data.train.x.min() and data.train.x.max() <= 1
    assert set(data.train.y) == {0, 1} and set(data.test.y) == {0, 1}
    assert "STAND-IN" in get_dataset("celeba32-standin").description
    assert data.meta["options"]["stand_in_for"] == "celeba32"
    # the label is learnable from the mean colour (what classifiers and generators get to learn)
    red_minus_blue = data.train.x[:, 0].mean((1, 2)) - data.train.x[:, 2].mean((1, 2))
    assert red_minus_blue[data.train.y == 1].mean() > red_minus_blue[data.train.y == 0].mean() + 0.2
