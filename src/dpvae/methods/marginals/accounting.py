"""The ledgers of PrivBayes (pure ε-DP) and Ryan's method (two Gaussian releases, match3's accountant)."""

from __future__ import annotations

import math
from typing import Any

from dpvae import randomness
from dpvae.privacy.accounting import solve_noise_multiplier
from dpvae.privacy.ledger import Accounting, Ledger, Mechanism, recorded_mechanisms
from dpvae.runspec import RunSpec
from dpvae.samplers import laplace_sampler

#: The two halves are shrunk by this factor so that their float sum never exceeds the target.
BUDGET_SAFETY = 1 - 1e-9
PRIVBAYES_NOTES = (
    "pure epsilon-DP composition (delta = 0; the delta field is the run's and is not used): epsilon/2 for the "
    "Bayesian network (d-1 exponential-mechanism picks with PrivBayes' mutual-information sensitivity, "
    "DataSynthesizer's calculate_sensitivity/calculate_delta) + epsilon/2 for the conditionals (d-k Laplace "
    "releases of (k+1)-way counts, scale (d-k)/(epsilon/2), L1-sensitivity 1 under add/remove-one). "
    "DataSynthesizer's additional epsilon-Laplace 1-way histograms are not computed: correlated-mode "
    "generation never reads them. Strict: replace-one adjacency, under which a count histogram's "
    "L1-sensitivity is 2 (the conditionals then cost epsilon). "
)
#: Where the bin edges of continuous columns come from: a prepared set without a recorded domain (a generated
#: one, or one prepared before the papers' domains were declared) or one with it (the papers' datasets and
#: declared datasets, `dpvae.data.domain`).
PRIVBAYES_EDGES_OBSERVED = (
    "Bin edges of continuous columns use the training split's observed min/max, as DataSynthesizer does (the "
    "data are min-max scaled by the preparers)."
)
PRIVBAYES_EDGES_PUBLIC = "Bin edges of continuous columns span [0, 1], the dataset's declared public domain."
#: match3's `moments_calibration`: RDP orders 2..4095, TF-Privacy's (classic) conversion of 2018.
MATCH3_ORDERS = tuple(float(a) for a in range(2, 4096))
RYAN_NOTES = (
    "paper: the measured records' two Gaussian releases (round 1: every 1-way marginal, round 2: the selected "
    "2-/3-way marginals on the compressed domain), each weighted to L2-sensitivity 1 under add/remove-one (a "
    "record adds 1 to one cell of every histogram) with the same sigma, composed by RDP over match3's orders "
    "2..4095 with the classic conversion (match3's moments_calibration). No sound accounting: the public slice "
    "is part of the private training split, read without noise (not_dp)"
)


#: What the public slice decides when the data has no recorded domain (`build_discretizer`'s observed edges).
SLICE_FIXES_EDGES = "the marginals and fixes the bin edges"


def not_dp_public_slice(public_fraction: float, public_domain: bool = False) -> str:
    """Why a run of Ryan's method is not DP: the un-noised public slice of the private training split (which also
    fixes the bin edges where the data has no recorded domain)."""
    decides = "the marginals" if public_domain else SLICE_FIXES_EDGES
    return (
        f"not DP: a random {public_fraction:g} of the private training split is the 'public' slice that selects "
        f"{decides} without noise (P3GM's Ryan's needs a public sample; the papers' datasets have none), so those "
        "records are released unprotected"
    )


def privbayes_ledger(
    n_attributes: int, degree: int, epsilon: float, delta: float, public_domain: bool = False, secret: bool = False
):
    """The pure-DP ledger of one fit, and the (structure, conditionals) budgets the fit must use (`public_domain`:
    the bin edges come from a declared dataset's domain, not from the data; `secret`: a release, whose counts get
    discrete Laplace noise of the same scale, `samplers.laplace_sampler`)."""
    half = epsilon / 2 * BUDGET_SAFETY
    d, k = n_attributes, min(degree, n_attributes - 1)
    structure = Mechanism(
        "PrivBayes network: exponential mechanism per added attribute (multiplier = 1/epsilon_i)",
        noise_multiplier=(d - 1) / half,
        steps=d - 1,
    )
    scale = (d - k) / half

    def conditionals(sensitivity: float) -> Mechanism:
        return Mechanism(
            "PrivBayes conditionals: Laplace on (k+1)-way counts (multiplier = scale / L1-sensitivity)",
            noise_multiplier=scale / sensitivity,
            steps=d - k,
            sensitivity=sensitivity,
            sampler=laplace_sampler(scale, sensitivity) if secret else None,
        )

    paper = Accounting((structure, conditionals(1.0)), delta, accountant="pure")
    strict = Accounting((structure, conditionals(2.0)), delta, adjacency="replace-one", accountant="pure")
    edges = PRIVBAYES_EDGES_PUBLIC if public_domain else PRIVBAYES_EDGES_OBSERVED
    return Ledger(paper, strict, epsilon, PRIVBAYES_NOTES + edges), half


