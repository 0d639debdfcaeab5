"""Tests of the accountant module: cross-checks with dp-accounting, formulas, conversions, calibration."""

from __future__ import annotations

import math

import dp_accounting as dpa
import numpy as np
import pytest
from dp_accounting.rdp import RdpAccountant
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from scipy import integrate, special, stats

from dpvae.privacy import accounting as acc
from dpvae.privacy.ledger import Mechanism

DELTA = 1e-5
# (q, σ, T): full batch, P3GM-, PriVAE- and DP²-VAE-like rates, small and large T.
GRID = [
    (1.0, 1.0, 1),
    (1.0, 100.0, 60),
    (1.0, 5.0, 1),
    (0.01, 1.1, 1000),
    (100 / 9442, 2.1, 1417),
    (256 / 60000, 0.8, 2344),
    (1e-3, 1.0, 20000),
    (0.3, 3.0, 5),
]


def dp_accounting_event(q: float, sigma: float, steps: int) -> dpa.DpEvent:
    gaussian = dpa.GaussianDpEvent(sigma)
    return dpa.SelfComposedDpEvent(gaussian if q == 1 else dpa.PoissonSampledDpEvent(q, gaussian), steps)


def dp_accounting_curve(event: dpa.DpEvent, orders) -> np.ndarray:
    accountant = RdpAccountant(orders=list(orders))
    accountant.compose(event)
    return accountant.rdp


def classic(orders, rdp, delta: float) -> float:
    return float(np.min(np.asarray(rdp) - math.log(delta) / (np.asarray(orders) - 1)))


# ------------------------------------------------------------------------ cross-checks with dp-accounting


@pytest.mark.parametrize("q, sigma, steps", GRID)
def test_epsilon_matches_dp_accounting_improved(q: float, sigma: float, steps: int) -> None:
    ours, _ = acc.epsilon([Mechanism("m", sigma, q, steps)], DELTA, "improved", acc.DEFAULT_ORDERS)
    accountant = RdpAccountant(orders=list(acc.DEFAULT_ORDERS))
    accountant.compose(dp_accounting_event(q, sigma, steps))
    assert ours == pytest.approx(accountant.get_epsilon(DELTA), rel=0.01)


@pytest.mark.parametrize("q, sigma, steps", GRID)
def test_epsilon_matches_dp_accounting_classic(q: float, sigma: float, steps: int) -> None:
    ours, _ = acc.epsilon([Mechanism("m", sigma, q, steps)], DELTA, "classic", acc.DEFAULT_ORDERS)
    curve = dp_accounting_curve(dp_accounting_event(q, sigma, steps), acc.DEFAULT_ORDERS)
    theirs = classic(acc.DEFAULT_ORDERS, curve, DELTA)
    assert ours == pytest.approx(theirs, rel=0.01)


@pytest.mark.parametrize("q, sigma, steps", GRID[:6])
def test_integer_order_curve_equals_dp_accounting(q: float, sigma: float, steps: int) -> None:
    """Same formula at integer orders. (At fractional orders dp-accounting sums the absolute values of
    the alternating series, an upper bound; opacus, like the TF-Privacy the papers vendored, keeps the
    signs — the curves then differ by up to ~20 % at α = 1.25, the ε only where such an order wins.)"""
    orders = (2.0, 3.0, 8.0, 32.0, 64.0)
    ours = acc.subsampled_gaussian_rdp(sigma, q, steps, orders)
    np.testing.assert_allclose(ours, dp_accounting_curve(dp_accounting_event(q, sigma, steps), orders), rtol=1e-9)


def test_heterogeneous_composition_matches_dp_accounting() -> None:
    """P3GM Theorem 4: DP-PCA + T_e(2K+1) EM Gaussians + DP-SGD, as one ComposedDpEvent."""
    mechanisms = [
        Mechanism("pca", 5.0),
        Mechanism("em", 100.0, 1.0, 60),
        Mechanism("sgd", 1.4, 300 / 63000, 840),
    ]
    event = dpa.ComposedDpEvent([dp_accounting_event(m.sample_rate, m.noise_multiplier, m.steps) for m in mechanisms])
    accountant = RdpAccountant(orders=list(acc.DEFAULT_ORDERS))
    accountant.compose(event)
    ours, _ = acc.epsilon(mechanisms, DELTA)
    assert ours == pytest.approx(accountant.get_epsilon(DELTA), rel=0.01)
    single = [acc.epsilon([m], DELTA)[0] for m in mechanisms]
    assert ours < sum(single)  # RDP composition beats adding the ε


# ---------------------------------------------------------------------------------------- RDP curves


