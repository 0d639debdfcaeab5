"""Each paper's accounting against the [computed] values of docs/papers.md, sound variants, stated sensitivities."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from dpvae.errors import PrivacyBudgetExceeded
from dpvae.methods.dp2vae.accounting import dp2vae_epsilon, dp2vae_ledger, dp2vae_noise, dp2vae_sound_epsilon
from dpvae.methods.p3gm.accounting import (
    NOT_DP_NONPRIVATE_MEAN,
    P3GMSetting,
    p3gm_composition_comparison,
    p3gm_fit_sgd_sigma,
    p3gm_train_size,
    sound_record,
)
from dpvae.methods.privae.accounting import PRIVAE_ORDERS, SQRT5, privae_kappa, privae_ledger, privae_noise, tight_kappa
from dpvae.privacy.accounting import (
    INTEGER_ORDERS,
    abadi_kappa,
    calibrate_noise,
    epsilon,
    fixed_partition_rdp,
    rdp_to_dp,
    replace_one_rdp,
)
from dpvae.privacy.ledger import Accounting, Mechanism

DELTA = 1e-5


def paper_code(*args, **kwargs) -> P3GMSetting:
    """A P3GM setting as the reference code runs it: centred with the data's exact (non-private) mean."""
    return P3GMSetting(*args, centring="nonprivate", **kwargs)


# ------------------------------------------------------------------------------------------------ P3GM

# exp.sh (docs/papers.md §3.4): rows before the 90/10 split, B, epochs, σ_s, σ_p, [computed] ε.
EXP_SH = {
    "credit": (10_492, 100, 15, 2.1, 10.0, 0.976),
    "isolet": (7_797, 100, 2, 1.6, 5.0, 1.006),
    "esr": (11_500, 100, 2, 1.4, 5.0, 1.000),
    "adult": (48_842, 200, 5, 1.4, 5.0, 1.009),
    "mnist": (70_000, 300, 4, 1.4, 5.0, 0.986),
}


def test_train_size_is_sklearn_split() -> None:
    assert [p3gm_train_size(n) for n, *_ in EXP_SH.values()] == [9442, 7017, 10350, 43957, 63000]
    with pytest.raises(ValueError, match="n_rows"):
        p3gm_train_size(1)


@pytest.mark.parametrize("dataset", EXP_SH)
def test_p3gm_exp_sh_epsilons(dataset: str) -> None:
    rows, batch, epochs, sgd_sigma, pca_sigma, expected = EXP_SH[dataset]
    setting = paper_code(p3gm_train_size(rows), batch, epochs, sgd_sigma, pca_sigma)
    assert setting.ledger().epsilon == pytest.approx(expected, rel=0.01)


@pytest.mark.parametrize(
    "sgd_sigma, epochs, pca_sigma, em_sigma, em_iters, expected",
    [
        (0.0, 0, 35.0, 250.0, 2, 0.103),
        (2.2, 2, 10.0, 150.0, 10, 0.494),
        (2.1, 15, 10.0, 100.0, 20, 0.976),
        (1.0, 20, 1.2, 100.0, 20, 5.002),
    ],
)
def test_p3gm_fig4_epsilons(
    sgd_sigma: float, epochs: int, pca_sigma: float, em_sigma: float, em_iters: int, expected: float
) -> None:
    setting = paper_code(9442, 100, epochs, sgd_sigma, pca_sigma, em_sigma, em_iters)
    assert setting.ledger().epsilon == pytest.approx(expected, rel=0.01)


def test_p3gm_fig5_and_fig7_epsilons() -> None:
    """Further [computed] values of docs/papers.md §3.5 (DP-VAE = the DP-SGD mechanism alone)."""
    assert paper_code(63000, 300, 3, 1.1, 10.0).ledger().epsilon == pytest.approx(0.957, rel=0.01)
    assert paper_code(63000, 300, 10, 1.27, 10.0).ledger().epsilon == pytest.approx(1.004, rel=0.01)
    assert paper_code(9442, 100, 30, 2.7, 10.0).ledger().epsilon == pytest.approx(1.025, rel=0.01)
    dp_vae = paper_code(63000, 300, 10, 1.2, 10.0)
    sgd_only = Accounting((dp_vae.sgd_record(),), DELTA)
    assert sgd_only.epsilon == pytest.approx(0.974, rel=0.01)