def ryan_mechanisms(sigma: float):
    return tuple(
        Mechanism(name, sigma, 1.0, 1, 1.0)
        for name in (
            "Ryan round 1: all 1-way marginals (weighted to unit L2-sensitivity)",
            "Ryan round 2: selected marginals on the compressed domain (weighted to unit L2-sensitivity)",
        )
    )


def ryan_accounting(sigma: float, delta: float):
    return Accounting(ryan_mechanisms(sigma), delta, "add/remove-one", "rdp", "classic", MATCH3_ORDERS)


def calibrate(epsilon: float, delta: float) -> float:
    """The smallest sigma (rounded up) whose two releases spend at most `epsilon`."""
    return solve_noise_multiplier(lambda sigma: ryan_accounting(sigma, delta).epsilon, epsilon)


def ryan_ledger(
    sigma: float, delta: float, target: float | None, public_fraction: float, public_domain: bool = False
) -> Ledger:
    """The two releases under add/remove-one (paper), marked not DP for the un-noised public slice."""
    why = not_dp_public_slice(public_fraction, public_domain)
    return Ledger(ryan_accounting(sigma, delta), None, target, f"{why}; {RYAN_NOTES}", not_dp=why)


def recompute_privbayes_ledger(params: Any, spec: RunSpec, recorded: dict) -> Ledger:
    """PrivBayes' ledger computed again from its parameters and the attribute count d it records (d − 1 picks)."""
    structure = recorded_mechanisms(recorded)[0]
    public = PRIVBAYES_EDGES_PUBLIC in recorded.get("notes", "")
    d, secret = structure.steps + 1, randomness.is_secret(spec)
    return privbayes_ledger(d, params.degree, spec.epsilon, spec.delta, public, secret)[0]


def recompute_ryan_ledger(params: Any, spec: RunSpec, recorded: dict) -> Ledger:
    """Ryan's ledger computed again from the run's target (σ recalibrated) and its public fraction."""
    sigma = calibrate(spec.epsilon, spec.delta)
    public = SLICE_FIXES_EDGES not in (recorded.get("not_dp") or "")
    return ryan_ledger(sigma, spec.delta, spec.epsilon, params.public_fraction, public)


# ------------------------------------------------------------------------------------------------- MST and AIM
#
# Both are rho-zCDP mechanisms (McKenna et al. 2021, "Winning the NIST Contest", §4; McKenna et al. 2022, "AIM",
# §4): Gaussian measurements of marginals (a release of sigma/L2-sensitivity = m is 1/(2m^2)-zCDP) and exponential
# mechanism selections (an eps0-DP exponential mechanism is eps0-bounded-range, hence eps0^2/8-zCDP: Cesar & Rogers
# 2021). zCDP composes by adding rho. A ledger records every part as the Gaussian mechanism of the same zCDP (an
# exponential mechanism of eps0 as multiplier 2/eps0), so that its RDP curve is exactly alpha * rho_total at every
# order; the accountant converts it with the improved conversion (Canonne, Kamath & Steinke 2020, Prop. 12: the one
# private-pgm's cdp_delta computes) at the order found by a continuous search ("rdp-order-search"), i.e. the tight
# zCDP -> (eps, delta) conversion, not Bun & Steinke's rho + 2 sqrt(rho log 1/delta) (`accounting.zcdp_epsilon`).
#
# Adjacency. The papers' claim (paper): add/remove-one, under which a record adds 1 to one cell of every marginal
# (a set of marginals weighted to unit L2 norm has L2-sensitivity 1) and moves an L1 error score by at most 1.
# Sound: replace-one, under which a record moves from one cell to another in every marginal (L2-sensitivity sqrt 2
# for the weighted set) and an L1 error score by up to 2 (the selection's bounded range doubles: 4x its zCDP).
# tests/privacy/test_pgm_soundness.py checks both bounds over random neighbouring pairs.

