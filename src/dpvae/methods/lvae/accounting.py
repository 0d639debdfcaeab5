"""LVAE's privacy records: VAE-DPSGD's ledger (standard DP-SGD), and the Lipschitz variants' analytic claim.

The claim (Groß & Wunder, Lemmas 2-4 and the main theorem; docs/papers.md §2.1), evaluated, is a *claim*, not an
accountant's bound: the LVAE variants are `private: false` in the workflow's sense (no ledger, no budget check).
The record states the formula, the numbers it gives for the run's settings, the assumptions it rests on and where
this experiment departs from them, so that nobody mistakes it for a differential-privacy guarantee.

    C      = R_x² + 2 L R_z(δ) R_x          (Lemma 2: |log p(x1|z) − log p(x2|z)| ≤ C, unit-variance Gaussian)
    C_man  = 4 L² R_z(δ)²                   (Lemma 2, both points on the decoder's manifold)
    ε      = 2C                             (Lemma 3: the encoder is ε-DP)
    δ̄      = δ + δ_x + δ̃_x + 2√ε |B|/|A|    (theorem: the generator; δ_x, δ̃_x ∝ 1/√N are not quantified)
"""

from __future__ import annotations

import math
from typing import Any

from dpvae.privacy.accounting import solve_noise_multiplier
from dpvae.privacy.ledger import Accounting, Ledger, Mechanism, dpsgd_ledger, recorded_mechanisms
from dpvae.runspec import RunSpec

DPSGD_NOTES = (
    "VAE-DPSGD (LVAE Fig. 2): the paper gives no DP-SGD parameters (A-L3); C, B and epochs come from the "
    "configuration and sigma is calibrated by RDP (add/remove-one, improved conversion) to the target "
    "epsilon over T = ceil(epochs N / B) steps of Poisson sampling at q = B/N, which is how batches are drawn. "
    "paper (headline): add/remove-one RDP, improved conversion - a bound for the standard DP-SGD engine, whose "
    "per-example clipping tests/privacy/test_soundness.py checks; sound: the same record under replace-one "
    "adjacency (Mironov 2017, Prop. 11)"
)
CLAIM_FILE = "privacy_claim.json"
KIND = "analytic claim of the paper - NOT a differential-privacy guarantee (no accountant, assumptions violated)"


def dpsgd_accounting(sigma: float, q: float, steps: int, clip: float, delta: float) -> Accounting:
    """Standard DP-SGD (per-example clip C, Poisson rate q, T steps) by add/remove-one RDP, improved conversion."""
    mechanism = Mechanism("DP-SGD (per-example clip, Poisson sampling)", sigma, q, steps, clip)
    return Accounting((mechanism,), delta, adjacency="add/remove-one", accountant="rdp", conversion="improved")


def noise_multiplier(params: Any, epsilon: float, delta: float, q: float, steps: int) -> float:
    """σ: the configured one, or the smallest with ε(σ) ≤ target over `steps` steps (auto)."""
    if params.noise_multiplier != "auto":
        return float(params.noise_multiplier)
    return solve_noise_multiplier(lambda sigma: dpsgd_accounting(sigma, q, steps, params.clip, delta).epsilon, epsilon)


def ledger(sigma: float, q: float, steps: int, clip: float, delta: float, target: float | None) -> Ledger:
    """paper: standard DP-SGD's add/remove-one RDP (the headline; the paper names no accountant, A-L3);
    sound: replace-one (a replaced record moves the clipped sum by up to 2C; Mironov 2017, Prop. 11)."""
    record = dpsgd_accounting(sigma, q, steps, clip, delta).mechanisms[0]
    return dpsgd_ledger(record, delta, target, DPSGD_NOTES)


def recompute_ledger(params: Any, spec: RunSpec, recorded: dict) -> Ledger:
    """VAE-DPSGD's ledger computed again from its parameters and the rate and steps it records."""
    (run,) = recorded_mechanisms(recorded)
    sigma = noise_multiplier(params, spec.epsilon, spec.delta, run.sample_rate, run.steps)
    return ledger(sigma, run.sample_rate, run.steps, params.clip, spec.delta, spec.epsilon)