FIG9 = {  # σ_s: (RDP ε, baseline ε), K = 1 and K = 3, classic conversion (docs/papers.md §3.5 fig9)
    1: {0.8: (2.750, 4.237), 1.0: (1.722, 3.019), 1.4: (1.205, 2.208), 2.0: (1.116, 1.836), 3.0: (1.078, 1.652)},
    3: {0.8: (2.774, 4.446), 1.0: (1.762, 3.228), 1.4: (1.282, 2.418), 2.0: (1.201, 2.046), 3.0: (1.166, 1.861)},
}


@pytest.mark.parametrize("components", FIG9)
def test_p3gm_fig9_rdp_and_baseline(components: int) -> None:
    for sgd_sigma, (rdp, baseline) in FIG9[components].items():
        setting = P3GMSetting(63000, 300, 4, sgd_sigma, 5.0, n_components=components)
        comparison = p3gm_composition_comparison(setting)
        assert comparison.proposed.epsilon == pytest.approx(rdp, rel=0.01)
        assert comparison.baseline.epsilon == pytest.approx(baseline, rel=0.01)
        assert comparison.proposed.epsilon < comparison.baseline.epsilon
    improved = p3gm_composition_comparison(P3GMSetting(63000, 300, 4, 1.4, 5.0), conversion="improved")
    if components == 1:
        assert improved.proposed.epsilon == pytest.approx(0.986, rel=0.01)


def test_p3gm_sound_choices() -> None:
    setting = P3GMSetting(9442, 100, 15, 2.1, 10.0, n_components=3, mean_sigma=20.0, mean_clip=5.0)
    mean, pca, *em, sgd = (sound_record(r, 20, 3, fixed_batches=False) for r in setting.records())
    assert mean.noise_multiplier == pytest.approx(10.0) and mean.sensitivity == pytest.approx(10.0)  # 2R, σ_m/2
    assert pca.noise_multiplier == pytest.approx(10.0 / math.sqrt(2)) and pca.sensitivity == pytest.approx(2**0.5)
    assert {m.noise_multiplier for m in em} == {100.0}
    assert sum(m.steps for m in em) == (20 + 1) * 7 and sum(m.steps for m in setting.records()[2:5]) == 20 * 7
    assert (sgd.noise_multiplier, sgd.sample_rate, sgd.steps) == (2.1, 100 / 9442, 1417)
    paper_mean = setting.records()[0]
    assert (paper_mean.noise_multiplier, paper_mean.sensitivity) == (20.0, 5.0)
    ledger = setting.ledger(target_epsilon=1.0)
    assert ledger.sound is not None and ledger.sound.adjacency == "replace-one" and "replace-one" in ledger.notes
    assert ledger.headline == "paper" and ledger.not_dp is None
    by_hand = (
        mean.rdp(ledger.sound.orders)
        + pca.rdp(ledger.sound.orders)
        + sum(m.rdp(ledger.sound.orders) for m in em)
        + replace_one_rdp(2.1, 100 / 9442, 1417, ledger.sound.orders)
    )
    assert ledger.sound.epsilon == pytest.approx(rdp_to_dp(ledger.sound.orders, by_hand, DELTA, "improved")[0])
    assert ledger.sound.epsilon > ledger.epsilon


def test_p3gm_centring_choices() -> None:
    """The DP mean is budgeted; no centring costs nothing; the code's exact mean is marked not DP."""
    dp, zero, code = (P3GMSetting(9442, 100, 15, 2.1, 10.0, centring=c) for c in ("dp", "zero", "nonprivate"))
    em = ["dp_em.weights", "dp_em.means", "dp_em.variances"]
    assert [m.name for m in dp.records()] == ["dp_pca.mean", "dp_pca", *em, "dpsgd"]  # as a run's mechanisms name them
    assert [m.name for m in zero.records()] == ["dp_pca", *em, "dpsgd"]
    assert zero.ledger().epsilon == pytest.approx(code.ledger().epsilon)
    assert zero.ledger().epsilon < dp.ledger().epsilon
    assert dp.ledger().epsilon == pytest.approx(0.9986, abs=5e-4)  # credit, exp.sh, DP mean at sigma_m 20
    not_dp = code.ledger()
    assert not_dp.not_dp == NOT_DP_NONPRIVATE_MEAN and not_dp.sound is None and "not DP" in not_dp.notes
    assert "non-private centring mean" in not_dp.notes
    assert zero.ledger().sound is not None and zero.ledger().not_dp is None
    with pytest.raises(ValueError, match="centring"):
        P3GMSetting(9442, 100, 15, 2.1, 10.0, centring="empirical")  # type: ignore[arg-type]


