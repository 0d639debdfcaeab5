"""DP kernel k-means for DP-GM (Acs et al., TKDE 2018): random Fourier features + noisy Lloyd iterations.

Records are mapped to unit-norm random Fourier features φ(x) of the Gaussian kernel
exp(−‖x − y‖² / (2·bandwidth²)) (unit norm mirrors k(x, x) = 1 and bounds every record's contribution).
The first partition is data-independent (every record to a uniformly random cluster, so the first centres
sit near the data's mean and split it along random directions; random centres in feature space are
almost orthogonal to all records and leave clusters empty for good). Each Lloyd iteration releases the
current partition's per-cluster counts and feature sums with the Gaussian mechanism, sets
centre_j = noisy sum_j / max(noisy count_j, 1) and re-assigns every record to its nearest centre. The
counts of the final partition (the one `assign` returns) are released once more: DP-GM samples each
cluster's generator in proportion to them.

Sensitivities (each record lies in exactly one cluster, ‖φ(x)‖ = 1):
* counts: add/remove 1, replace-one √2;  sums: add/remove 1, replace-one 2.
The records state the add/remove values. The feature map is data-independent and costs nothing.
Calibrating the two noise multipliers to a budget is the accounting module's job.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from dpvae.privacy.ledger import Mechanism
from dpvae.privacy.mechanisms.gaussian import (
    check_count,
    check_generator,
    check_matrix,
    check_noise_multiplier,
    gaussian_noise,
)


@dataclass(frozen=True)
class RandomFourierFeatures:
    """φ(x) = cos(x·frequencies + offsets), normalised to unit l2 norm per row."""

    frequencies: np.ndarray
    offsets: np.ndarray

    def __call__(self, x: ArrayLike) -> np.ndarray:
        features = np.cos(np.asarray(x, dtype=np.float64) @ self.frequencies + self.offsets)
        norms = np.linalg.norm(features, axis=1, keepdims=True)
        return features / np.maximum(norms, np.finfo(np.float64).tiny)


def random_fourier_features(
    n_inputs: int, dimension: int, bandwidth: float, rng: np.random.Generator
) -> RandomFourierFeatures:
    """Draw a `dimension`-feature map for the Gaussian kernel of the given `bandwidth` on R^n_inputs."""
    if not (np.isfinite(bandwidth) and bandwidth > 0):
        raise ValueError(f"bandwidth must be a finite number > 0, got {bandwidth}")
    shape = (check_count(n_inputs, "n_inputs", 1), check_count(dimension, "dimension", 1))
    return RandomFourierFeatures(
        frequencies=rng.normal(0.0, 1.0 / bandwidth, size=shape),
        offsets=rng.uniform(0.0, 2.0 * np.pi, size=shape[1]),
    )


def nearest_centre(features: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """Index of the closest centre (squared Euclidean distance) for every feature row."""
    distances = (centres**2).sum(axis=1) - 2.0 * features @ centres.T
    return np.argmin(distances, axis=1)


def cluster_statistics(features: np.ndarray, labels: np.ndarray, n_clusters: int) -> tuple[np.ndarray, np.ndarray]:
    """Pre-noise aggregates: per-cluster counts (k) and per-cluster feature sums (k × D)."""
    counts = np.bincount(labels, minlength=n_clusters).astype(np.float64)
    return counts, np.eye(n_clusters)[labels].T @ features


def noisy_cluster_statistics(
    features: np.ndarray,
    labels: np.ndarray,
    n_clusters: int,
    count_noise_multiplier: float,
    sum_noise_multiplier: float,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """The two Gaussian releases of one Lloyd iteration (sensitivity 1 each, so std = multiplier)."""
    counts, sums = cluster_statistics(features, labels, n_clusters)
    return (
        counts + gaussian_noise(counts.shape, count_noise_multiplier, rng),
        sums + gaussian_noise(sums.shape, sum_noise_multiplier, rng),
    )


@dataclass(frozen=True)
class DPKMeans:
    """A DP k-means fit: the feature map, final centres, noisy counts of the final partition, records."""

    feature_map: RandomFourierFeatures
    centres: np.ndarray
    counts: np.ndarray
    mechanisms: tuple[Mechanism, ...]

    def assign(self, x: ArrayLike) -> np.ndarray:
        """Cluster index of every row of `x` (nearest final centre in feature space)."""
        return nearest_centre(self.feature_map(x), self.centres)


def dp_kmeans(
    x: ArrayLike,
    n_clusters: int,
    n_iterations: int,
    rff_dimension: int,
    bandwidth: float,
    count_noise_multiplier: float,
    sum_noise_multiplier: float,
    rng: np.random.Generator,
) -> DPKMeans:
    """Cluster the rows of `x` with DP kernel k-means (see the module docstring for the releases).

    Records: counts with `count_noise_multiplier` for `n_iterations` + 1 releases, sums with
    `sum_noise_multiplier` for `n_iterations` releases, both at add/remove sensitivity 1.
    """
    data = check_matrix(x, "x")
    k = check_count(n_clusters, "n_clusters", 1)
    n_iter = check_count(n_iterations, "n_iterations", 1)
    count_sigma = check_noise_multiplier(count_noise_multiplier, "count_noise_multiplier")
    sum_sigma = check_noise_multiplier(sum_noise_multiplier, "sum_noise_multiplier")
    feature_map = random_fourier_features(data.shape[1], rff_dimension, bandwidth, check_generator(rng))
    features = feature_map(data)

    labels = rng.integers(0, k, size=features.shape[0])
    for _ in range(n_iter):
        counts, sums = noisy_cluster_statistics(features, labels, k, count_sigma, sum_sigma, rng)
        centres = sums / np.maximum(counts, 1.0)[:, None]
        labels = nearest_centre(features, centres)
    final_counts = np.bincount(labels, minlength=k).astype(np.float64)
    return DPKMeans(
        feature_map=feature_map,
        centres=centres,
        counts=final_counts + gaussian_noise(final_counts.shape, count_sigma, rng),
        mechanisms=(
            Mechanism("dp_kmeans.counts", count_sigma, steps=n_iter + 1, sensitivity=1.0),
            Mechanism("dp_kmeans.sums", sum_sigma, steps=n_iter, sensitivity=1.0),
        ),
    )
