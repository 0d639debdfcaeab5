"""Differentially private mechanisms; each returns its result with the ledger record(s) paying for it.

Modules: `gaussian` (Gaussian mechanism, row clipping), `pca` (P3GM's Gaussian DP-PCA), `em` (P3GM's
DP-EM for a diagonal Gaussian mixture), `kmeans` (DP kernel k-means of DP-GM). All randomness comes
from an explicit `numpy.random.Generator`.
"""

from dpvae.privacy.mechanisms.em import DPGaussianMixture, dp_em_diagonal_gmm
from dpvae.privacy.mechanisms.gaussian import clip_rows, dp_mean, gaussian_mechanism
from dpvae.privacy.mechanisms.kmeans import (
    DPKMeans,
    RandomFourierFeatures,
    dp_kmeans,
    random_fourier_features,
)
from dpvae.privacy.mechanisms.pca import DPPCA, dp_pca

__all__ = [
    "DPGaussianMixture",
    "DPKMeans",
    "DPPCA",
    "RandomFourierFeatures",
    "clip_rows",
    "dp_mean",
    "dp_em_diagonal_gmm",
    "dp_kmeans",
    "dp_pca",
    "gaussian_mechanism",
    "random_fourier_features",
]