# (rows before the split, B, epochs, exp.sh σ_s, σ_p, σ_s raised so that ε <= 1 with the DP mean)
FITTED = {
    "adult": (48_842, 200, 5, 1.4, 5.0, 1.535),
    "isolet": (7_797, 100, 2, 1.6, 5.0, 1.735),
    "credit": (10_492, 100, 15, 2.1, 10.0, 2.1),
}


@pytest.mark.parametrize("dataset", FITTED)
def test_p3gm_fit_raises_sigma_to_meet_the_target_exactly(dataset: str) -> None:
    rows, batch, epochs, sigma, pca_sigma, fitted_sigma = FITTED[dataset]
    setting = P3GMSetting(p3gm_train_size(rows), batch, epochs, sigma, pca_sigma)
    fitted = p3gm_fit_sgd_sigma(setting, 1.0)
    assert fitted.sgd_sigma == pytest.approx(fitted_sigma, abs=5e-4) and fitted.sgd_sigma >= sigma
    assert fitted.ledger().epsilon <= 1.0  # no tolerance
    if fitted.sgd_sigma > sigma:  # the smallest such σ_s: a little less overspends
        assert replace(fitted, sgd_sigma=fitted.sgd_sigma * (1 - 1e-6)).ledger().epsilon > 1.0
    with pytest.raises(PrivacyBudgetExceeded, match="encoding phase"):
        p3gm_fit_sgd_sigma(setting, 0.1)  # DP mean + DP-PCA + DP-EM alone exceed 0.1


def test_p3gm_setting_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="batch_size"):
        P3GMSetting(100, 200, 1, 1.0, 5.0)
    with pytest.raises(ValueError, match="pca_sigma"):
        P3GMSetting(100, 10, 1, 1.0, 0.0)
    with pytest.raises(ValueError, match="em_iters"):
        P3GMSetting(100, 10, 1, 1.0, 5.0, em_iters=-1)


# ---------------------------------------------------------------------------------------------- PriVAE

PRIVAE_RATE, PRIVAE_STEPS = 256 / 60000, math.ceil(10 * 60000 / 256)
# ε: (σ for (ε, δ), σ for (ε/2, δ/2)), docs/papers.md §1.4, classic conversion, δ = 1e-5.
PRIVAE_TABLE = {
    1: (1.322, 2.226),
    2: (0.939, 1.353),
    5: (0.664, 0.878),
    10: (0.543, 0.679),
    20: (0.434, 0.546),
    50: (0.383, 0.419),
    100: (0.361, 0.384),
}


def _within_one_percent_of_calibrated(sigma: float, target: float, delta: float, rate: float, steps: int) -> bool:
    """ε decreases in σ, so the calibrated σ lies in [0.99σ, 1.01σ] iff ε(0.99σ) ≥ target ≥ ε(1.01σ)."""

    def eps(s: float) -> float:
        return epsilon([Mechanism("dp-sgd", s, rate, steps)], delta, "classic", PRIVAE_ORDERS)[0]

    return eps(0.99 * sigma) >= target >= eps(1.01 * sigma)


@pytest.mark.parametrize("eps", PRIVAE_TABLE)
def test_privae_sigma_table(eps: float) -> None:
    sigma, sigma_half = PRIVAE_TABLE[eps]
    assert PRIVAE_STEPS == 2344
    assert _within_one_percent_of_calibrated(sigma, eps, DELTA, PRIVAE_RATE, PRIVAE_STEPS)
    assert _within_one_percent_of_calibrated(sigma_half, eps / 2, DELTA / 2, PRIVAE_RATE, PRIVAE_STEPS)


FMNIST = dict(c1=0.05, c2=0.005, expected_batch_size=256, num_groups=16)  # privae_sparsity / Table 1


