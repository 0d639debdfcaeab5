"""DP-PCA, Gaussian version (P3GM §II-D footnote; `tkgsn/P3GM` HEAD `dp_utils/dp_pca.py`).

Mechanism: centre with `mean`, clip each row to l2 norm <= 1, A = XᵀX (un-normalised), release
A + E with E symmetric (upper triangle incl. diagonal i.i.d. N(0, σ_p²), mirrored), then — as
post-processing — divide by N and keep the top-d' eigenvectors.

Sensitivity of A in Frobenius norm (the noised upper triangle, as a vector, moves by no more):
* add/remove one row x: ‖xxᵀ‖_F = ‖x‖² <= 1, so the record's noise_multiplier is σ_p;
* replace one row x by y: ‖xxᵀ − yyᵀ‖_F² = ‖x‖⁴ + ‖y‖⁴ − 2(x·y)² <= 2, i.e. <= √2 (effective
  multiplier σ_p/√2). The paper states Hamming (replace-one) adjacency but uses the add/remove value 1.
Both bounds assume the centring mean does not depend on the data, or was released privately before (a
DP mean, `mean="dp"`: `gaussian.dp_mean`, recorded as its own mechanism; A is then a mechanism of the
data *given* that release, adaptive composition). With `mean="nonprivate"` (what the reference code
does) the empirical mean is neither released privately nor accounted for, and one row moves every
centred row, so A can change by far more than 1 (see the tests' counter-example): the fit says
`private=False` and the release is not DP.

Differences from the reference code, all deliberate:
* it calls the general eigensolver `numpy.linalg.eig` and keeps the first d' eigenvectors *in the
  order returned* (not sorted by eigenvalue, possibly complex); here `numpy.linalg.eigh` (symmetric
  solver), eigenvalues sorted descending, and each eigenvector's sign fixed (largest-magnitude entry
  positive) so output does not depend on the LAPACK build;
* it draws the noise from the global numpy RNG; here only from the `rng` argument;
* it fills the lower triangle and mirrors it; the distribution of E is the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from dpvae import samplers
from dpvae.privacy.ledger import Mechanism
from dpvae.privacy.mechanisms.gaussian import (
    check_count,
    check_generator,
    check_matrix,
    check_noise_multiplier,
    clip_rows,
    dp_mean,
    gaussian_noise,
    gaussian_record,
)

NONPRIVATE_MEAN = "nonprivate"
DP_MEAN = "dp"
#: the names of its records: the DP centring mean's and the PCA's
MEAN_RECORD, PCA_RECORD = "dp_pca.mean", "dp_pca"


@dataclass(frozen=True)
class DPPCA:
    """A fitted DP-PCA: `components` (d × d'), their noisy `eigenvalues` (descending), the centring `mean`.

    `mechanisms` are the releases that paid for it (the DP mean, if any, then the PCA); `private` is
    False when the centring mean was the data's exact mean (then no ledger makes the fit DP).
    """

    components: np.ndarray
    eigenvalues: np.ndarray
    mean: np.ndarray
    mechanisms: tuple[Mechanism, ...]
    private: bool

    @property
    def mechanism(self) -> Mechanism:
        """The PCA release itself (XᵀX + symmetric noise)."""
        return self.mechanisms[-1]

    def transform(self, x: ArrayLike) -> np.ndarray:
        """Project rows of `x` onto the components: (x − mean) · W (no clipping, as in P3GM's encoder)."""
        return (np.asarray(x, dtype=np.float64) - self.mean) @ self.components


def kept_components(n_components: int, dimension: int) -> int:
    """d' = min(`n_components`, d): the components a DP-PCA of d-dimensional rows keeps."""
    return min(check_count(n_components, "n_components", 1), dimension)


def dp_pca_records(
    noise_multiplier: float,
    *,
    mean: ArrayLike | Literal["dp", "nonprivate"],
    mean_noise_multiplier: float | None = None,
    mean_clip: float | None = None,
    dimension: int | None = None,
) -> tuple[Mechanism, ...]:
    """The records `dp_pca` with these arguments returns, known before it runs: the DP centring mean's (if
    `mean="dp"`: multiplier `mean_noise_multiplier`, sensitivity `mean_clip`), then the PCA's (σ_p, sensitivity 1).
    `dimension` d: a release's, whose discrete samplers are recorded (d means; d(d+1)/2 entries of XᵀX)."""
    sigma = check_noise_multiplier(noise_multiplier)
    sampler = None if dimension is None else samplers.gaussian_sampler(sigma, 1.0, upper_entries(dimension))
    pca_record = Mechanism(PCA_RECORD, sigma, sensitivity=1.0, sampler=sampler)
    if not (isinstance(mean, str) and mean == DP_MEAN):
        return (pca_record,)
    if mean_noise_multiplier is None or mean_clip is None:
        raise ValueError('mean="dp" needs mean_noise_multiplier and mean_clip')
    return (gaussian_record(MEAN_RECORD, mean_noise_multiplier, mean_clip, dimension), pca_record)


def upper_entries(dimension: int) -> int:
    """The entries of XᵀX's upper triangle (diagonal included): what DP-PCA's noise covers."""
    return dimension * (dimension + 1) // 2


def resolve_mean(x: np.ndarray, mean: ArrayLike | Literal["nonprivate"]) -> np.ndarray:
    """The centring vector: the data's empirical mean for "nonprivate", else `mean` broadcast to d."""
    if isinstance(mean, str):
        if mean != NONPRIVATE_MEAN:
            raise ValueError(f'mean must be an array, a number, "{DP_MEAN}" or "{NONPRIVATE_MEAN}", got "{mean}"')
        return x.mean(axis=0)
    vector = np.asarray(mean, dtype=np.float64)
    if vector.shape not in ((), (x.shape[1],)):
        raise ValueError(f"mean must be a number or have shape ({x.shape[1]},), got shape {vector.shape}")
    vector = np.broadcast_to(vector, (x.shape[1],)).copy()
    if not np.all(np.isfinite(vector)):
        raise ValueError("mean contains NaN or infinite values")
    return vector


def clipped_second_moment(x: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """The pre-noise aggregate A = XᵀX of the centred rows, each clipped to l2 norm <= 1."""
    centred = clip_rows(x - mean)
    return centred.T @ centred


def symmetric_gaussian_noise(dimension: int, std: float, rng: np.random.Generator) -> np.ndarray:
    """A symmetric matrix whose upper triangle (incl. diagonal) is i.i.d. N(0, std²), mirrored below."""
    upper = np.triu(gaussian_noise((dimension, dimension), std, rng))
    return upper + np.triu(upper, k=1).T


def exact_symmetric_release(moment: np.ndarray, sigma: float, rng: np.random.Generator) -> np.ndarray:
    """A release's XᵀX + E: the upper triangle (diagonal included, sensitivity 1) through `samplers.gaussian` on its
    grid, mirrored below (post-processing)."""
    upper = np.triu_indices(moment.shape[0])
    released = np.zeros_like(moment)
    released[upper] = samplers.gaussian(moment[upper], sigma, 1.0, secret=True, rng=rng)
    return released + np.triu(released, k=1).T


def dp_pca(
    x: ArrayLike,
    n_components: int,
    noise_multiplier: float,
    rng: np.random.Generator,
    *,
    mean: ArrayLike | Literal["dp", "nonprivate"],
    mean_noise_multiplier: float | None = None,
    mean_clip: float | None = None,
    secret: bool = False,
) -> DPPCA:
    """Fit DP-PCA (Gaussian mechanism on XᵀX with noise std σ_p = `noise_multiplier`; see module doc; `secret`: a
    release, its upper triangle on a grid with the discrete Gaussian, and so its DP mean, `dpvae.samplers`).

    `mean` is explicit on purpose: an array or number (0 for no centring) is taken as public (a
    constant, or an earlier private release); "dp" releases a DP mean first (`gaussian.dp_mean` with
    `mean_noise_multiplier` and the data-independent row bound `mean_clip`, both required) and centres
    with it; "nonprivate" uses the empirical mean as the P3GM code does, which this mechanism does not
    protect (`private=False`). `n_components` above d is capped at d.
    """
    data = check_matrix(x, "x")
    n_kept = kept_components(n_components, data.shape[1])
    dimension = data.shape[1] if secret else None
    records = dp_pca_records(
        noise_multiplier,
        mean=mean,
        mean_noise_multiplier=mean_noise_multiplier,
        mean_clip=mean_clip,
        dimension=dimension,
    )
    sigma = records[-1].noise_multiplier
    check_generator(rng)
    if isinstance(mean, str) and mean == DP_MEAN:  # recorded in `records`
        centre, _ = dp_mean(data, mean_clip, mean_noise_multiplier, rng, name=MEAN_RECORD, secret=secret)
    else:
        centre = resolve_mean(data, mean)
    if secret:
        covariance = exact_symmetric_release(clipped_second_moment(data, centre), sigma, rng) / data.shape[0]
    else:
        noise = symmetric_gaussian_noise(data.shape[1], sigma, rng)
        covariance = (clipped_second_moment(data, centre) + noise) / data.shape[0]
    eigenvalues, eigenvectors = np.linalg.eigh(covariance)
    order = np.argsort(eigenvalues)[::-1][:n_kept]
    components = eigenvectors[:, order]
    largest = np.argmax(np.abs(components), axis=0)
    components = components * np.sign(components[largest, np.arange(n_kept)])
    return DPPCA(
        components=components,
        eigenvalues=eigenvalues[order],
        mean=centre,
        mechanisms=records,
        private=not (isinstance(mean, str) and mean == NONPRIVATE_MEAN),
    )
