"""Trade-off functions (f-DP, Dong, Roth & Su 2019): what a guarantee says about every membership test.

A trade-off curve maps a test's type-I error α to the smallest type-II error β any test can reach; a
mechanism's attack curves must lie on or above it.

* `eps_delta_tradeoff`: f_{ε,δ}(α) = max{0, 1 − δ − e^ε α, e^{−ε}(1 − δ − α)} — what a claimed (ε, δ) allows;
* `gaussian_tradeoff`: G_μ(α) = Φ(Φ⁻¹(1 − α) − μ), and `clt_mu`, the μ of Poisson-subsampled DP-SGD by the
  central limit theorem, μ = q √(T (e^{1/σ²} − 1)) (Bu et al. 2020) — an approximation, not a bound;
* `pld_tradeoff`: the tight curve of the actual mechanisms from Google's dp-accounting privacy-loss
  distributions (pessimistic discretisation), as the envelope of f_{ε,δ(ε)} over the mechanism's whole
  δ(ε) curve — a valid lower bound on the trade-off of the composed subsampled Gaussians.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np


def eps_delta_tradeoff(alpha: np.ndarray, epsilon: float, delta: float) -> np.ndarray:
    """f_{ε,δ}(α)."""
    alpha = np.asarray(alpha, dtype=np.float64)
    return np.maximum.reduce(
        [
            np.zeros_like(alpha),
            1 - delta - math.exp(min(epsilon, 700)) * alpha,
            math.exp(-epsilon) * (1 - delta - alpha),
        ]
    )


def gaussian_tradeoff(alpha: np.ndarray, mu: float) -> np.ndarray:
    """G_μ(α) = Φ(Φ⁻¹(1 − α) − μ)."""
    from scipy import stats

    alpha = np.asarray(alpha, dtype=np.float64)
    return stats.norm.cdf(stats.norm.ppf(1 - alpha) - mu)


def clt_mu(sample_rate: float, steps: int, noise_multiplier: float) -> float:
    """μ-GDP of `steps` Poisson-subsampled Gaussian steps by the CLT: q √(T (e^{1/σ²} − 1))."""
    if noise_multiplier <= 0:
        return math.inf
    return sample_rate * math.sqrt(steps * math.expm1(1 / noise_multiplier**2))


def _pld(mechanisms: Sequence[Any], discretization: float) -> Any:
    """The composed privacy-loss distribution of `Mechanism`s (add/remove-one) from dp-accounting."""
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    composed = None
    for m in mechanisms:
        if m.steps == 0:
            continue
        one = pld_lib.from_gaussian_mechanism(
            m.noise_multiplier, sampling_prob=m.sample_rate, value_discretization_interval=discretization
        )
        one = one.self_compose(int(m.steps))
        composed = one if composed is None else composed.compose(one)
    return composed


def pld_epsilon(mechanisms: Sequence[Any], delta: float, discretization: float = 1e-3) -> float:
    """ε at δ of the composed mechanisms by the PLD accountant (tighter than RDP)."""
    pld = _pld(mechanisms, discretization)
    return 0.0 if pld is None else float(pld.get_epsilon_for_delta(delta))


def pld_tradeoff(
    mechanisms: Sequence[Any],
    alpha: np.ndarray,
    discretization: float = 1e-3,
    max_epsilon: float = 20.0,
    grid: int = 400,
) -> np.ndarray:
    """sup over ε of f_{ε,δ(ε)}(α), δ(ε) from the composed PLD (add/remove-one; `Mechanism`s of a ledger)."""
    alpha = np.asarray(alpha, dtype=np.float64)
    pld = _pld(mechanisms, discretization)
    if pld is None:
        return 1 - alpha
    epsilons = np.r_[0.0, np.geomspace(1e-3, max_epsilon, grid)]
    deltas = np.asarray(pld.get_delta_for_epsilon(epsilons), dtype=np.float64)
    return np.max([eps_delta_tradeoff(alpha, e, d) for e, d in zip(epsilons, deltas)], axis=0)