def test_privae_kappa_options() -> None:
    c1, c2 = 0.05 / 256, 0.005 / 16
    tight = (c1 + 2 * c2) / math.hypot(c1, c2)
    assert privae_kappa(DELTA, **FMNIST) == abadi_kappa(DELTA)
    assert privae_kappa(DELTA, **FMNIST, kappa="sqrt5") == SQRT5 == math.sqrt(5)
    assert privae_kappa(DELTA, **FMNIST, kappa="tight") == pytest.approx(tight) == tight_kappa(**FMNIST)
    assert 1 < tight < math.sqrt(5)  # Cauchy-Schwarz: (c1 + 2 c2)/√(c1² + c2²) ≤ √5, equality iff c2 = 2 c1
    assert tight_kappa(1.0, 2.0, 1, 1) == pytest.approx(math.sqrt(5))
    no_batch = {**FMNIST, "c2": 0.0}
    assert {privae_kappa(DELTA, **no_batch, kappa=k) for k in ("paper", "sqrt5", "tight")} == {1.0}
    noise = privae_noise(1.0, DELTA, PRIVAE_RATE, PRIVAE_STEPS, **FMNIST)
    assert noise == pytest.approx(abadi_kappa(DELTA) * 1.322, rel=0.01)
    with pytest.raises(ValueError, match="kappa"):
        privae_kappa(DELTA, **FMNIST, kappa="loose")  # type: ignore[arg-type]


@pytest.mark.parametrize("kappa", ["paper", "sqrt5", "tight"])
def test_privae_noise_meets_the_headline_target_exactly(kappa: str) -> None:
    noise = privae_noise(1.0, DELTA, PRIVAE_RATE, PRIVAE_STEPS, **FMNIST, kappa=kappa)  # type: ignore[arg-type]
    ledger = privae_ledger(noise, PRIVAE_RATE, PRIVAE_STEPS, DELTA, **FMNIST, kappa=kappa)  # type: ignore[arg-type]
    assert ledger.headline == ("paper" if kappa == "paper" else "sound")
    assert ledger.epsilon <= 1.0
    if kappa == "tight":  # the sound ledger spends exactly the target
        assert ledger.epsilon == pytest.approx(1.0, rel=1e-8)


def test_privae_ledgers() -> None:
    sigma = 1.322  # σ(ε = 1) from the table
    paper = privae_ledger(abadi_kappa(DELTA) * sigma, PRIVAE_RATE, PRIVAE_STEPS, DELTA, **FMNIST, target_epsilon=1.0)
    halves = [epsilon([m], DELTA / 2, "classic", PRIVAE_ORDERS)[0] for m in paper.paper.mechanisms]
    assert paper.epsilon == pytest.approx(sum(halves)) and paper.epsilon < 1.0  # κ is conservative
    assert paper.paper.accountant == "rdp+rdp (sequential)" and paper.headline == "paper"
    assert paper.sound is not None
    (released,) = paper.sound.mechanisms  # one Gaussian mechanism: the released gradient
    c1, c2 = 0.05 / 256, 0.005 / 16
    assert released.sensitivity == pytest.approx(c1 + 2 * c2)
    assert released.noise_multiplier == pytest.approx(abadi_kappa(DELTA) * sigma * math.hypot(c1, c2) / (c1 + 2 * c2))
    # Here c2 ≈ 1.6·c1, so the tight factor 2.226 is close to √5 and above the paper's κ = 2.059: the
    # paper's runs overspend their target under the sound accounting (replace-one; 1.153 under add/remove-one).
    assert tight_kappa(**FMNIST) == pytest.approx(2.2260, abs=1e-4)
    assert paper.sound.adjacency == "replace-one" and paper.sound.epsilon == pytest.approx(2.5205, abs=1e-3)
    # the tight κ on replace-one's σ (2.1905 for ε = 1) spends exactly the target; on the add/remove σ it does not
    sigma_replace = calibrate_noise(1.0, DELTA, PRIVAE_RATE, PRIVAE_STEPS, "classic", PRIVAE_ORDERS, "replace-one")
    assert sigma_replace == pytest.approx(2.1905, abs=1e-4)
    for base, sound in ((sigma_replace, 1.0), (sigma, 2.082)):
        tight = privae_ledger(tight_kappa(**FMNIST) * base, PRIVAE_RATE, PRIVAE_STEPS, DELTA, **FMNIST, kappa="tight")
        assert tight.sound is not None and tight.sound.mechanisms[0].noise_multiplier == pytest.approx(base)
        assert tight.epsilon == pytest.approx(sound, abs=1e-3)
    plain = privae_ledger(sigma, PRIVAE_RATE, PRIVAE_STEPS, DELTA, **{**FMNIST, "c2": 0.0}, target_epsilon=1.0)
    assert plain.sound is not None and plain.epsilon == pytest.approx(1.0, rel=0.01)  # the paper's: add/remove
    assert plain.sound.epsilon == pytest.approx(2.082, abs=1e-3)  # ordinary DP-SGD's replace-one bound


