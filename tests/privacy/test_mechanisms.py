"""Tests of the DP mechanisms: sensitivity of every pre-noise aggregate, noise scales, exactness at σ = 0,
determinism and the ledger records each mechanism emits."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm
from sklearn.metrics import adjusted_rand_score
from sklearn.mixture import GaussianMixture

from dpvae.privacy.mechanisms import (
    clip_rows,
    dp_em_diagonal_gmm,
    dp_kmeans,
    dp_pca,
    em,
    gaussian_mechanism,
    kmeans,
    pca,
    random_fourier_features,
)

SAMPLING_TOLERANCE = 0.05  # relative; every std below is estimated from >= 5,000 draws (error < 1.5 %)
FLOAT_SLACK = 1e-9
fast_property = settings(max_examples=40, deadline=None)


def relative_error(estimate: float, target: float) -> float:
    return abs(estimate / target - 1.0)


@st.composite
def neighbouring_records(draw: st.DrawFn, max_dimension: int = 6) -> tuple[np.ndarray, int, np.ndarray]:
    """(records with rows of any scale, index of the record to remove/replace, its replacement)."""
    n = draw(st.integers(2, 12))
    d = draw(st.integers(1, max_dimension))
    seed = draw(st.integers(0, 2**32 - 1))
    scale = draw(st.sampled_from([0.1, 1.0, 30.0]))
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)) * scale, draw(st.integers(0, n - 1)), rng.normal(size=d) * scale


def remove_row(x: np.ndarray, index: int) -> np.ndarray:
    return np.delete(x, index, axis=0)


def replace_row(x: np.ndarray, index: int, row: np.ndarray) -> np.ndarray:
    replaced = x.copy()
    replaced[index] = row
    return replaced


def random_responsibilities(n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    r = rng.random((n, k)) ** 3  # skewed, so some rows are nearly one-hot
    return r / r.sum(axis=1, keepdims=True)


def well_separated_clusters(n: int, centres: np.ndarray, spread: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, len(centres), size=n)
    return centres[labels] + spread * rng.normal(size=(n, centres.shape[1])), labels


def closest_rows(estimate: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """For every row of `truth`, the index of the closest row of `estimate` (matches up to relabelling)."""
    return np.argmin(np.linalg.norm(estimate[None, :, :] - truth[:, None, :], axis=2), axis=1)


# ---------------------------------------------------------------------------------------------------
# Gaussian mechanism and clipping


def test_gaussian_mechanism_noise_std_is_multiplier_times_sensitivity() -> None:
    value = np.linspace(-3.0, 3.0, 20_000)
    noisy, record = gaussian_mechanism(value, 0.5, 3.0, np.random.default_rng(0), name="test")
    noise = noisy - value
    assert relative_error(noise.std(), 1.5) < SAMPLING_TOLERANCE
    assert abs(noise.mean()) < 4 * 1.5 / np.sqrt(noise.size)
    assert (record.name, record.noise_multiplier, record.sensitivity, record.steps) == ("test", 3.0, 0.5, 1)


def test_gaussian_mechanism_is_deterministic_under_a_seed() -> None:
    first, _ = gaussian_mechanism(np.zeros(5), 1.0, 1.0, np.random.default_rng(7))
    again, _ = gaussian_mechanism(np.zeros(5), 1.0, 1.0, np.random.default_rng(7))
    other, _ = gaussian_mechanism(np.zeros(5), 1.0, 1.0, np.random.default_rng(8))
    np.testing.assert_array_equal(first, again)
    assert not np.allclose(first, other)


@pytest.mark.parametrize(
    ("sensitivity", "noise_multiplier", "message"),
    [
        (0.0, 1.0, "sensitivity"),
        (-1.0, 1.0, "sensitivity"),
        (1.0, -0.1, "noise_multiplier"),
        (1.0, float("nan"), "noise_multiplier"),
    ],
)
def test_gaussian_mechanism_rejects_bad_arguments(sensitivity: float, noise_multiplier: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        gaussian_mechanism(np.zeros(3), sensitivity, noise_multiplier, np.random.default_rng(0))


def test_mechanisms_refuse_a_legacy_random_state() -> None:
    with pytest.raises(TypeError, match="rng"):
        gaussian_mechanism(np.zeros(3), 1.0, 1.0, np.random.RandomState(0))  # type: ignore[arg-type]


@fast_property
@given(neighbouring_records(), st.sampled_from([0.5, 1.0, 2.0]))
def test_clip_rows_bounds_norms_and_keeps_short_rows_and_directions(
    case: tuple[np.ndarray, int, np.ndarray], max_norm: float
) -> None:
    x = case[0]
    clipped = clip_rows(x, max_norm)
    norms = np.linalg.norm(x, axis=1)
    assert np.all(np.linalg.norm(clipped, axis=1) <= max_norm * (1 + FLOAT_SLACK))
    np.testing.assert_array_equal(clipped[norms <= max_norm], x[norms <= max_norm])
    cosine = np.sum(clipped * x, axis=1) / (np.linalg.norm(clipped, axis=1) * norms)
    np.testing.assert_allclose(cosine, 1.0)


# ---------------------------------------------------------------------------------------------------
# DP-PCA


@fast_property
@given(neighbouring_records())
def test_pca_aggregate_moves_at_most_one_on_remove_and_sqrt2_on_replace(
    case: tuple[np.ndarray, int, np.ndarray],
) -> None:
    x, index, replacement = case
    public_mean = np.full(x.shape[1], 0.3)
    a = pca.clipped_second_moment(x, public_mean)
    removed = pca.clipped_second_moment(remove_row(x, index), public_mean)
    replaced = pca.clipped_second_moment(replace_row(x, index, replacement), public_mean)
    assert np.linalg.norm(a - removed) <= 1.0 + FLOAT_SLACK
    assert np.linalg.norm(a - replaced) <= np.sqrt(2.0) + FLOAT_SLACK


def test_pca_replace_one_sensitivity_sqrt2_is_attained() -> None:
    """Why the add/remove value 1 does not cover the paper's replace-one adjacency."""
    x = np.array([[1.0, 0.0], [0.0, 1.0]])
    changed = pca.clipped_second_moment(replace_row(x, 0, np.array([0.0, 1.0])), np.zeros(2))
    assert np.linalg.norm(pca.clipped_second_moment(x, np.zeros(2)) - changed) == pytest.approx(np.sqrt(2.0))


