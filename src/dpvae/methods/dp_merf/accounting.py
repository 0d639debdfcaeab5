"""DP-MERF's accounting: one Gaussian release of the mean embedding (paper and sound alike)."""

from __future__ import annotations

from typing import Any

from dpvae.privacy.accounting import PYVACY_ORDER_BOUNDS, solve_noise_multiplier
from dpvae.privacy.ledger import Accounting, Ledger, Mechanism, recorded_mechanisms
from dpvae.runspec import RunSpec
from dpvae.samplers import Sampler, gaussian_sampler

NOTES = (
    "DP-MERF's single release: the label-conditional mean embedding of the n training records in "
    "random Fourier features (each record's feature has norm 1), plus N(0, (2*sigma/n)^2) noise; the "
    "generator only sees the noisy embedding. One Gaussian mechanism under replace-one adjacency "
    "(sensitivity 2/n), RDP with the classic conversion and a continuous order search, as the "
    "reference code's autodp call; it is also the sound accounting (the one release is the only use of the data)."
)


#: the embedding sum's replace-one L2 sensitivity (one record's φ(x) ⊗ onehot(y) has norm 1)
SUM_SENSITIVITY = 2.0


def exact_sampler(noise_multiplier: float, entries: int) -> Sampler:
    """A release's sampler: the sum of `entries` (rff_dim × classes) values on its grid, discrete Gaussian."""
    return gaussian_sampler(noise_multiplier, SUM_SENSITIVITY, entries)


def accounting(noise_multiplier: float, n: int, delta: float, entries: int | None = None) -> Accounting:
    """One Gaussian release of the mean embedding: multiplier σ relative to the replace-one sensitivity 2/n
    (`entries`: a release's, its sampler recorded)."""
    sampler = None if entries is None else exact_sampler(noise_multiplier, entries)
    release = Mechanism("DP-MERF mean embedding (one release)", noise_multiplier, 1.0, 1, 2.0 / n, sampler=sampler)
    return Accounting(
        (release,),
        delta,
        adjacency="replace-one",
        accountant="rdp-order-search",
        conversion="classic",
        orders=PYVACY_ORDER_BOUNDS,
    )


def noise_multiplier(params: Any, epsilon: float, delta: float, n: int) -> float:
    """σ: as configured, or the smallest whose ε (`accounting`) meets the target."""
    if params.noise_multiplier != "auto":
        return float(params.noise_multiplier)
    return solve_noise_multiplier(lambda sigma: accounting(sigma, n, delta).epsilon, epsilon)


def ledger(noise_multiplier: float, n: int, delta: float, target: float | None, entries: int | None = None) -> Ledger:
    """The release under `accounting`, as both the paper's and the sound accounting (`entries`: a release's)."""
    release = accounting(noise_multiplier, n, delta, entries)
    return Ledger(release, release, target, NOTES)  # sound too: tests check the 2/n sensitivity


def recompute_ledger(params: Any, spec: RunSpec, recorded: dict) -> Ledger:
    """A run's ledger computed again from its parameters and the training size n its release records (2/n)."""
    (release,) = recorded_mechanisms(recorded)
    n, sampler = round(2.0 / release.sensitivity), release.sampler
    entries = None if sampler is None else round((sampler.sensitivity - SUM_SENSITIVITY / sampler.grid) ** 2)
    return ledger(noise_multiplier(params, spec.epsilon, spec.delta, n), n, spec.delta, spec.epsilon, entries)
