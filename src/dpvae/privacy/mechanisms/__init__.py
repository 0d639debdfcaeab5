"""Differentially private mechanisms; each returns its result with the ledger record(s) paying for it.

Modules: `gaussian` (Gaussian mechanism, row clipping), `pca` (P3GM's Gaussian DP-PCA), `em` (P3GM's
DP-EM for a diagonal Gaussian mixture), `kmeans` (DP kernel k-means of DP-GM). All randomness comes
from an explicit `numpy.random.Generator`.
"""

from dpvae.privacy.mechanisms.em import DPGaussianMixture, dp_em_diagonal_gmm, dp_em_records
from dpvae.privacy.mechanisms.gaussian import clip_rows, dp_mean, gaussian_mechanism, gaussian_record
from dpvae.privacy.mechanisms.kmeans import (
    DPKMeans,
    RandomFourierFeatures,
    dp_kmeans,
    random_fourier_features,
)
from dpvae.privacy.mechanisms.pca import DPPCA, dp_pca, dp_pca_records, kept_components

__all__ = [
    "DPGaussianMixture",
    "DPKMeans",
    "DPPCA",
    "RandomFourierFeatures",
    "clip_rows",
    "dp_mean",
    "dp_em_diagonal_gmm",
    "dp_em_records",
    "dp_kmeans",
    "dp_pca",
    "dp_pca_records",
    "gaussian_mechanism",
    "gaussian_record",
    "kept_components",
    "random_fourier_features",
]