# Pinwheel (privae_clustering, KL(p||q) variant): 400 records, B = 20, b = 1, 500 epochs, C1 0.05, C2 0.0005.
PINWHEEL = dict(c1=0.05, c2=0.0005, expected_batch_size=20, num_groups=1)
PINWHEEL_RATE, PINWHEEL_STEPS = 20 / 400, 10_000


def test_privae_pinwheel_sound_epsilons() -> None:
    """At the paper's κ the sound ε (replace-one) is 14.0 (6.18 under add/remove-one; the √5 bound said 11.2);
    the sound κs calibrate σ under replace-one: √5 gives 5.70, the tight κ spends exactly the target 10."""
    epsilons = {}
    for kappa in ("paper", "sqrt5", "tight"):
        factor = privae_kappa(DELTA, **PINWHEEL, kappa=kappa)  # type: ignore[arg-type]
        noise = privae_noise(10.0, DELTA, PINWHEEL_RATE, PINWHEEL_STEPS, **PINWHEEL, kappa=kappa)  # type: ignore[arg-type]
        ledger = privae_ledger(noise, PINWHEEL_RATE, PINWHEEL_STEPS, DELTA, **PINWHEEL)
        assert ledger.sound is not None and ledger.sound.adjacency == "replace-one"
        epsilons[kappa] = (factor, ledger.paper.epsilon, ledger.sound.epsilon)
    sigma = calibrate_noise(10.0, DELTA, PINWHEEL_RATE, PINWHEEL_STEPS, "classic", PRIVAE_ORDERS)
    assert epsilons["paper"][0] == pytest.approx(2.0593, abs=1e-4)
    assert epsilons["paper"][1:] == pytest.approx((8.908, 14.018), abs=1e-3)
    assert epsilons["sqrt5"][2] == pytest.approx(5.703, abs=1e-3)
    assert epsilons["tight"][0] == pytest.approx(1.3728, abs=1e-4) and epsilons["tight"][2] == pytest.approx(10.0)
    whitened = Accounting(
        (Mechanism("√5", epsilons["paper"][0] * sigma / SQRT5, PINWHEEL_RATE, PINWHEEL_STEPS),),
        DELTA,
        conversion="classic",
        orders=PRIVAE_ORDERS,
    )
    assert whitened.epsilon == pytest.approx(11.198, abs=1e-3)  # the previous "strict" ledger


# --------------------------------------------------------------------------------------------- DP²-VAE

# T: σ for ε = 10, 1, 0.2 at q = 1/1000 (docs/papers.md §4.5; classic conversion, integer orders 2-256).
DP2VAE_TABLE = {
    1_000: (0.434, 0.977, 2.11),
    5_000: (0.461, 1.018, 2.31),
    10_000: (0.475, 1.038, 2.61),
    20_000: (0.492, 1.099, 3.50),
}


@pytest.mark.parametrize("steps", DP2VAE_TABLE)
def test_dp2vae_sigma_table(steps: int) -> None:
    for target, sigma in zip((10.0, 1.0, 0.2), DP2VAE_TABLE[steps]):

        def eps(s: float) -> float:
            return epsilon([Mechanism("decoder", s, 1e-3, steps)], DELTA, "classic", INTEGER_ORDERS)[0]

        assert eps(0.99 * sigma) >= target >= eps(1.01 * sigma), (steps, target)


def test_dp2vae_pyvacy_way() -> None:
    sigma = dp2vae_noise(1.0, num_subsets=1000, steps=20000)
    assert dp2vae_epsilon(1000, sigma, 20000) <= 1.0  # rounded up: never above the target
    assert dp2vae_epsilon(1000, sigma, 20000) == pytest.approx(1.0, rel=1e-8)
    integer_orders = epsilon([Mechanism("decoder", sigma, 1e-3, 20000)], DELTA, "classic", INTEGER_ORDERS)[0]
    assert dp2vae_epsilon(1000, sigma, 20000) <= integer_orders
    assert sigma == pytest.approx(1.099, rel=0.01)  # the order search barely matters at ε = 1
    with pytest.raises(ValueError, match="num_subsets"):
        dp2vae_epsilon(0, 1.0, 10)