def test_mechanism_rdp_full_batch_and_edge_cases() -> None:
    orders = (1.5, 2.0, 10.0)
    np.testing.assert_allclose(Mechanism("g", 2.0, 1.0, 3).rdp(orders), [3 * a / 8 for a in orders])
    assert np.all(np.isinf(Mechanism("no noise", 0.0, 0.5, 10).rdp(orders)))
    np.testing.assert_array_equal(Mechanism("unused", 0.0, 0.5, 0).rdp(orders), 0.0)


def test_subsampled_rdp_is_the_renyi_divergence_of_the_mixture_by_monte_carlo() -> None:
    """D_2((1−q)N(0,σ²) + qN(1,σ²) ‖ N(0,σ²)) = log E_P[P/Q], estimated from samples of P."""
    q, sigma = 0.2, 1.0
    rng = np.random.default_rng(0)
    samples = rng.normal(0.0, sigma, 400_000) + (rng.random(400_000) < q)
    ratio = (1 - q) + q * np.exp((2 * samples - 1) / (2 * sigma**2))
    estimate = math.log(ratio.mean())
    assert acc.subsampled_gaussian_rdp(sigma, q, 1, [2.0])[0] == pytest.approx(estimate, rel=0.02)


def _renyi(log_p, log_r, alpha: float, low: float = -25, high: float = 25, points=None) -> float:
    """D_α(P ‖ R) by quadrature over [low, high], in log space."""
    value = integrate.quad(
        lambda z: math.exp(alpha * log_p(z) + (1 - alpha) * log_r(z)), low, high, limit=400, points=points
    )[0]
    return math.log(value) / (alpha - 1)


@pytest.mark.parametrize("alpha", [2.0, 3.0, 6.0])
def test_replace_one_bound_is_sound_and_add_remove_is_not(alpha: float) -> None:
    """Worst replace-one pair of one record (contribution +1 vs −1) under Poisson sampling."""
    q, sigma = 0.1, 1.0

    def mixture(shift: float):
        return lambda z: special.logsumexp(
            [math.log(1 - q) + stats.norm.logpdf(z, 0, sigma), math.log(q) + stats.norm.logpdf(z, shift, sigma)]
        )

    exact = _renyi(mixture(1.0), mixture(-1.0), alpha)
    bound = acc.replace_one_rdp(sigma, q, 1, [alpha])[0]
    add_remove = acc.subsampled_gaussian_rdp(sigma, q, 1, [alpha])[0]
    assert exact <= bound
    assert add_remove < exact  # the add/remove curve alone would under-count replace-one
    assert np.isfinite(bound)


def test_replace_one_bound_dominates_add_remove_and_full_batch_is_exact() -> None:
    orders = acc.DEFAULT_ORDERS
    for q, sigma, steps in GRID[3:7]:
        replace = acc.replace_one_rdp(sigma, q, steps, orders)
        assert np.all(np.isfinite(replace))
        assert np.all(replace >= acc.subsampled_gaussian_rdp(sigma, q, steps, orders))
    np.testing.assert_allclose(acc.replace_one_rdp(2.0, 1.0, 4, [3.0]), [4 * 3 / 8])
    mechanism = Mechanism("sgd", 1.0, 0.01, 100)
    assert acc.epsilon([mechanism], DELTA, adjacency="replace-one")[0] > acc.epsilon([mechanism], DELTA)[0]


@pytest.mark.parametrize("alpha", [1.5, 2.0, 4.0])
def test_fixed_partition_bound_holds_for_any_shared_branch_and_is_attained_far_away(alpha: float) -> None:
    """P = (1−q)R + qN(1, s²), Q = (1−q)R + qN(−1, s²) (the record's subset drawn with probability q, its
    statistic moved by the sensitivity 2 ⇒ multiplier s/2): the bound holds for R anywhere and is
    approached when R (another subset's output) is far away; the Poisson curve is not a bound then."""
    q, s = 0.2, 2.0

    def mixture(shift: float, centre: float):
        return lambda z: special.logsumexp(
            [math.log(1 - q) + stats.norm.logpdf(z, centre, s), math.log(q) + stats.norm.logpdf(z, shift, s)]
        )

    bound = acc.fixed_partition_rdp(s / 2, q, 1, [alpha])[0]
    for centre in (0.0, 3.0, -8.0):
        assert _renyi(mixture(1.0, centre), mixture(-1.0, centre), alpha) <= bound * (1 + 1e-9)
    far = _renyi(mixture(1.0, 30.0), mixture(-1.0, 30.0), alpha, -30, 60, points=[-1.0, 1.0, 30.0])
    assert far == pytest.approx(bound, rel=1e-3)
    poisson = acc.subsampled_gaussian_rdp(s / 2, q, 1, [alpha])[0]
    assert poisson < far  # Poisson amplification under-counts a fixed partition