#: rdp-order-search bounds of the zCDP conversion (the optimal order of rho-zCDP at delta is about
#: 1 + sqrt(log(1/delta)/rho): 1e5 covers rho down to ~1e-9; below 1.01 the improved conversion is undefined)
ZCDP_ORDER_BOUNDS = (1.01, 1e5)
SQRT2 = math.sqrt(2.0)
ZCDP_NOTES = (
    "rho-zCDP: every Gaussian measurement (multiplier = noise std / L2-sensitivity) and every exponential-mechanism "
    "selection (eps0-DP, eps0-bounded-range, eps0^2/8-zCDP; recorded as the Gaussian of that zCDP, multiplier "
    "2/eps0) composed by adding rho, converted to (epsilon, delta) tightly (improved conversion at the searched "
    "order: Canonne, Kamath & Steinke 2020, Prop. 12). paper: add/remove-one (the papers' adjacency): a weighted "
    "set of marginals has L2-sensitivity 1, an L1-error score sensitivity 1 (times AIM's weight). sound: "
    "replace-one: L2-sensitivity sqrt(2) (a record leaves one cell for another), L1-error scores move by up to 2 "
    "(the selection's bounded range and so its zCDP x4). "
)


def gaussian_of_zcdp(rho: float) -> float:
    """The noise multiplier of the Gaussian mechanism whose zCDP is `rho` (rho = 1/(2 m^2))."""
    return math.inf if rho <= 0 else 1.0 / math.sqrt(2.0 * rho)


def zcdp_accounting(mechanisms: tuple[Mechanism, ...], delta: float, sound: bool) -> Accounting:
    """Gaussian(-equivalent) records composed as zCDP (their RDP alpha * rho), converted tightly."""
    adjacency = "replace-one" if sound else "add/remove-one"
    return Accounting(mechanisms, delta, adjacency, "rdp-order-search", "improved", ZCDP_ORDER_BOUNDS)


def mst_selection_epsilon(sigma: float, d: int) -> float:
    """eps0 of each of MST's d - 1 exponential-mechanism picks: the selection gets the zCDP of one measurement
    round, 1/(2 sigma^2) = (d - 1) eps0^2 / 8."""
    return 2.0 / (sigma * math.sqrt(d - 1))


def mst_mechanisms(sigma: float, d: int, sound: bool) -> tuple[Mechanism, ...]:
    """MST's three parts (rho/3 each at the paper's adjacency): the d 1-way marginals, the d - 1 exponential-mechanism
    picks of the spanning tree, the d - 1 selected 2-way marginals; each marginal round weighted to unit L2 norm."""
    l2, l1 = (SQRT2, 2.0) if sound else (1.0, 1.0)
    eps0 = mst_selection_epsilon(sigma, d)
    return (
        Mechanism(f"MST round 1: Gaussian on the {d} 1-way marginals, weighted 1/sqrt({d})", sigma / l2, 1.0, 1, l2),
        Mechanism(
            f"MST selection: exponential mechanism on the L1 error of the 1-way model, eps0 = {eps0:.6g} per "
            "spanning-tree edge (multiplier 2/(eps0 * score sensitivity))",
            2.0 / (eps0 * l1),
            1.0,
            d - 1,
            l1,
        ),
        Mechanism(
            f"MST round 2: Gaussian on the {d - 1} selected 2-way marginals, weighted 1/sqrt({d - 1})",
            sigma / l2,
            1.0,
            1,
            l2,
        ),
    )


def mst_accounting(sigma: float, d: int, delta: float, sound: bool = False) -> Accounting:
    return zcdp_accounting(mst_mechanisms(sigma, d, sound), delta, sound)


def calibrate_mst(epsilon: float, delta: float, d: int) -> float:
    """The smallest sigma (rounded up: the paper epsilon never exceeds the target) of MST on d attributes."""
    return solve_noise_multiplier(lambda sigma: mst_accounting(sigma, d, delta).epsilon, epsilon)


EDGES_NOTE = {True: PRIVBAYES_EDGES_PUBLIC, False: PRIVBAYES_EDGES_OBSERVED}