def test_pca_sensitivity_check_catches_missing_clipping(monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted bug: without row clipping one long row moves XᵀX by its squared norm."""
    monkeypatch.setattr(pca, "clip_rows", lambda rows: rows)
    x = np.array([[3.0, 0.0], [0.1, 0.2]])
    change = pca.clipped_second_moment(x, np.zeros(2)) - pca.clipped_second_moment(x[1:], np.zeros(2))
    assert np.linalg.norm(change) == pytest.approx(9.0)


def test_pca_with_the_nonprivate_mean_breaks_the_sensitivity_bound() -> None:
    """Counter-example: one outlier shifts the empirical mean, and with it every centred row."""
    x = np.zeros((50, 2))
    x[0] = [1000.0, 0.0]
    with_outlier = pca.clipped_second_moment(x, pca.resolve_mean(x, "nonprivate"))
    without = pca.clipped_second_moment(x[1:], pca.resolve_mean(x[1:], "nonprivate"))
    assert np.linalg.norm(with_outlier - without) > 10.0


def test_symmetric_noise_matrix_mirrors_an_iid_upper_triangle() -> None:
    noise = pca.symmetric_gaussian_noise(150, 0.8, np.random.default_rng(0))
    np.testing.assert_array_equal(noise, noise.T)
    upper = noise[np.triu_indices(150)]
    assert relative_error(upper.std(), 0.8) < SAMPLING_TOLERANCE
    assert relative_error(np.diag(noise).std(), 0.8) < 0.2  # only 150 diagonal draws
    assert abs(np.corrcoef(upper[:-1], upper[1:])[0, 1]) < 0.05


def test_dp_pca_noise_is_symmetric_with_the_stated_std() -> None:
    """Recover (A + E) from the full eigendecomposition: E must be symmetric with entry std σ_p."""
    rng = np.random.default_rng(1)
    x, n, d, sigma = rng.normal(size=(400, 120)), 400, 120, 2.5
    fit = dp_pca(x, d, sigma, np.random.default_rng(2), mean=0.0)
    noisy = fit.components @ np.diag(fit.eigenvalues) @ fit.components.T * n
    noise = noisy - pca.clipped_second_moment(x, np.zeros(d))
    np.testing.assert_allclose(noise, noise.T, atol=1e-9)
    upper = noise[np.triu_indices(d)]
    assert relative_error(upper.std(), sigma) < SAMPLING_TOLERANCE
    assert abs(upper.mean()) < 4 * sigma / np.sqrt(upper.size)


def test_dp_pca_without_noise_is_exact_pca_of_clipped_centred_rows() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(300, 6)) * np.array([3.0, 2.0, 1.5, 1.0, 0.5, 0.2]) + 4.0
    fit = dp_pca(x, 4, 0.0, np.random.default_rng(0), mean="nonprivate")
    clipped = clip_rows(x - x.mean(axis=0))
    _, singular_values, right_vectors = np.linalg.svd(clipped, full_matrices=False)
    np.testing.assert_allclose(fit.eigenvalues, singular_values[:4] ** 2 / len(x), rtol=1e-10)
    assert np.all(np.diff(fit.eigenvalues) < 0)
    np.testing.assert_allclose(np.abs(fit.components.T @ right_vectors[:4].T), np.eye(4), atol=1e-8)
    np.testing.assert_allclose(fit.mean, x.mean(axis=0))
    np.testing.assert_allclose(fit.transform(x), (x - x.mean(axis=0)) @ fit.components)


def test_dp_pca_is_deterministic_caps_components_and_records_its_mechanism() -> None:
    x = np.random.default_rng(4).normal(size=(50, 5))
    first = dp_pca(x, 9, 3.0, np.random.default_rng(5), mean=np.zeros(5))
    again = dp_pca(x, 9, 3.0, np.random.default_rng(5), mean=0)
    other = dp_pca(x, 9, 3.0, np.random.default_rng(6), mean=0)
    np.testing.assert_array_equal(first.components, again.components)
    assert first.components.shape == (5, 5)
    assert not np.allclose(first.eigenvalues, other.eigenvalues)
    assert (first.mechanism.name, first.mechanism.noise_multiplier, first.mechanism.sensitivity) == ("dp_pca", 3.0, 1.0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_components": 0}, "n_components"),
        ({"noise_multiplier": -1.0}, "noise_multiplier"),
        ({"mean": "empirical"}, "mean"),
        ({"mean": np.zeros(3)}, "mean"),
        ({"x": np.zeros(4)}, "x"),
    ],
)
def test_dp_pca_rejects_bad_arguments(kwargs: dict, message: str) -> None:
    arguments = {
        "x": np.zeros((4, 2)),
        "n_components": 1,
        "noise_multiplier": 1.0,
        "rng": np.random.default_rng(0),
        "mean": 0.0,
    } | kwargs
    with pytest.raises(ValueError, match=message):
        dp_pca(**arguments)


# ---------------------------------------------------------------------------------------------------
# DP-EM


def statistics_change(before: tuple[np.ndarray, ...], after: tuple[np.ndarray, ...]) -> tuple[float, ...]:
    """l2 change of the counts vector and the largest per-component l2 change of each moment sum."""
    counts = float(np.linalg.norm(before[0] - after[0]))
    return counts, *(float(np.linalg.norm(b - a, axis=1).max()) for b, a in zip(before[1:], after[1:]))


@fast_property
@given(neighbouring_records(), st.integers(1, 4), st.integers(0, 2**32 - 1))
def test_em_aggregates_respect_the_stated_sensitivities(
    case: tuple[np.ndarray, int, np.ndarray], k: int, seed: int
) -> None:
    x, index, replacement = case
    rng = np.random.default_rng(seed)
    resp = random_responsibilities(len(x), k, rng)
    replacement_resp = random_responsibilities(1, k, rng)
    z = clip_rows(x)
    base = em.mixture_statistics(z, resp)
    removed = em.mixture_statistics(remove_row(z, index), remove_row(resp, index))
    replaced = em.mixture_statistics(
        replace_row(z, index, clip_rows(replacement[None])[0]), replace_row(resp, index, replacement_resp[0])
    )
    tight_remove, tight_replace = (1.0, 1.0, 1.0), (np.sqrt(2.0), 2.0, np.sqrt(2.0))
    paper = (2.0, 2.0 * np.sqrt(x.shape[1]), 2.0 * np.sqrt(x.shape[1]))
    for change, bound, stated in zip(statistics_change(base, removed), tight_remove, paper):
        assert change <= min(bound, stated) + FLOAT_SLACK
    for change, bound, stated in zip(statistics_change(base, replaced), tight_replace, paper):
        assert change <= min(bound, stated) + FLOAT_SLACK


def test_em_sensitivity_check_catches_missing_clipping() -> None:
    """Planted bug: unclipped rows break the moment bounds (counts stay bounded either way)."""
    z = np.array([[4.0, 0.0], [0.1, 0.1]])
    resp = np.array([[1.0], [1.0]])
    before, after = em.mixture_statistics(z, resp), em.mixture_statistics(z[1:], resp[1:])
    _, first, second = statistics_change(before, after)
    assert first > 2.0 * np.sqrt(2.0) and second > 2.0 * np.sqrt(2.0)


def test_dp_em_clips_its_input_rows() -> None:
    """Scaling long rows further must not change the fit, and the means stay in the unit ball."""
    z, _ = well_separated_clusters(200, np.array([[5.0, 0.0], [0.0, 5.0]]), 0.5, seed=0)
    fit = dp_em_diagonal_gmm(z, 2, 5, 0.0, np.random.default_rng(0), account_initial_step=True)
    scaled = dp_em_diagonal_gmm(10 * z, 2, 5, 0.0, np.random.default_rng(0), account_initial_step=True)
    np.testing.assert_allclose(fit.means, scaled.means, atol=1e-12)
    assert np.all(np.linalg.norm(fit.means, axis=1) <= 1.0)


def test_em_noise_scales_are_2_sigma_on_counts_and_2_sqrt_d_sigma_on_moments() -> None:
    rng = np.random.default_rng(10)
    z, k, sigma, n_draws = clip_rows(rng.normal(size=(30, 4))), 3, 1.7, 2_000
    resp = random_responsibilities(30, k, rng)
    exact = em.mixture_statistics(z, resp)
    draws = [em.noisy_mixture_statistics(z, resp, sigma, rng) for _ in range(n_draws)]
    counts, sums, squares = (np.array([draw[i] for draw in draws]) - exact[i] for i in range(3))
    assert relative_error(counts.std(), 2 * sigma) < SAMPLING_TOLERANCE
    assert relative_error(sums.std(), 2 * np.sqrt(4) * sigma) < SAMPLING_TOLERANCE
    assert relative_error(squares.std(), 2 * np.sqrt(4) * sigma) < SAMPLING_TOLERANCE


def test_m_step_post_processing_gives_ml_estimates_and_floors() -> None:
    rng = np.random.default_rng(11)
    z, resp = clip_rows(rng.normal(size=(40, 3))), random_responsibilities(40, 2, rng)
    counts, sums, squares = em.mixture_statistics(z, resp)
    weights, means, variances = em.mixture_from_statistics(counts, sums, squares, None, reg_covar=1e-6)
    expected_means = (resp.T @ z) / counts[:, None]
    squared_deviations = (z[None, :, :] - expected_means[:, None, :]) ** 2
    expected_vars = (resp.T[:, :, None] * squared_deviations).sum(axis=1) / counts[:, None]
    np.testing.assert_allclose(weights, counts)
    np.testing.assert_allclose(means, expected_means)
    np.testing.assert_allclose(variances, expected_vars + 1e-6)

    bad_counts = np.array([-5.0, 0.0])
    previous = np.full((2, 3), 0.25)
    safe, _, floored = em.mixture_from_statistics(bad_counts, sums, -np.ones((2, 3)), None, reg_covar=0.0)
    _, _, kept = em.mixture_from_statistics(bad_counts, sums, -np.ones((2, 3)), previous, reg_covar=0.0)
    np.testing.assert_array_equal(safe, [1.0, 1.0])
    np.testing.assert_array_equal(floored, np.full((2, 3), em.INITIAL_VARIANCE_FLOOR))
    np.testing.assert_array_equal(kept, previous)


def test_e_step_matches_weighted_diagonal_gaussian_densities() -> None:
    rng = np.random.default_rng(12)
    z, weights = rng.normal(size=(10, 3)), np.array([0.2, 0.5, 0.3]) * 7.0  # unnormalised on purpose
    means, variances = rng.normal(size=(3, 3)), rng.uniform(0.1, 2.0, size=(3, 3))
    log_density = norm.logpdf(z[:, None, :], means, np.sqrt(variances)).sum(axis=2)
    expected = np.log(weights) + log_density
    expected -= np.log(np.exp(expected).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(em.log_responsibilities(z, weights, means, variances), expected, rtol=1e-10)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_dp_em_without_noise_recovers_well_separated_clusters(seed: int) -> None:
    centres = np.array([[0.6, 0.0], [-0.6, 0.1]])
    z, labels = well_separated_clusters(800, centres, 0.03, seed)
    fit = dp_em_diagonal_gmm(z, 2, 200, 0.0, np.random.default_rng(seed), account_initial_step=False)
    order = closest_rows(fit.means, centres)
    np.testing.assert_allclose(fit.means[order], centres, atol=0.01)
    np.testing.assert_allclose(fit.weights[order], np.bincount(labels) / len(z), atol=1e-3)
    reference = GaussianMixture(2, covariance_type="diag", reg_covar=1e-6, random_state=seed).fit(z)
    reference_order = closest_rows(reference.means_, centres)
    np.testing.assert_allclose(fit.means[order], reference.means_[reference_order], atol=1e-6)
    np.testing.assert_allclose(fit.variances[order], reference.covariances_[reference_order], rtol=1e-4)


def test_dp_em_is_deterministic_under_a_seed_and_noisy_otherwise() -> None:
    z, _ = well_separated_clusters(300, np.array([[0.5, 0.0], [-0.5, 0.0]]), 0.05, seed=3)
    first = dp_em_diagonal_gmm(z, 2, 10, 5.0, np.random.default_rng(4), account_initial_step=False)
    again = dp_em_diagonal_gmm(z, 2, 10, 5.0, np.random.default_rng(4), account_initial_step=False)
    other = dp_em_diagonal_gmm(z, 2, 10, 5.0, np.random.default_rng(5), account_initial_step=False)
    for name in ("weights", "means", "variances"):
        np.testing.assert_array_equal(getattr(first, name), getattr(again, name))
    assert not np.allclose(first.means, other.means)
    assert first.weights.sum() == pytest.approx(1.0) and np.all(first.weights > 0)
    assert np.all(first.variances > 0)


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 4), st.integers(1, 6), st.integers(1, 5), st.booleans())
def test_dp_em_records_2k_plus_1_releases_per_accounted_m_step(k: int, t: int, d: int, initial: bool) -> None:
    z = np.random.default_rng(0).normal(size=(12, d))
    fit = dp_em_diagonal_gmm(z, k, t, 7.0, np.random.default_rng(1), account_initial_step=initial)
    assert sum(record.steps for record in fit.mechanisms) == (t + int(initial)) * (2 * k + 1)
    assert all(record.noise_multiplier == 7.0 and record.sample_rate == 1.0 for record in fit.mechanisms)
    sensitivities = {record.name: record.sensitivity for record in fit.mechanisms}
    assert sensitivities == {
        "dp_em.weights": 2.0,
        "dp_em.means": pytest.approx(2 * np.sqrt(d)),
        "dp_em.variances": pytest.approx(2 * np.sqrt(d)),
    }


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_components": 0}, "n_components"),
        ({"n_iterations": 0}, "n_iterations"),
        ({"noise_multiplier": -1.0}, "noise_multiplier"),
        ({"z": np.array([[np.nan, 1.0]])}, "z"),
        ({"reg_covar": -1.0}, "reg_covar"),
    ],
)
def test_dp_em_rejects_bad_arguments(kwargs: dict, message: str) -> None:
    arguments = {
        "z": np.zeros((4, 2)),
        "n_components": 1,
        "n_iterations": 1,
        "noise_multiplier": 1.0,
        "rng": np.random.default_rng(0),
        "account_initial_step": True,
    } | kwargs
    with pytest.raises(ValueError, match=message):
        dp_em_diagonal_gmm(**arguments)


# ---------------------------------------------------------------------------------------------------
# DP kernel k-means


@fast_property
@given(neighbouring_records(), st.integers(1, 4), st.integers(0, 2**32 - 1))
def test_kmeans_aggregates_respect_the_stated_sensitivities(
    case: tuple[np.ndarray, int, np.ndarray], k: int, seed: int
) -> None:
    x, index, replacement = case
    rng = np.random.default_rng(seed)
    feature_map = random_fourier_features(x.shape[1], 16, 1.0, rng)
    features, replacement_features = feature_map(x), feature_map(replacement[None])[0]
    labels = rng.integers(0, k, size=len(x))
    counts, sums = kmeans.cluster_statistics(features, labels, k)
    removed = kmeans.cluster_statistics(remove_row(features, index), remove_row(labels, index), k)
    replaced = kmeans.cluster_statistics(
        replace_row(features, index, replacement_features), replace_row(labels, index, rng.integers(0, k)), k
    )
    assert np.linalg.norm(counts - removed[0]) <= 1.0 + FLOAT_SLACK
    assert np.linalg.norm(sums - removed[1]) <= 1.0 + FLOAT_SLACK
    assert np.linalg.norm(counts - replaced[0]) <= np.sqrt(2.0) + FLOAT_SLACK
    assert np.linalg.norm(sums - replaced[1]) <= 2.0 + FLOAT_SLACK


def test_kmeans_sensitivity_check_catches_unnormalised_features() -> None:
    """Planted bug: raw cosine features (without the normalisation) have norm up to √D > 1."""
    feature_map = random_fourier_features(3, 64, 1.0, np.random.default_rng(0))
    x = np.random.default_rng(1).normal(size=(5, 3))
    raw = np.cos(x @ feature_map.frequencies + feature_map.offsets)
    _, sums = kmeans.cluster_statistics(raw, np.zeros(5, dtype=int), 1)
    _, without_first = kmeans.cluster_statistics(raw[1:], np.zeros(4, dtype=int), 1)
    assert np.linalg.norm(sums - without_first) > 1.0


def test_random_fourier_features_have_unit_norm_and_approximate_the_gaussian_kernel() -> None:
    bandwidth = 0.7
    feature_map = random_fourier_features(3, 8_000, bandwidth, np.random.default_rng(12))
    x = np.random.default_rng(13).normal(size=(20, 3)) * 0.6
    features = feature_map(x)
    np.testing.assert_allclose(np.linalg.norm(features, axis=1), 1.0)
    squared_distances = ((x[:, None, :] - x[None, :, :]) ** 2).sum(-1)
    kernel = np.exp(-squared_distances / (2 * bandwidth**2))
    np.testing.assert_allclose(features @ features.T, kernel, atol=0.05)


def test_kmeans_noise_scale_equals_the_noise_multipliers() -> None:
    rng = np.random.default_rng(14)
    features = random_fourier_features(2, 8, 1.0, rng)(rng.normal(size=(25, 2)))
    labels = rng.integers(0, 3, size=25)
    exact_counts, exact_sums = kmeans.cluster_statistics(features, labels, 3)
    draws = [kmeans.noisy_cluster_statistics(features, labels, 3, 2.0, 0.5, rng) for _ in range(2_000)]
    count_noise = np.array([counts for counts, _ in draws]) - exact_counts
    sum_noise = np.array([sums for _, sums in draws]) - exact_sums
    assert relative_error(count_noise.std(), 2.0) < SAMPLING_TOLERANCE
    assert relative_error(sum_noise.std(), 0.5) < SAMPLING_TOLERANCE


def test_dp_kmeans_final_counts_are_the_final_partition_plus_count_noise() -> None:
    x, _ = well_separated_clusters(60, np.array([[0.0, 0.0], [3.0, 3.0]]), 0.1, seed=15)
    residuals = []
    for seed in range(2_500):
        fit = dp_kmeans(x, 2, 1, 8, 1.0, 3.0, 0.2, np.random.default_rng(seed))
        residuals.append(fit.counts - np.bincount(fit.assign(x), minlength=2))
    assert relative_error(np.std(residuals), 3.0) < SAMPLING_TOLERANCE


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_dp_kmeans_without_noise_recovers_well_separated_clusters(seed: int) -> None:
    centres = np.array([[0.6, 0.0, 0.0], [-0.6, 0.0, 0.0], [0.0, 0.6, 0.0]])
    x, labels = well_separated_clusters(900, centres, 0.03, seed)
    fit = dp_kmeans(x, 3, 10, 200, 0.1, 0.0, 0.0, np.random.default_rng(seed))
    assignment = fit.assign(x)
    assert adjusted_rand_score(labels, assignment) == pytest.approx(1.0)
    np.testing.assert_array_equal(fit.counts, np.bincount(assignment, minlength=3))


def test_dp_kmeans_is_deterministic_and_records_its_releases() -> None:
    x, _ = well_separated_clusters(100, np.array([[0.0, 0.0], [2.0, 2.0]]), 0.2, seed=16)
    first = dp_kmeans(x, 2, 4, 32, 1.0, 2.0, 3.0, np.random.default_rng(17))
    again = dp_kmeans(x, 2, 4, 32, 1.0, 2.0, 3.0, np.random.default_rng(17))
    other = dp_kmeans(x, 2, 4, 32, 1.0, 2.0, 3.0, np.random.default_rng(18))
    np.testing.assert_array_equal(first.counts, again.counts)
    np.testing.assert_array_equal(first.assign(x), again.assign(x))
    assert not np.allclose(first.counts, other.counts)
    records = {record.name: record for record in first.mechanisms}
    assert (records["dp_kmeans.counts"].steps, records["dp_kmeans.counts"].noise_multiplier) == (5, 2.0)
    assert (records["dp_kmeans.sums"].steps, records["dp_kmeans.sums"].noise_multiplier) == (4, 3.0)
    assert all(record.sensitivity == 1.0 for record in first.mechanisms)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_clusters": 0}, "n_clusters"),
        ({"n_iterations": 0}, "n_iterations"),
        ({"rff_dimension": 0}, "dimension"),
        ({"bandwidth": 0.0}, "bandwidth"),
        ({"count_noise_multiplier": -1.0}, "count_noise_multiplier"),
        ({"sum_noise_multiplier": float("inf")}, "sum_noise_multiplier"),
    ],
)
def test_dp_kmeans_rejects_bad_arguments(kwargs: dict, message: str) -> None:
    arguments = {
        "x": np.zeros((4, 2)),
        "n_clusters": 2,
        "n_iterations": 1,
        "rff_dimension": 4,
        "bandwidth": 1.0,
        "count_noise_multiplier": 1.0,
        "sum_noise_multiplier": 1.0,
        "rng": np.random.default_rng(0),
    } | kwargs
    with pytest.raises(ValueError, match=message):
        dp_kmeans(**arguments)