def test_fixed_partition_curve_edge_cases_and_dispatch() -> None:
    orders = [1.5, 2.0, 8.0]
    np.testing.assert_allclose(acc.fixed_partition_rdp(2.0, 1.0, 3, orders), 3 * np.asarray(orders) / 8)
    np.testing.assert_array_equal(acc.fixed_partition_rdp(2.0, 0.1, 0, orders), 0.0)
    assert np.all(np.isinf(acc.fixed_partition_rdp(0.0, 0.1, 1, orders)))
    assert np.all(np.isfinite(acc.fixed_partition_rdp(0.01, 1e-3, 20000, [1.0001, 512.0])))  # no overflow
    mechanism = Mechanism("subset", 1.5, 0.1, 7, sampling="fixed-partition")
    for adjacency in acc.ADJACENCIES:
        np.testing.assert_array_equal(mechanism.rdp(orders, adjacency), acc.fixed_partition_rdp(1.5, 0.1, 7, orders))
    assert np.all(mechanism.rdp(orders) >= Mechanism("poisson", 1.5, 0.1, 7).rdp(orders))
    with pytest.raises(ValueError, match="sampling"):
        Mechanism("m", 1.0, sampling="uniform")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Poisson"):
        acc.account([mechanism], DELTA, "moments (sequential)")


# ---------------------------------------------------------------------------------------- conversions


def test_conversions_hand_values() -> None:
    delta = math.exp(-3)
    assert acc.rdp_to_dp([2.0], [1.0], delta, "classic") == (pytest.approx(4.0), 2.0)
    assert acc.rdp_to_dp([2.0], [1.0], delta, "improved")[0] == pytest.approx(4 - 2 * math.log(2))
    eps, order = acc.rdp_to_dp([2.0, 10.0], [0.1, 0.5], delta, "classic")  # 3.1 vs 0.8333
    assert (eps, order) == (pytest.approx(0.5 + 3 / 9), 10.0)


@pytest.mark.parametrize("q, sigma, steps", GRID)
def test_improved_conversion_never_exceeds_classic(q: float, sigma: float, steps: int) -> None:
    mechanism = [Mechanism("m", sigma, q, steps)]
    assert acc.epsilon(mechanism, DELTA, "improved")[0] <= acc.epsilon(mechanism, DELTA, "classic")[0]


def test_zcdp_and_gaussian_bounds_hand_values() -> None:
    assert acc.zcdp_epsilon(0.25, math.exp(-4)) == pytest.approx(0.25 + 2 * math.sqrt(0.25 * 4))
    assert acc.gaussian_epsilon(2.0, 1.25 * math.exp(-2)) == pytest.approx(1.0)
    assert acc.zcdp_epsilon(0.0, DELTA) == 0.0


def test_zcdp_formula_is_classic_rdp_conversion_at_the_optimal_order() -> None:
    """A Gaussian's RDP curve ρα converted classically is minimised at α* = 1 + √(log(1/δ)/ρ)."""
    sigma, steps = 30.0, 60
    rho = steps / (2 * sigma**2)
    best_order = 1 + math.sqrt(math.log(1 / DELTA) / rho)
    rdp_eps, _ = acc.epsilon([Mechanism("em", sigma, 1.0, steps)], DELTA, "classic", [best_order])
    assert rdp_eps == pytest.approx(acc.zcdp_epsilon(rho, DELTA), rel=1e-12)


def test_moments_accountant_equals_abadi_log_moments_by_quadrature() -> None:
    """Abadi et al.: α_M(λ) = log E_{z~μ}[(μ(z)/μ₀(z))^λ], μ = (1−q)μ₀ + qμ₁, μ₀ = N(0,σ²), μ₁ = N(1,σ²);
    ε = min_λ (T·α_M(λ) + log(1/δ))/λ. Integer-order RDP with the classic conversion must agree."""
    q, sigma, steps, max_lambda = 0.05, 1.5, 200, 8

    def log_moment(lam: int) -> float:
        def integrand(z: float) -> float:
            ratio = (1 - q) + q * math.exp((2 * z - 1) / (2 * sigma**2))
            return stats.norm.pdf(z, 0, sigma) * ratio ** (lam + 1)

        return math.log(integrate.quad(integrand, -30, 30, limit=200)[0])

    bounds = {lam: (steps * log_moment(lam) + math.log(1 / DELTA)) / lam for lam in range(1, max_lambda + 1)}
    best = min(bounds, key=bounds.__getitem__)
    assert 1 < best < max_lambda  # an interior optimum, so the returned λ is tested
    assert acc.moments_accountant_epsilon(sigma, q, steps, DELTA, max_lambda) == (
        pytest.approx(bounds[best], rel=1e-6),
        best,
    )
    rdp = acc.subsampled_gaussian_rdp(sigma, q, steps, acc.INTEGER_ORDERS)
    eps, order = acc.rdp_to_dp(acc.INTEGER_ORDERS, rdp, DELTA, "classic")
    assert acc.moments_accountant_epsilon(sigma, q, steps, DELTA) == (pytest.approx(eps), order - 1)


