"""DP-EM for a diagonal Gaussian mixture (Park et al. 2017) as P3GM uses it (`dp_gaussian_mixture.py`).

Each M-step releases three aggregates of the clipped rows z_i (‖z_i‖ <= 1) under responsibilities r_ik
fixed by earlier releases, with the noise scales of the reference code (σ = σ_e, N = number of rows):
* counts  n_k  = Σ_i r_ik            + N(0, (2σ)²)       (the code's π = n/N with std σ·2/N);
* sums    S1_k = Σ_i r_ik z_i        + N(0, (2√d'σ)² I)  (the code's mean with std σ·2√d'/ñ_k);
* squares S2_k = Σ_i r_ik z_i ⊙ z_i  + N(0, (2√d'σ)² I)  (the code's variance with std σ·2√d'/ñ_k).
Everything else is post-processing: ñ_k = noisy n_k (non-positive ⇒ 1), μ_k = S̃1_k/ñ_k,
v_k = S̃2_k/ñ_k − μ_k² + reg_covar, non-positive variances replaced by 1e-5 in the initial M-step and by
the previous variance afterwards, weights π = ñ/Σñ. The E-step uses only released parameters.

Sensitivities of the aggregates (true bounds; the records use the paper's larger ones, 2, 2√d', 2√d'):
* add/remove one row: n changes by r_i (‖r_i‖₂ <= ‖r_i‖₁ = 1), S1_k by r_ik z_i (<= 1) and S2_k by
  r_ik z_i⊙z_i (‖z⊙z‖₂ <= ‖z‖² <= 1): all <= 1;
* replace one row: n <= √2 (difference of two probability vectors), S1_k <= 2, S2_k <= √2 (difference of
  two non-negative vectors of norm <= 1).
So the paper's values hold under both adjacencies (the √d' factor is slack) and each of the 2K+1 releases
per M-step is a Gaussian mechanism with noise multiplier σ_e, matching MA_DP-EM = (2K+1)(α²+α)/(2σ_e²).

Where the paper's sensitivities are heuristic: the paper states them for the *normalised* estimates
μ_k = S1_k/n_k and Σ_k, as 2√d'/n_k. With the true count n_k that is no sensitivity bound (n_k moves
with the data too). The code divides by the *noisy* count ñ_k, a released value, so its weights and
means are exactly the releases above (dividing by ñ_k is post-processing). Its variance, however, is
S2/ñ − 2μ̃⊙(S1/ñ) + μ̃² with the noisy mean μ̃: it reuses S1, and one added row moves it by up to
(‖z⊙z‖ + 2‖μ̃⊙z‖)/ñ <= (1 + 2‖μ̃‖∞)/ñ, so the stated 2√d'/ñ holds only while the released means stay
small (for d' = 1: |μ̃| <= 1/2), which nothing enforces. Here the variance is computed from S̃2 and the
released μ̃ only, so the stated scale is a true bound. The code also scales π by the row count N, which
add/remove adjacency changes; here the weights come from the noisy counts alone (π = ñ/Σñ).

Other differences from the reference code, documented rather than reproduced:
* the code returns the parameters from *before* the last M-step: its fit loop saves them at the top of
  every iteration and restores them after the loop (sklearn's `fit_predict`, which it adapts, keeps the
  parameters after the last M-step). Its release therefore depends on the initial M-step plus T_e − 1
  EM iterations — T_e noisy M-steps, which its T_e·(2K+1) accounting happens to cover. Here the
  parameters after the last M-step are returned, so T_e + 1 noisy M-steps shape the result:
  `account_initial_step=False` reproduces the paper's ε, `True` is the sound count;
* the code replaces only negative counts and variances (a zero count divides by zero, a zero variance
  makes its precision computation raise); here all non-positive ones;
* the code adds 10·machine-eps to the counts before the noise; omitted (far below any noise scale);
* the code draws responsibilities and noise from a legacy `RandomState`; here from `rng`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import logsumexp

from dpvae import samplers
from dpvae.privacy.ledger import Mechanism
from dpvae.privacy.mechanisms.gaussian import (
    check_count,
    check_generator,
    check_matrix,
    check_noise_multiplier,
    clip_rows,
    gaussian_noise,
)

INITIAL_VARIANCE_FLOOR = 1e-5


@dataclass(frozen=True)
class DPGaussianMixture:
    """A DP-EM fit: `weights` (K), `means` and `variances` (K × d'), and the releases that paid for it."""

    weights: np.ndarray
    means: np.ndarray
    variances: np.ndarray
    mechanisms: tuple[Mechanism, ...]


def mixture_statistics(z: np.ndarray, responsibilities: np.ndarray) -> tuple[np.ndarray, ...]:
    """Pre-noise M-step aggregates: counts Σ_i r_ik (K), sums Σ_i r_ik z_i and Σ_i r_ik z_i² (K × d')."""
    return responsibilities.sum(axis=0), responsibilities.T @ z, responsibilities.T @ (z * z)


def noisy_mixture_statistics(
    z: np.ndarray,
    responsibilities: np.ndarray,
    noise_multiplier: float,
    rng: np.random.Generator,
    secret: bool = False,
) -> tuple[np.ndarray, ...]:
    """The three Gaussian releases of one M-step: noise std 2σ on counts, 2√d'σ on each sum vector (`secret`: a
    release's, each on its grid with the discrete Gaussian of `dp_em_records`' samplers)."""
    counts, sums, squares = mixture_statistics(z, responsibilities)
    if secret:
        moment, dimension = 2.0 * float(np.sqrt(z.shape[1])), z.shape[1]
        return (
            samplers.gaussian(counts, noise_multiplier, 2.0, secret=True, rng=rng),
            samplers.gaussian(sums, noise_multiplier, moment, secret=True, rng=rng, entries=dimension),
            samplers.gaussian(squares, noise_multiplier, moment, secret=True, rng=rng, entries=dimension),
        )
    moment_std = 2.0 * np.sqrt(z.shape[1]) * noise_multiplier
    return (
        counts + gaussian_noise(counts.shape, 2.0 * noise_multiplier, rng),
        sums + gaussian_noise(sums.shape, moment_std, rng),
        squares + gaussian_noise(squares.shape, moment_std, rng),
    )


def mixture_from_statistics(
    counts: np.ndarray,
    sums: np.ndarray,
    squares: np.ndarray,
    previous_variances: np.ndarray | None,
    reg_covar: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Post-process released statistics into (unnormalised weights ñ, means, floored variances)."""
    safe_counts = np.where(counts > 0, counts, 1.0)
    means = sums / safe_counts[:, None]
    variances = squares / safe_counts[:, None] - means**2 + reg_covar
    floor = INITIAL_VARIANCE_FLOOR if previous_variances is None else previous_variances
    return safe_counts, means, np.where(variances > 0, variances, floor)


def _noisy_m_step(
    z: np.ndarray,
    responsibilities: np.ndarray,
    noise_multiplier: float,
    rng: np.random.Generator,
    previous_variances: np.ndarray | None,
    reg_covar: float,
    secret: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One M-step: the three Gaussian releases, then post-processing into mixture parameters."""
    released = noisy_mixture_statistics(z, responsibilities, noise_multiplier, rng, secret)
    return mixture_from_statistics(*released, previous_variances, reg_covar)


def log_responsibilities(z: np.ndarray, weights: np.ndarray, means: np.ndarray, variances: np.ndarray) -> np.ndarray:
    """E-step: log r_ik for a diagonal mixture (weights need not sum to 1; they are normalised here)."""
    precisions = 1.0 / variances
    squared_distance = (means**2 * precisions).sum(axis=1) - 2.0 * z @ (means * precisions).T + (z * z) @ precisions.T
    log_joint = np.log(weights) - 0.5 * (np.log(2.0 * np.pi * variances).sum(axis=1) + squared_distance)
    return log_joint - logsumexp(log_joint, axis=1, keepdims=True)


def dp_em_diagonal_gmm(
    z: ArrayLike,
    n_components: int,
    n_iterations: int,
    noise_multiplier: float,
    rng: np.random.Generator,
    *,
    account_initial_step: bool,
    reg_covar: float = 1e-6,
    secret: bool = False,
) -> DPGaussianMixture:
    """Fit a K-component diagonal mixture to the rows of `z` (clipped to norm <= 1) with DP-EM.

    Random responsibilities → noisy M-step → `n_iterations` × (E-step, noisy M-step); see the module
    docstring for the releases and their sensitivities. Records: per M-step 1 weights release
    (sensitivity 2 on counts) and K means and K variances releases (sensitivity 2√d'), all with
    noise multiplier σ_e; the initial M-step is recorded only if `account_initial_step` (the paper
    code: False; sound: True). `reg_covar` is sklearn's variance regulariser, which the code keeps. `secret`: a
    release, its statistics on their grids with the discrete Gaussian (`dpvae.samplers`).
    """
    data = clip_rows(check_matrix(z, "z"))
    k = check_count(n_components, "n_components", 1)
    n_iter = check_count(n_iterations, "n_iterations", 1)
    sigma = check_noise_multiplier(noise_multiplier)
    check_generator(rng)
    if not (np.isfinite(reg_covar) and reg_covar >= 0):
        raise ValueError(f"reg_covar must be a finite number >= 0, got {reg_covar}")

    responsibilities = rng.random((data.shape[0], k))
    responsibilities /= responsibilities.sum(axis=1, keepdims=True)
    weights, means, variances = _noisy_m_step(data, responsibilities, sigma, rng, None, reg_covar, secret)
    for _ in range(n_iter):
        responsibilities = np.exp(log_responsibilities(data, weights, means, variances))
        weights, means, variances = _noisy_m_step(data, responsibilities, sigma, rng, variances, reg_covar, secret)

    return DPGaussianMixture(
        weights=weights / weights.sum(),
        means=means,
        variances=variances,
        mechanisms=dp_em_records(
            k, n_iter, sigma, data.shape[1], account_initial_step=account_initial_step, secret=secret
        ),
    )


def dp_em_records(
    n_components: int,
    n_iterations: int,
    noise_multiplier: float,
    dimension: int,
    *,
    account_initial_step: bool,
    secret: bool = False,
) -> tuple[Mechanism, ...]:
    """The records `dp_em_diagonal_gmm` returns for rows of `dimension` d' (known before it runs): per recorded
    M-step one weights release (sensitivity 2) and K means and K variances releases (2√d'), multiplier σ_e; the
    initial M-step recorded only if `account_initial_step`; `secret`: a release's, with their discrete samplers (the
    K counts; the d' values of one component's sums)."""
    k = check_count(n_components, "n_components", 1)
    m_steps = check_count(n_iterations, "n_iterations", 1) + int(account_initial_step)
    sigma = check_noise_multiplier(noise_multiplier)
    moment_sensitivity = 2.0 * float(np.sqrt(dimension))
    weights = samplers.gaussian_sampler(sigma, 2.0, k) if secret else None
    moments = samplers.gaussian_sampler(sigma, moment_sensitivity, dimension) if secret else None
    return (
        Mechanism("dp_em.weights", sigma, steps=m_steps, sensitivity=2.0, sampler=weights),
        Mechanism("dp_em.means", sigma, steps=k * m_steps, sensitivity=moment_sensitivity, sampler=moments),
        Mechanism("dp_em.variances", sigma, steps=k * m_steps, sensitivity=moment_sensitivity, sampler=moments),
    )
