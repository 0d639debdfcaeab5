"""The one-run audit's statistics (`dpvae.privacy.one_run`): a valid lower bound on mechanisms of known ε,
the paper's p-value by brute force, the union bound over score functions, and its edge cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpvae.privacy import one_run

DELTA = 1e-5


def randomized_response(epsilon: float, m: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """m canaries, each included with probability ½; each score reports the inclusion bit through ε-DP
    randomized response (the worst case of an ε-DP mechanism on one bit), so ε is the truth."""
    rng = np.random.default_rng(seed)
    included = rng.random(m) < 0.5
    truthful = rng.random(m) < math.exp(epsilon) / (1 + math.exp(epsilon))
    scores = np.where(truthful, included, ~included).astype(float) + 1e-3 * rng.random(m)
    return scores, included


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_the_bound_holds_for_a_mechanism_of_known_epsilon(epsilon: float) -> None:
    """Over 30 independent audits of ε-DP randomized response, ε̂ ≤ ε every time (it may fail with
    probability ≤ 5 % each; the one-run bound is conservative enough that none does here)."""
    bounds = [one_run.epsilon_lower_bound(*randomized_response(epsilon, 2000, seed), DELTA) for seed in range(30)]
    assert max(bounds) <= epsilon
    assert np.median(bounds) > 0.5 * epsilon  # and it is not vacuous: 2,000 canaries get within a factor 2


def steinke_p_value(m: int, r: int, v: int, eps: float, delta: float) -> float:
    """The p-value of Steinke, Nasr & Jagielski (2023, Algorithm/Prop. 5.2's (ε, δ) form) written out term by
    term: P[Bin(r, q) ≥ v] + 2mδ·max_i P[v > Bin(r, q) ≥ v − i]/i, q = e^ε/(1 + e^ε)."""
    pmf = stats.binom.pmf(np.arange(r + 1), r, 1 / (1 + math.exp(-eps)))
    beta = pmf[v:].sum()
    alpha = max((pmf[v - i : v].sum() / i for i in range(1, v + 1)), default=0)
    return min(1.0, beta + alpha * delta * 2 * m)


def test_perfect_guesses_give_the_largest_epsilon_the_paper_allows() -> None:
    """All 60 included canaries scored above all 60 excluded ones: the estimator's ε̂ is the ε at which
    the paper's p-value of 60 correct guesses out of 60 equals the significance, Bonferroni-corrected over
    the estimator's thresholds (2 to 3 here) — found by brute-force bisection on the p-value above."""
    m, n_in = 120, 60
    included = np.arange(m) < n_in
    eps_hat = one_run.epsilon_lower_bound(included.astype(float), included, DELTA, 0.95)

    def solve(significance: float) -> float:
        low, high = 0.0, 20.0
        for _ in range(60):
            mid = (low + high) / 2
            low, high = (mid, high) if steinke_p_value(m, n_in, n_in, mid, DELTA) < significance else (low, mid)
        return low

    assert solve(0.05 / 3) - 1e-4 <= eps_hat <= solve(0.05) + 1e-4
    assert one_run.max_certifiable(included, DELTA) == pytest.approx(eps_hat)


def test_no_signal_proves_nothing_and_separation_proves_more_with_more_canaries() -> None:
    rng = np.random.default_rng(0)
    included = rng.random(2000) < 0.5
    assert one_run.epsilon_lower_bound(rng.normal(size=2000), included, DELTA) < 0.2
    few, many = (one_run.max_certifiable(rng.random(m) < 0.5, DELTA) for m in (200, 2000))
    assert 2 < few < many < 6


def test_several_score_functions_pay_a_union_bound() -> None:
    scores, included = randomized_response(2.0, 1000, 1)
    noise = np.random.default_rng(2).normal(size=1000)
    alone = one_run.audit({"rr": scores}, included, DELTA)
    both = one_run.audit({"rr": scores, "noise": noise}, included, DELTA)
    assert both.by_score["rr"]["lower"] == pytest.approx(one_run.epsilon_lower_bound(scores, included, DELTA, 0.975))
    assert both.lower == both.by_score["rr"]["lower"] < alone.lower  # each score at level 1 - 0.05/2
    assert alone.lower < alone.point <= alone.max_certifiable + 1  # the central estimate sits above
    assert both.canaries == 1000 and both.included == int(included.sum())


def test_bad_inputs_are_refused() -> None:
    with pytest.raises(ValueError, match="included and excluded"):
        one_run.epsilon_lower_bound(np.zeros(4), np.ones(4, dtype=bool), DELTA)
    with pytest.raises(ValueError, match="boolean"):
        one_run.epsilon_lower_bound(np.zeros(4), np.array([0, 1, 0, 1]), DELTA)
    with pytest.raises(ValueError, match="finite"):
        one_run.epsilon_lower_bound(np.array([np.nan, 0, 1, 2]), np.array([True, False, True, False]), DELTA)
    with pytest.raises(ValueError, match="score function"):
        one_run.audit({}, np.array([True, False]), DELTA)


def test_the_accumulator_keeps_the_sum_and_the_maximum() -> None:
    acc = one_run.ScoreAccumulator(3)
    for row in ([1.0, -2.0, 0.5], [0.0, 3.0, -1.0]):
        acc.observe(np.array(row))
    scores = acc.scores()
    assert scores["sum"].tolist() == [1.0, 1.0, -0.5] and scores["max"].tolist() == [1.0, 3.0, 0.5]
    with pytest.raises(ValueError, match="expected 3"):
        acc.observe(np.zeros(2))
