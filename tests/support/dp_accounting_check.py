"""An accountant independent of dpvae's: re-derive a ledger's epsilon with Google's dp-accounting."""

from __future__ import annotations

import math

import dp_accounting as dpa
import numpy as np
from dp_accounting.rdp import RdpAccountant


def dp_accounting_curve(mechanisms: list[dict], orders) -> np.ndarray:
    """Add/remove RDP of a ledger's JSON Poisson mechanisms, composed by Google's dp-accounting."""
    events = []
    for m in mechanisms:
        gaussian = dpa.GaussianDpEvent(m["noise_multiplier"])
        event = gaussian if m["sample_rate"] == 1 else dpa.PoissonSampledDpEvent(m["sample_rate"], gaussian)
        events.append(dpa.SelfComposedDpEvent(event, m["steps"]))
    accountant = RdpAccountant(orders=list(orders))
    accountant.compose(dpa.ComposedDpEvent(events))
    return accountant.rdp


#: Pure ε-DP: the Laplace RDP curve tends to 1/b as the order grows; at this order it is within 1e-7.
PURE_ORDER = 1e10


def pure_rederive(mechanisms: list[dict]) -> float:
    """Σ ε_i of a "pure" accounting: dp-accounting's Laplace RDP (multiplier = scale / L1-sensitivity) at
    an order large enough to equal the pure ε (an exponential mechanism with ε_i is recorded as 1/ε_i)."""
    events = [dpa.SelfComposedDpEvent(dpa.LaplaceDpEvent(m["noise_multiplier"]), m["steps"]) for m in mechanisms]
    accountant = RdpAccountant(orders=[PURE_ORDER])
    accountant.compose(dpa.ComposedDpEvent(events))
    return float(accountant._rdp[0])


SEQUENTIAL = " (sequential)"


def fixed_partition_curve(mechanisms: list[dict], orders) -> np.ndarray:
    """Fixed-partition mechanisms: each step's Gaussian RDP r(α) from dp-accounting, then the mixture bound
    log(1 − q + q·e^{(α−1) r(α)})/(α − 1) per step (joint convexity; see accounting.fixed_partition_rdp)."""
    total = np.zeros(len(orders))
    for m in mechanisms:
        accountant = RdpAccountant(orders=list(orders))
        accountant.compose(dpa.GaussianDpEvent(m["noise_multiplier"]))
        exponent = (np.asarray(orders) - 1) * accountant.rdp
        q = m["sample_rate"]
        per_step = exponent if q == 1 else np.logaddexp(math.log1p(-q), math.log(q) + exponent)
        total += m["steps"] * per_step / (np.asarray(orders) - 1)
    return total


def rederive(record: dict) -> float:
    """ε of one accounting's JSON, recomputed from its mechanisms with dp-accounting's RDP curves.

    A sequential accounting ("rdp+rdp (sequential)") is re-derived part by part: each mechanism alone at
    δ/n, the ε added (only "rdp" parts are supported here).
    """
    if record["accountant"] == "pure":
        return pure_rederive(record["mechanisms"])
    if record["accountant"].endswith(SEQUENTIAL):
        parts = record["accountant"][: -len(SEQUENTIAL)].split("+")
        if set(parts) != {"rdp"} or len(parts) != len(record["mechanisms"]):
            raise NotImplementedError(f"re-deriving accountant {record['accountant']!r} is not supported")
        share = record["delta"] / len(parts)
        return sum(
            rederive({**record, "accountant": "rdp", "delta": share, "mechanisms": [m]}) for m in record["mechanisms"]
        )
    orders = np.asarray(record["orders"], dtype=float)
    if record["accountant"] == "rdp-order-search":
        orders = np.asarray([record["order"]])
    partition = [m for m in record["mechanisms"] if m.get("sampling") == "fixed-partition"]
    poisson = [m for m in record["mechanisms"] if m.get("sampling", "poisson") == "poisson"]
    rdp = fixed_partition_curve(partition, orders)
    if record["adjacency"] == "add/remove-one":
        rdp = rdp + dp_accounting_curve(poisson, orders)
    else:  # replace-one: q = 1 as Gaussians; q < 1 by the weak triangle inequality through D⁻
        full = [m for m in poisson if m["sample_rate"] == 1]
        sampled = [m for m in poisson if m["sample_rate"] < 1]
        rdp = (
            rdp
            + dp_accounting_curve(full, orders)
            + (orders - 0.5) / (orders - 1) * dp_accounting_curve(sampled, 2 * orders)
            + dp_accounting_curve(sampled, 2 * orders - 1)
        )
    log_delta = math.log(record["delta"])
    if record["conversion"] == "classic":
        eps = rdp - log_delta / (orders - 1)
    else:
        eps = rdp + np.log1p(-1 / orders) - (log_delta + np.log(orders)) / (orders - 1)
    return float(np.min(eps))