def test_dp2vae_sound_ledger() -> None:
    """Replace-one, 2·B·C on the steps that draw the record's subset, fixed-partition sampling."""
    sigma = dp2vae_noise(1.0, num_subsets=1000, steps=20000)
    ledger = dp2vae_ledger(sigma, 1000, 20000, batch_size=32, target_epsilon=1.0)
    assert ledger.headline == "paper" and ledger.epsilon == pytest.approx(1.0, rel=1e-8)
    assert ledger.sound is not None and ledger.sound.adjacency == "replace-one"
    (mechanism,) = ledger.sound.mechanisms
    assert (mechanism.sampling, mechanism.sample_rate, mechanism.steps) == ("fixed-partition", 1e-3, 20000)
    assert mechanism.sensitivity == 64.0 and mechanism.noise_multiplier == pytest.approx(sigma / 64)
    order = ledger.sound.order
    assert order is not None
    by_hand = fixed_partition_rdp(sigma / 64, 1e-3, 20000, [order])
    assert ledger.sound.epsilon == pytest.approx(rdp_to_dp([order], by_hand, DELTA, "classic")[0])
    assert ledger.sound.epsilon == pytest.approx(76_872, rel=1e-3)  # no meaningful guarantee at σ(ε = 1)
    assert dp2vae_sound_epsilon(1000, sigma, 20000, 32) == ledger.sound.epsilon
    grid = 1 + np.logspace(-7, 2.7, 3000)  # the continuous order search finds the grid's minimum
    assert ledger.sound.epsilon <= rdp_to_dp(
        grid, fixed_partition_rdp(sigma / 64, 1e-3, 20000, grid), DELTA, "classic"
    )[0] * (1 + 1e-6)


# ---------------------------------------------------------------------------- stated sensitivities


def _unit_rows(rng: np.random.Generator, count: int, dim: int) -> np.ndarray:
    rows = rng.normal(size=(count, dim))
    return rows / np.linalg.norm(rows, axis=1, keepdims=True) * rng.uniform(0, 1, size=(count, 1))


def test_pca_covariance_sensitivities() -> None:
    """XᵀX with ‖x‖ ≤ 1: removing a row moves it by ‖xxᵀ‖_F ≤ 1; replacing one by ≤ √2 (strict P3GM),
    which orthogonal unit rows attain, so the add/remove value 1 is not a replace-one sensitivity."""
    rng = np.random.default_rng(0)
    x, y = _unit_rows(rng, 20000, 5), _unit_rows(rng, 20000, 5)
    outer_x, outer_y = np.einsum("ni,nj->nij", x, x), np.einsum("ni,nj->nij", y, y)
    assert np.linalg.norm(outer_x, axis=(1, 2)).max() <= 1 + 1e-12
    assert np.linalg.norm(outer_x - outer_y, axis=(1, 2)).max() <= math.sqrt(2) + 1e-12
    e1, e2 = np.eye(5)[0], np.eye(5)[1]
    worst = np.linalg.norm(np.outer(e1, e1) - np.outer(e2, e2))
    assert worst == pytest.approx(math.sqrt(2)) and worst > 1


def test_clipped_sum_sensitivities() -> None:
    """Σ clip_C(g_i): add/remove moves it by ≤ C, replace-one by ≤ 2C (attained by g' = −g)."""
    rng = np.random.default_rng(1)
    clip = 0.05

    def clip_rows(g: np.ndarray) -> np.ndarray:
        return g * np.minimum(1, clip / np.linalg.norm(g, axis=-1, keepdims=True))

    g, g_new = clip_rows(rng.normal(size=(10000, 7))), clip_rows(rng.normal(size=(10000, 7)))
    assert np.linalg.norm(g, axis=1).max() <= clip * (1 + 1e-12)
    assert np.linalg.norm(g - g_new, axis=1).max() <= 2 * clip * (1 + 1e-12)
    assert np.linalg.norm(g[0] - clip_rows(-g[0:1])[0]) == pytest.approx(2 * clip)


def test_termwise_subgroup_term_can_move_by_twice_c2() -> None:
    """Counter-example to Lemma 2's C2 for the sub-group term: when a record joins an existing sub-group,
    clip_{C2}(∇ψ(s ∪ {x})) − clip_{C2}(∇ψ(s)) can reach 2·C2 (here ψ's gradient is the group mean).
    The sound PriVAE ledger uses 2·C2 (see the recipe's docstring)."""
    c2 = 0.005

    def clipped_mean(group: np.ndarray) -> np.ndarray:
        mean = group.mean(axis=0)
        return mean * min(1.0, c2 / np.linalg.norm(mean))

    group = np.array([[1.0, 0.0]])
    joined = np.vstack([group, [[-3.0, 0.0]]])
    assert np.linalg.norm(clipped_mean(joined) - clipped_mean(group)) == pytest.approx(2 * c2)
