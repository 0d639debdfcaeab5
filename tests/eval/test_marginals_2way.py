"""2-way marginal TVD: equal to a cell-by-cell reading of the notebook's recipe, under both binnings."""

from __future__ import annotations

import numpy as np
import pytest

from dpvae.eval.marginals_2way import bin_codes, data_matrix, tvd_2way


def naive(real: np.ndarray, synthetic: np.ndarray, binning: str) -> float:
    """show.ipynb read literally: digitize(x, 5 edges) - 1 per column; python's -1 indexes the last cell."""
    d, total = real.shape[1], 0.0
    for i in range(d):
        for j in range(d):
            hists = []
            for data in (real, synthetic):
                h = np.zeros((5, 5) if binning == "notebook" else (4, 4))
                for row in data:
                    a = np.digitize(row[i], np.linspace(real[:, i].min(), real[:, i].max(), 5)) - 1
                    b = np.digitize(row[j], np.linspace(real[:, j].min(), real[:, j].max(), 5)) - 1
                    if binning == "clipped":
                        a, b = min(max(a, 0), 3), min(max(b, 0), 3)
                    h[a, b] += 1
                hists.append(h / len(data))
            total += 0.5 * np.abs(hists[0] - hists[1]).sum()
    return total / d**2


@pytest.mark.parametrize("binning", ["clipped", "notebook"])
def test_tvd_equals_the_literal_recipe(binning):
    rng = np.random.default_rng(0)
    real, synthetic = rng.random((300, 4)), rng.random((200, 4)) * 1.3 - 0.15  # values outside the real range
    # float64 sums of at most 6 x 25 x 2 bin frequencies: exact to ~300 u ≈ 3e-14, so abs 1e-12 is a rounding bound
    assert tvd_2way(real, synthetic, 5, binning) == pytest.approx(naive(real, synthetic, binning), abs=1e-12)
    assert abs(tvd_2way(real, synthetic * 1.01, 5, binning) - naive(real, synthetic, binning)) > 100 * 1e-12


def test_notebook_binning_wraps_values_below_the_minimum_to_the_last_cell():
    low, high = np.array([0.0]), np.array([1.0])
    codes, cells = bin_codes(np.array([[-0.5], [0.0], [0.3], [0.999], [1.0], [2.0]]), low, high, 5, "notebook")
    assert cells == 5 and codes.ravel().tolist() == [4, 0, 1, 3, 4, 4]
    codes, cells = bin_codes(np.array([[-0.5], [0.0], [0.3], [0.999], [1.0], [2.0]]), low, high, 5, "clipped")
    assert cells == 4 and codes.ravel().tolist() == [0, 0, 1, 3, 3, 3]


def test_identical_data_is_at_distance_zero_and_disjoint_data_far():
    rng = np.random.default_rng(1)
    real = rng.random((500, 3))
    assert tvd_2way(real, real) == 0.0
    shifted = np.clip(real + 10, None, None)
    assert tvd_2way(real, shifted) > 0.5


def test_labels_enter_one_hot():
    x, y = np.zeros((3, 2)), np.array([0, 2, 1])
    assert data_matrix(x, y, 3).tolist() == [[0, 0, 1, 0, 0], [0, 0, 0, 0, 1], [0, 0, 0, 1, 0]]
    assert data_matrix(x, y, 3, "none").shape == (3, 2)
