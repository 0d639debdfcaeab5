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

from dpvae import samplers
from dpvae.privacy.ledger import Mechanism
from dpvae.privacy.mechanisms.gaussian import check_count, check_generator, check_matrix, check_noise_multiplier


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
    secret: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """The two Gaussian releases of one Lloyd iteration (sensitivity 1 each, so std = multiplier); in a release
    (`secret`) discrete: the counts as they are, the sums on their grid (`dpvae.samplers`)."""
    counts, sums = cluster_statistics(features, labels, n_clusters)
    return (
        samplers.gaussian(counts, count_noise_multiplier, 1.0, secret=secret, rng=rng, integer=True),
        samplers.gaussian(sums, sum_noise_multiplier, 1.0, secret=secret, rng=rng),
    )


def kmeans_records(
    n_clusters: int,
    n_iterations: int,
    rff_dimension: int,
    count_noise_multiplier: float,
    sum_noise_multiplier: float,
    secret: bool = False,
) -> tuple[Mechanism, ...]:
    """The add/remove records of `dp_kmeans` (a release's with their discrete samplers)."""
    counts = samplers.gaussian_sampler(count_noise_multiplier, 1.0, n_clusters, integer=True) if secret else None
    sums = samplers.gaussian_sampler(sum_noise_multiplier, 1.0, n_clusters * rff_dimension) if secret else None
    return (
        Mechanism("dp_kmeans.counts", count_noise_multiplier, steps=n_iterations + 1, sensitivity=1.0, sampler=counts),
        Mechanism("dp_kmeans.sums", sum_noise_multiplier, steps=n_iterations, sensitivity=1.0, sampler=sums),
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
    secret: bool = False,
) -> DPKMeans:
    """Cluster the rows of `x` with DP kernel k-means (see the module docstring for the releases; `secret`: a
    release, whose noise comes from the discrete samplers).

    Records: counts with `count_noise_multiplier` for `n_iterations` + 1 releases, sums with
    `sum_noise_multiplier` for `n_iterations` releases, both at add/remove sensitivity 1 (`kmeans_records`).
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
        counts, sums = noisy_cluster_statistics(features, labels, k, count_sigma, sum_sigma, rng, secret)
        centres = sums / np.maximum(counts, 1.0)[:, None]
        labels = nearest_centre(features, centres)
    final_counts = np.bincount(labels, minlength=k).astype(np.float64)
    return DPKMeans(
        feature_map=feature_map,
        centres=centres,
        counts=samplers.gaussian(final_counts, count_sigma, 1.0, secret=secret, rng=rng, integer=True),
        mechanisms=kmeans_records(k, n_iter, rff_dimension, count_sigma, sum_sigma, secret),
    )