def test_abadi_kappa_is_the_ratio_of_abadi_bounds() -> None:
    """σ ≥ c₂·q·√(T log(1/δ))/ε at (ε/2, δ/2) over the same at (ε, δ)."""

    def bound(eps: float, delta: float) -> float:
        return 1.7 * 0.01 * math.sqrt(100 * math.log(1 / delta)) / eps

    assert acc.abadi_kappa(DELTA) == pytest.approx(bound(0.5, DELTA / 2) / bound(1.0, DELTA))
    assert acc.abadi_kappa(DELTA) == pytest.approx(2.059, abs=5e-4)  # docs/papers.md §1.4


# ----------------------------------------------------------------------------------- monotonicity


def test_epsilon_is_monotone_in_sigma_q_and_steps() -> None:
    def eps(sigma: float, q: float, steps: int) -> float:
        return acc.epsilon([Mechanism("m", sigma, q, steps)], DELTA)[0]

    sigmas = [eps(s, 0.01, 500) for s in (0.6, 0.9, 1.3, 2.0, 4.0)]
    rates = [eps(1.0, q, 500) for q in (0.001, 0.01, 0.05, 0.2, 1.0)]
    steps = [eps(1.0, 0.01, t) for t in (1, 10, 100, 1000, 10000)]
    assert np.all(np.diff(sigmas) < 0)
    assert np.all(np.diff(rates) > 0)
    assert np.all(np.diff(steps) > 0)


# ------------------------------------------------------------------------------------ calibration

FAST_ORDERS = (1.5, 2.0, 3.0, 5.0, 8.0, 16.0, 32.0, 64.0)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sigma=st.floats(0.6, 8.0),
    q=st.one_of(st.just(1.0), st.floats(1e-3, 0.5)),
    steps=st.integers(1, 3000),
    conversion=st.sampled_from(acc.CONVERSIONS),
)
def test_calibration_inverts_accounting(sigma: float, q: float, steps: int, conversion: str) -> None:
    eps, _ = acc.epsilon([Mechanism("m", sigma, q, steps)], DELTA, conversion, FAST_ORDERS)
    assume(eps > 0)
    assert acc.calibrate_noise(eps, DELTA, q, steps, conversion, FAST_ORDERS) == pytest.approx(sigma, rel=1e-7)


def test_calibration_hits_the_target() -> None:
    sigma = acc.calibrate_noise(1.0, DELTA, 0.01, 1000, "improved")
    assert acc.epsilon([Mechanism("m", sigma, 0.01, 1000)], DELTA)[0] == pytest.approx(1.0, rel=1e-8)
    assert acc.epsilon([Mechanism("m", sigma, 0.01, 1000)], DELTA)[0] <= 1.0  # rounded up: no overspending
    replace = acc.calibrate_noise(1.0, DELTA, 0.01, 1000, adjacency="replace-one")
    assert replace > sigma


def test_calibration_unreachable_target_is_a_clear_error() -> None:
    # The classic conversion cannot go below log(1/δ)/(α_max − 1) ≈ 0.0225 for α_max = 512.
    with pytest.raises(ValueError, match="target_epsilon=0.01 is unreachable"):
        acc.calibrate_noise(0.01, DELTA, 0.01, 100, "classic")
    with pytest.raises(ValueError, match="target_epsilon"):
        acc.calibrate_noise(-1.0, DELTA, 0.01, 100)


@given(target=st.floats(0.05, 50.0), offset=st.floats(-0.3, 0.3))
@settings(max_examples=40, deadline=None)
def test_solver_rounds_up_so_the_target_is_never_exceeded(target: float, offset: float) -> None:
    """Even for a step-like ε(σ) that Brent's tolerance would overshoot, the returned σ meets the target."""

    def eps(sigma: float) -> float:
        return target * math.exp(min(700.0, -1e6 * (math.log(sigma) - offset)))  # extremely steep at σ = e^offset

    sigma = acc.solve_noise_multiplier(eps, target)
    assert eps(sigma) <= target
    assert sigma == pytest.approx(math.exp(offset), rel=1e-6)


