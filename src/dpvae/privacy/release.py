"""The Gaussian mechanism a DP-SGD step is: one released sum of clipped terms, and its sound sensitivity.

A step releases R = Σ_t w_t S_t + N(0, Σ_t (w_t s_t)² I): each term t is a sum S_t of clipped unit
gradients with noise std s_t, weighted by w_t (PriVAE's term-wise step has two terms, every other
engine one). Only R leaves the step, so R is one Gaussian mechanism: its l2-sensitivity is at most
Σ_t w_t Δ_t when one record moves S_t by at most Δ_t (the terms can move together, so the triangle
inequality is attained in general) and its noise std is √Σ_t (w_t s_t)². This module turns such parts
into a ledger `Mechanism`; it knows nothing about models or papers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from dpvae.privacy.accounting import Sampling
from dpvae.privacy.ledger import Mechanism


@dataclass(frozen=True)
class ReleasePart:
    """One term of a released sum, in the release's own units: `noise_std` = w_t·s_t on every coordinate,
    `sensitivity` = w_t·Δ_t, the most one record can move the term's weighted sum."""

    name: str
    noise_std: float
    sensitivity: float

    def __post_init__(self) -> None:
        if not (self.noise_std >= 0 and math.isfinite(self.noise_std)):
            raise ValueError(f"{self.name}: noise_std must be finite and >= 0, got {self.noise_std}")
        if not (self.sensitivity > 0 and math.isfinite(self.sensitivity)):
            raise ValueError(f"{self.name}: sensitivity must be finite and > 0, got {self.sensitivity}")


def release_sensitivity(parts: Sequence[ReleasePart]) -> float:
    """Σ_t w_t Δ_t: the most one record can move the released sum."""
    return float(sum(part.sensitivity for part in parts))


def release_noise_std(parts: Sequence[ReleasePart]) -> float:
    """√Σ_t (w_t s_t)²: the per-coordinate noise std of the released sum (independent noise per term)."""
    return math.sqrt(sum(part.noise_std**2 for part in parts))


def combined_mechanism(
    name: str, parts: Sequence[ReleasePart], sample_rate: float, steps: int, sampling: Sampling = "poisson"
) -> Mechanism:
    """The released sum of `parts` as one Gaussian mechanism: multiplier = noise std / sensitivity."""
    if not parts:
        raise ValueError("parts must hold at least one term")
    sensitivity = release_sensitivity(parts)
    return Mechanism(name, release_noise_std(parts) / sensitivity, sample_rate, steps, sensitivity, sampling)