def lipschitz_claim(
    *,
    lipschitz: float,
    latent_dim: int,
    delta: float,
    data_radius: float,
    constraint: str,
    measured: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The paper's bound for decoder Lipschitz constant L, latent dim d, δ and data radius R_x, with its caveats.

    `measured`: the decoder's Jacobian norms measured at prior probes (a lower bound of its true Lipschitz
    constant), recorded beside the assumed L.
    """
    from dpvae.models.lvae_vae import chi2_radius

    r_z = chi2_radius(latent_dim, delta)
    c = data_radius**2 + 2 * lipschitz * r_z * data_radius
    c_manifold = 4 * lipschitz**2 * r_z**2
    epsilon = 2 * c
    violations = [
        "likelihood: the experiment (as the paper's) uses a Bernoulli likelihood (binary cross-entropy on "
        "binarised MNIST), while Lemma 2 assumes a unit-variance Gaussian likelihood (squared error); the "
        "bound C is derived for the Gaussian case only",
        "consistency (Assumption 2, q(z|x)p(x) = p(x|z)p(z) on B_X x B_Z) is assumed, not checked; a trained "
        "VAE satisfies it only approximately",
        "delta_bar contains Monte-Carlo terms delta_x, delta_tilde_x (~1/sqrt(N)) and 2 sqrt(eps)|B|/|A| that "
        "the paper does not quantify, so the generator's (eps, delta_bar) is not a computable guarantee",
    ]
    if constraint == "gradient_penalty":
        violations.append(
            "Lipschitz (Assumption 1): the gradient penalty only probes finitely many z and is a "
            "soft penalty, so the decoder is not guaranteed L-Lipschitz (the paper says so)"
        )
    if measured and measured.get("max") is not None and measured["max"] > lipschitz:
        violations.append(
            f"Lipschitz (Assumption 1) measured violated: max Jacobian spectral norm "
            f"{measured['max']:.4g} > L = {lipschitz:g} at {measured['probes']} prior probes"
        )
    return {
        "kind": KIND,
        "accounting": "paper",  # the ledgers' vocabulary: this is the paper's claim ...
        "sound": None,  # ... and there is no sound accounting of it
        "not_dp": "the decoder's Lipschitz constraint comes with no accountant: the paper's bound assumes a "
        "Gaussian likelihood, an exactly L-Lipschitz decoder and consistency, none of which the "
        "trained model is shown to satisfy (see violations)",
        "private": False,
        "source": "Gross & Wunder, Lemma 2 (bounded log-likelihood), Lemma 3 (posterior), Lemma 4 and theorem",
        "constraint": constraint,
        "lipschitz": lipschitz,
        "latent_dim": latent_dim,
        "delta": delta,
        "R_x": data_radius,
        "R_z": r_z,
        "C": c,
        "claimed_epsilon": epsilon,
        "C_on_manifold": c_manifold,
        "claimed_epsilon_on_manifold": 2 * c_manifold,
        "two_sqrt_epsilon": 2 * math.sqrt(epsilon),
        "delta_bar": "delta + delta_x + delta_tilde_x + 2 sqrt(eps) |B|/|A| (not quantified by the paper)",
        "formula": "eps = 2C, C = R_x^2 + 2 L R_z(delta) R_x; R_z(delta)^2 = chi2_d quantile at 1 - delta; "
        "R_x = max l2 norm of a record",
        "assumptions": [
            "unit-variance Gaussian likelihood p(x|z) = N(mu_theta(z), I) (Lemma 2)",
            "decoder mean mu_theta is L-Lipschitz (Assumption 1)",
            "records bounded: ||x|| <= R_x",
            "consistency q(z|x)p(x) = p(x|z)p(z) on B_X x B_Z (Assumption 2)",
            "latent prior N(0, I_d); z outside the R_z(delta) ball counted in delta",
        ],
        "violations": violations,
        "measured_lipschitz": measured,
    }
