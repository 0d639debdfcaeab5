"""What a run's privacy record says about membership tests: its trade-off curves, for the attack figures.

For a private run (a ledger in `privacy.json`): the f-DP curve f_{ε,δ} of its headline (ε, δ), the tight
curve of its actual mechanisms from dp-accounting's privacy-loss distributions (and the ε at δ that
accountant gives), and the Gaussian-DP curve of the CLT μ for single Poisson-subsampled Gaussian ledgers.
For a non-private run with an analytic claim (`model/privacy_claim.json`, LVAE): the claim's numbers as
rows named `claimed_*` and its f_{ε,δ} curve — a claim, not a guarantee (see dpvae.methods.lvae.accounting).
A run with neither gives no rows. Curves go to `privacy_tradeoff.npz` beside the JSON.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from dpvae.eval.base import EvalContext, Rows
from dpvae.eval.registry import register_metric
from dpvae.files import atomic_write
from dpvae.params import MetricOptions, param

ARTIFACT = "privacy_tradeoff.npz"


@dataclass(frozen=True)
class TradeoffOptions(MetricOptions):
    points: int = param(501, "type-I error grid points of the curves", minimum=3)
    pld_discretization: float = param(1e-3, "privacy-loss discretisation of dp-accounting's PLD", exclusive_minimum=0)


@register_metric(
    "privacy_tradeoff",
    needs=("model",),
    options=TradeoffOptions,
    description="trade-off curves implied by the run's ledger (f-DP of (eps, delta), PLD, GDP-CLT) "
    "or by its analytic claim",
)
def privacy_tradeoff(ctx: EvalContext) -> Rows:
    from dpvae.methods.lvae.accounting import CLAIM_FILE
    from dpvae.privacy import fdp
    from dpvae.privacy.ledger import Ledger

    alpha = np.linspace(0, 1, ctx.options.points)
    arrays: dict[str, np.ndarray] = {"alpha": alpha}
    rows: Rows = []
    record = json.loads(ctx.run.ledger_path.read_text())
    claim_path = ctx.model_dir / CLAIM_FILE
    if record.get("epsilon") is not None:
        ledger = Ledger.from_dict(record)
        headline = getattr(ledger, "headline_accounting", ledger.paper)
        mechanisms = headline.mechanisms
        if headline.adjacency != "add/remove-one":
            raise ValueError(f"{ctx.run.ledger_path}: PLD curves are computed for add/remove-one ledgers only")
        arrays["eps_delta"] = fdp.eps_delta_tradeoff(alpha, ledger.epsilon, ledger.delta)
        arrays["pld"] = fdp.pld_tradeoff(mechanisms, alpha, ctx.options.pld_discretization)
        rows.append(
            {
                "metric": "pld_epsilon",
                "value": fdp.pld_epsilon(mechanisms, ledger.delta, ctx.options.pld_discretization),
            }
        )
        if len(mechanisms) == 1:
            m = mechanisms[0]
            mu = fdp.clt_mu(m.sample_rate, m.steps, m.noise_multiplier)
            arrays["gdp_clt"] = fdp.gaussian_tradeoff(alpha, mu)
            rows.append({"metric": "gdp_mu_clt", "value": mu})
        arrays["epsilon"], arrays["delta"] = np.float64(ledger.epsilon), np.float64(ledger.delta)
    elif claim_path.is_file():
        claim = json.loads(claim_path.read_text())
        arrays["claimed_eps_delta"] = fdp.eps_delta_tradeoff(alpha, claim["claimed_epsilon"], claim["delta"])
        arrays["claimed_epsilon"] = np.float64(claim["claimed_epsilon"])
        rows += [
            {"metric": "claimed_epsilon", "value": claim["claimed_epsilon"]},
            {"metric": "claimed_epsilon_on_manifold", "value": claim["claimed_epsilon_on_manifold"]},
            {"metric": "claimed_lipschitz", "value": claim["lipschitz"]},
        ]
        measured = claim.get("measured_lipschitz") or {}
        if measured.get("max") is not None:
            rows += [
                {"metric": "measured_lipschitz_max", "value": measured["max"]},
                {"metric": "measured_lipschitz_median", "value": measured["median"]},
            ]
    atomic_write(ctx.out_dir / ARTIFACT, lambda tmp: np.savez_compressed(tmp, **arrays))
    return rows
