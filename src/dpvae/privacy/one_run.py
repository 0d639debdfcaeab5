"""The one-run audit's statistics: canary scores → an empirical lower bound on ε at the run's δ.

Steinke, Nasr & Jagielski (2023), "Privacy auditing with one (1) training run": m canaries, each included
in the training data independently with probability ½; after one run the auditor scores every canary and
guesses "included" for the highest scores. If the training algorithm is (ε, δ)-DP, the number of correct
guesses among r is stochastically dominated by Binomial(r, e^ε/(1 + e^ε)) up to a δ term (their Theorem 3
and its (ε, δ) extension), which turns the count into a lower confidence bound on ε. The estimator is
Google's maintained implementation, `jax_privacy.auditing.CanaryScoreAuditor.epsilon_one_run` (jax-privacy
2.0; a Bonferroni correction over every threshold of "included" guesses), imported on use.

Several score functions may be tried on the same run (e.g. the sum and the maximum of a canary's per-step
observations, `ScoreAccumulator`): each is then evaluated at level (1 − confidence)/k, so that the largest
of the k bounds holds at `confidence` (a union bound). `point` is the same procedure at confidence ½: a
central estimate the lower bound sits below. Neither is a proof of privacy: a small ε̂ says only that this
audit found no evidence against the claim (see docs/audit.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass

import numpy as np

ESTIMATOR = "jax_privacy.auditing.CanaryScoreAuditor.epsilon_one_run (Steinke, Nasr & Jagielski 2023)"
POINT_CONFIDENCE = 0.5


def _check(scores: np.ndarray, included: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    scores = np.asarray(scores, dtype=np.float64)
    included = np.asarray(included)
    if scores.ndim != 1 or included.shape != scores.shape or included.dtype != bool:
        raise ValueError(
            f"need 1-d scores and a boolean inclusion mask of the same length, got {scores.shape} "
            f"and {included.shape} ({included.dtype})"
        )
    if not np.isfinite(scores).all():
        raise ValueError("canary scores must be finite")
    if included.all() or not included.any():
        raise ValueError(f"need included and excluded canaries, got {int(included.sum())} of {len(included)} included")
    return scores, included


def epsilon_lower_bound(scores: np.ndarray, included: np.ndarray, delta: float, confidence: float = 0.95) -> float:
    """The one-run ε lower bound at `delta` holding with probability ≥ `confidence` over the canaries'
    inclusion (higher score = guessed "included")."""
    from jax_privacy.auditing import CanaryScoreAuditor

    scores, included = _check(scores, included)
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    auditor = CanaryScoreAuditor(scores[included], scores[~included])
    return float(auditor.epsilon_one_run(1 - confidence, delta))


def max_certifiable(included: np.ndarray, delta: float, confidence: float = 0.95, n_scores: int = 1) -> float:
    """The largest ε̂ this many canaries can show: every included canary scored above every excluded one."""
    included = np.asarray(included, dtype=bool)
    perfect = included.astype(np.float64)
    return epsilon_lower_bound(perfect, included, delta, 1 - (1 - confidence) / n_scores)


@dataclass(frozen=True)
class OneRunAudit:
    """ε̂ of one run: `lower` (the bound at `confidence`, max over the score functions, each at level
    1 − (1 − confidence)/k), `point` (the same at confidence ½), `max_certifiable` (the most these canaries
    could show), and each score function's bounds."""

    lower: float
    point: float
    max_certifiable: float
    by_score: dict[str, dict[str, float]]
    canaries: int
    included: int
    delta: float
    confidence: float
    estimator: str = ESTIMATOR

    def to_dict(self) -> dict:
        return asdict(self)


def audit(
    scores: Mapping[str, np.ndarray], included: np.ndarray, delta: float, confidence: float = 0.95
) -> OneRunAudit:
    """ε̂ from one or more score functions of the same canaries (union bound over them)."""
    if not scores:
        raise ValueError("need at least one score function")
    k = len(scores)
    level = 1 - (1 - confidence) / k
    point_level = 1 - (1 - POINT_CONFIDENCE) / k
    by_score = {
        name: {
            "lower": epsilon_lower_bound(s, included, delta, level),
            "point": epsilon_lower_bound(s, included, delta, point_level),
        }
        for name, s in scores.items()
    }
    included = np.asarray(included, dtype=bool)
    return OneRunAudit(
        lower=max(v["lower"] for v in by_score.values()),
        point=max(v["point"] for v in by_score.values()),
        max_certifiable=max_certifiable(included, delta, confidence, k),
        by_score=by_score,
        canaries=int(len(included)),
        included=int(included.sum()),
        delta=float(delta),
        confidence=float(confidence),
    )


class ScoreAccumulator:
    """Per-canary scores from a white-box view of every step: the sum and the maximum of each canary's
    observation (its coordinate of the released gradient, in units of one clipped canary contribution).

    The sum is the classic white-box score (the total update along the canary); the maximum catches a
    canary that is rarely sampled but then stands out (small sample rates, or a bug that removes most
    of the noise)."""

    def __init__(self, count: int) -> None:
        if count < 2:
            raise ValueError(f"need at least 2 canaries, got {count}")
        self.total = np.zeros(count)
        self.peak = np.full(count, -np.inf)
        self.steps = 0

    def observe(self, values: np.ndarray) -> None:
        values = np.asarray(values, dtype=np.float64)
        if values.shape != self.total.shape:
            raise ValueError(f"expected {self.total.shape[0]} canary observations, got shape {values.shape}")
        self.total += values
        np.maximum(self.peak, values, out=self.peak)
        self.steps += 1

    def scores(self) -> dict[str, np.ndarray]:
        if not self.steps:
            raise ValueError("no step was observed")
        return {"sum": self.total.copy(), "max": self.peak.copy()}
