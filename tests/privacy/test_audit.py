"""Empirical privacy from attack scores: Clopper-Pearson bounds, the epsilon an (alpha, beta) pair proves,
and the curve summaries, against closed forms and brute force."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpvae.privacy import audit


def test_clopper_pearson_matches_closed_forms_at_the_edges():
    # k = 0: upper bound solves (1 - p)^n = 1 - level; k = n: lower bound solves p^n = 1 - level.
    lower, upper = audit.clopper_pearson(0, 20, 0.95)
    assert lower == 0 and upper == pytest.approx(1 - 0.05 ** (1 / 20))
    lower, upper = audit.clopper_pearson(20, 20, 0.95)
    assert upper == 1 and lower == pytest.approx(0.05 ** (1 / 20))
    lower, upper = audit.clopper_pearson(7, 20, 0.9)
    assert lower < 7 / 20 < upper


def test_clopper_pearson_covers_the_true_rate_at_least_at_its_level():
    rng = np.random.default_rng(0)
    p, n = 0.03, 200
    k = rng.binomial(n, p, size=4000)
    _, upper = audit.clopper_pearson(k, n, 0.95)
    assert np.mean(upper >= p) >= 0.95


def test_epsilon_from_errors_inverts_the_dp_inequalities():
    eps, delta = 1.3, 1e-5
    alpha = 0.1
    beta = 1 - delta - math.exp(eps) * alpha  # on the boundary of f_{eps,delta}
    assert audit.epsilon_from_errors(alpha, beta, delta) == pytest.approx(eps)
    assert audit.epsilon_from_errors(0.5, 0.5, delta) == 0.0  # guessing proves nothing
    assert audit.epsilon_from_errors(0.0, 0.5, delta) == np.inf  # a perfect test at some threshold


def test_separable_scores_bound_epsilon_by_the_sample_size_and_identical_ones_prove_nothing():
    members, nonmembers = np.arange(100, 200.0), np.arange(0, 100.0)
    est = audit.empirical_epsilon(members, nonmembers, 1e-5, 0.95)
    # at the separating threshold alpha = beta = 0: the CP upper bounds are 1 - 0.025^(1/100)
    bound = 1 - 0.025 ** (1 / 100)
    assert est.lower_max == pytest.approx(math.log((1 - 1e-5 - bound) / bound))
    assert 0 < est.heldout < est.lower_max
    same = np.random.default_rng(1).normal(size=1000)
    est = audit.empirical_epsilon(same[:500], same[500:], 1e-5, 0.95)
    assert est.lower_max < 0.2 and est.heldout < 0.2


def test_the_curve_summary_agrees_with_brute_force_thresholds():
    rng = np.random.default_rng(2)
    members, nonmembers = rng.normal(0.5, 1, 300), rng.normal(0, 1, 400)
    curve = audit.tradeoff_curve(members, nonmembers)
    for t in np.sort(nonmembers)[[200, 360, 396]]:  # thresholds at observed scores
        alpha = np.mean(nonmembers >= t)
        beta = np.mean(members < t)
        i = int(np.flatnonzero(curve.thresholds == t)[0])
        assert curve.alpha[i] == pytest.approx(alpha) and curve.beta[i] == pytest.approx(beta)
    brute = max(np.mean(members >= t) for t in np.r_[members, nonmembers] if np.mean(nonmembers >= t) <= 0.01)
    assert audit.tpr_at_fpr(curve, 0.01) == pytest.approx(brute)
    pairs = np.mean(members[:, None] > nonmembers[None, :]) + 0.5 * np.mean(members[:, None] == nonmembers[None, :])
    assert audit.auc(members, nonmembers) == pytest.approx(pairs)


def test_bad_scores_are_refused():
    with pytest.raises(ValueError, match="non-empty"):
        audit.tradeoff_curve(np.array([]), np.array([1.0]))
    with pytest.raises(ValueError, match="finite"):
        audit.auc(np.array([np.nan]), np.array([1.0]))