# ------------------------------------------------------------------------------ accountants by name


def test_sequential_accountant_splits_delta_and_adds_epsilons() -> None:
    mechanisms = [Mechanism("pca", 5.0), Mechanism("em", 100.0, 1.0, 60), Mechanism("sgd", 1.4, 300 / 63000, 840)]
    eps, order = acc.account(mechanisms, DELTA, "gaussian+zcdp+moments (sequential)", "classic")
    expected = (
        acc.gaussian_epsilon(5.0, DELTA / 3)
        + acc.zcdp_epsilon(60 / (2 * 100.0**2), DELTA / 3)
        + acc.moments_accountant_epsilon(1.4, 300 / 63000, 840, DELTA / 3)[0]
    )
    assert order is None and eps == pytest.approx(expected, rel=1e-12)
    two = acc.account(mechanisms[:2], DELTA, "rdp+rdp (sequential)", "classic")[0]
    assert two == pytest.approx(sum(acc.epsilon([m], DELTA / 2, "classic")[0] for m in mechanisms[:2]))


def test_order_search_finds_a_local_minimum_below_integer_orders() -> None:
    mechanism = [Mechanism("decoder", 0.5, 1e-3, 20000)]
    eps, order = acc.epsilon_order_search(mechanism, DELTA)
    assert 1 < order < 512
    assert eps <= acc.epsilon(mechanism, DELTA, "classic", acc.INTEGER_ORDERS)[0]
    for neighbour in (order - 0.01, order + 0.01):
        assert eps <= acc.epsilon(mechanism, DELTA, "classic", [neighbour])[0] + 1e-12
    assert acc.account(mechanism, DELTA, "rdp-order-search", "classic", (1.0, 512.0)) == (eps, order)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"delta": 0.0}, "delta"),
        ({"delta": 1.0}, "delta"),
        ({"conversion": "tight"}, "conversion"),
        ({"adjacency": "swap"}, "adjacency"),
        ({"orders": (1.0, 2.0)}, "orders"),
        ({"accountant": "moments"}, "accountant"),
        ({"accountant": "rdp+zcdp (sequential)"}, "parts"),
        ({"accountant": "rdp+laplace+rdp (sequential)"}, "accountant part"),
    ],
)
def test_bad_arguments_name_the_argument(kwargs: dict, message: str) -> None:
    arguments = {
        "mechanisms": [Mechanism("a", 1.0), Mechanism("b", 1.0, 0.1, 10), Mechanism("c", 2.0)],
        "delta": DELTA,
        **kwargs,
    }
    with pytest.raises(ValueError, match=message):
        acc.account(**arguments)


def test_part_accountants_reject_mechanisms_they_cannot_bound() -> None:
    subsampled, repeated = Mechanism("sgd", 1.0, 0.1, 10), Mechanism("em", 10.0, 1.0, 5)
    with pytest.raises(ValueError, match="sample_rate 1"):
        acc.account([subsampled], DELTA, "zcdp (sequential)")
    with pytest.raises(ValueError, match="single release"):
        acc.account([repeated], DELTA, "gaussian (sequential)")
    with pytest.raises(ValueError, match="noise_multiplier"):
        acc.subsampled_gaussian_rdp(-1.0, 0.5, 1, [2.0])
    with pytest.raises(ValueError, match="mechanisms"):
        acc.epsilon([], DELTA)


def test_a_remembered_rdp_curve_is_opacus_curve_bit_for_bit_and_cannot_be_changed_through_a_result():
    """The one-step curves are remembered (a calibration and every ledger ask for the same σ again): T steps are
    opacus' `compute_rdp` of T steps to the bit, and a caller that changes its result changes no later one."""
    from opacus.accountants.analysis.rdp import compute_rdp

    orders = list(np.asarray(tuple(acc.DEFAULT_ORDERS), dtype=np.float64))
    for sigma, q, steps in [(0.7, 0.01, 3000), (1.3, 0.25, 17), (5.0, 1.0, 1), (0.9, 0.001, 20000)]:
        expected = np.maximum(np.asarray(compute_rdp(q=q, noise_multiplier=sigma, steps=steps, orders=orders)), 0)
        first = acc.subsampled_gaussian_rdp(sigma, q, steps, acc.DEFAULT_ORDERS)
        np.testing.assert_array_equal(first, expected)
        first[:] = -1.0  # a caller's own copy
        again = acc.subsampled_gaussian_rdp(sigma, q, steps, acc.DEFAULT_ORDERS)
        np.testing.assert_array_equal(again, expected)
