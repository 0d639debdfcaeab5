"""The ledgers of PrivBayes (pure ε-DP) and Ryan's method (two Gaussian releases, match3's accountant)."""

from __future__ import annotations

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