def mst_ledger(sigma: float, d: int, delta: float, target: float | None, public_domain: bool = False) -> Ledger:
    notes = (
        ZCDP_NOTES + "MST (McKenna et al. 2021): rho/3 for the 1-way marginals, rho/3 for the d-1 selections, "
        "rho/3 for the selected 2-way marginals; cells measured below 3 sigma merged (post-processing). "
        + EDGES_NOTE[public_domain]
    )
    return Ledger(mst_accounting(sigma, d, delta), mst_accounting(sigma, d, delta, True), target, notes)


def recompute_mst_ledger(params: Any, spec: RunSpec, recorded: dict) -> Ledger:
    """MST's ledger again from the run's target (sigma recalibrated) and the attribute count it records."""
    d = recorded_mechanisms(recorded)[1].steps + 1
    public = PRIVBAYES_EDGES_PUBLIC in recorded.get("notes", "")
    return mst_ledger(calibrate_mst(spec.epsilon, spec.delta, d), d, spec.delta, spec.epsilon, public)


def aim_rounds(params: Any, d: int) -> int:
    """T: the rounds AIM's budget is planned for (the paper's 16 d unless set)."""
    return params.rounds or 16 * d


def aim_mechanisms(rho: float, d: int, rounds: int, sound: bool) -> tuple[Mechanism, ...]:
    """AIM's parts: the d 1-way marginals at sigma0, the rounds' measurements and selections (their totals: alpha
    and 1 - alpha of what is left, each recorded as the Gaussian of that zCDP)."""
    from dpvae.methods.marginals.aim import ALPHA, Plan

    plan = Plan(rho, d, rounds)
    l2, l1 = (SQRT2, 2.0) if sound else (1.0, 1.0)
    return (
        Mechanism(
            f"AIM initialisation: Gaussian on each of the {d} 1-way marginals (sigma0)", plan.sigma0 / l2, 1.0, d, l2
        ),  # fmt: skip
        Mechanism(
            f"AIM rounds: Gaussian measurements of the selected marginals, adaptive sigma_t (annealed), their zCDP "
            f"at most {ALPHA} of what the initialisation leaves (a filter; recorded as one Gaussian of that zCDP)",
            gaussian_of_zcdp(plan.gaussian) / l2,
            1.0,
            1,
            l2,
        ),
        Mechanism(
            f"AIM rounds: exponential-mechanism selections on the weighted L1 error, adaptive eps_t, their zCDP at "
            f"most {1 - ALPHA:.1f} of what the initialisation leaves (recorded as one Gaussian of that zCDP; score "
            "sensitivity max w_r)",
            gaussian_of_zcdp(plan.selection) / l1,
            1.0,
            1,
            l1,
        ),
    )


def aim_accounting(noise: float, d: int, rounds: int, delta: float, sound: bool = False) -> Accounting:
    """`noise`: the multiplier of one Gaussian with the whole budget, rho = 1/(2 noise^2)."""
    return zcdp_accounting(aim_mechanisms(1 / (2 * noise**2), d, rounds, sound), delta, sound)


def calibrate_aim(epsilon: float, delta: float, d: int, rounds: int) -> float:
    """The smallest budget noise (rounded up: the paper epsilon never exceeds the target); rho = 1/(2 noise^2)."""
    return solve_noise_multiplier(lambda noise: aim_accounting(noise, d, rounds, delta).epsilon, epsilon)


def aim_ledger(noise: float, d: int, rounds: int, delta: float, target: float | None, public: bool = False) -> Ledger:
    notes = (
        ZCDP_NOTES + f"AIM (McKenna et al. 2022), T = {rounds} rounds planned, alpha = 0.9: the 1-way marginals at "
        "sigma0 = sqrt(T/(2 alpha rho)), then rounds whose sigma_t and eps_t are annealed adaptively within fixed "
        "totals (privacy filter; fully adaptive composition of zCDP, Feldman & Zrnic 2021). " + EDGES_NOTE[public]
    )
    paper, sound = (aim_accounting(noise, d, rounds, delta, s) for s in (False, True))
    return Ledger(paper, sound, target, notes)


def recompute_aim_ledger(params: Any, spec: RunSpec, recorded: dict) -> Ledger:
    """AIM's ledger again from the run's target and the attribute count it records (the initialisation's steps)."""
    d = recorded_mechanisms(recorded)[0].steps
    rounds = aim_rounds(params, d)
    public = PRIVBAYES_EDGES_PUBLIC in recorded.get("notes", "")
    noise = calibrate_aim(spec.epsilon, spec.delta, d, rounds)
    return aim_ledger(noise, d, rounds, spec.delta, spec.epsilon, public)
