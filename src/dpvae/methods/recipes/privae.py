"""PriVAE's privacy accounting: Theorem 2's way and a sound way (PAPERS.md §1.1, §1.6, §5)."""

from __future__ import annotations

import math
from typing import Literal

from dpvae.privacy.accounting import INTEGER_ORDERS, Conversion, abadi_kappa, calibrate_noise
from dpvae.privacy.ledger import Accounting, Ledger, Mechanism


Kappa = Literal["paper", "tight"]
#: Orders of PAPERS.md's PriVAE σ(ε) table (integer orders 2–256, classic conversion).
PRIVAE_ORDERS = INTEGER_ORDERS
PRIVAE_NOTES = (
    "headline: the two noisy sums accounted separately at delta/2 each and the epsilons added (Theorem 2); "
    "strict: both sums as one Gaussian mechanism on the same Poisson subsample, whitened sensitivity "
    "sqrt(1 + 2^2) (a record joining an existing sub-group moves its clipped term by up to 2*C2), "
    "multiplier sigma'/sqrt(5)"
)


#: Whitened l2-sensitivity of term-wise DP-SGD's two sums (g_sample/C1, g_batch/C2) under add/remove-one
#: with sub-groups formed by independent uniform labels: the record's own clipped term moves the first by
#: at most 1; it joins (or leaves) one existing sub-group, whose clipped term can flip direction, so the
#: second moves by at most 2 (Lemma 2's C2 holds only when the sub-group was empty).
STRICT_TERMWISE_SENSITIVITY = math.sqrt(5)


def privae_kappa(delta: float, c2: float, kappa: Kappa = "paper") -> float:
    """Noise factor σ'/σ of term-wise DP-SGD: 1 without the batch-wise term (C2 = 0); otherwise the
    paper's κ = 2√(log(2/δ)/log(1/δ)), or the tight √5: the smallest factor for which the strict (sound)
    accounting of `privae_ledger` meets the target, i.e. both noisy sums as one Gaussian mechanism whose
    whitened sensitivity is √(1² + 2²) (see there). (PAPERS.md A-P4's √2 takes Lemma 2's C2 at face value.)"""
    if not c2 >= 0:
        raise ValueError(f"c2 must be >= 0, got {c2}")
    if kappa not in ("paper", "tight"):
        raise ValueError(f"kappa must be 'paper' or 'tight', got {kappa!r}")
    if c2 == 0:
        return 1.0
    return abadi_kappa(delta) if kappa == "paper" else STRICT_TERMWISE_SENSITIVITY


def privae_noise(
    epsilon: float,
    delta: float,
    sample_rate: float,
    steps: int,
    c2: float,
    kappa: Kappa = "paper",
    conversion: Conversion = "classic",
    orders: tuple[float, ...] = PRIVAE_ORDERS,
) -> float:
    """σ' = κ·σ, σ being ordinary DP-SGD's multiplier for (ε, δ) at rate q over `steps` steps."""
    factor = privae_kappa(delta, c2, kappa)
    return factor * calibrate_noise(epsilon, delta, sample_rate, steps, conversion, orders)


def privae_ledger(
    noise_multiplier: float,
    sample_rate: float,
    steps: int,
    delta: float,
    c1: float,
    c2: float,
    target_epsilon: float | None = None,
    conversion: Conversion = "classic",
    orders: tuple[float, ...] = PRIVAE_ORDERS,
    notes: str = PRIVAE_NOTES,
) -> Ledger:
    """Ledger of a term-wise DP-SGD run whose two noisy sums both use multiplier σ' = `noise_multiplier`.

    Paper: each half (per-example sum clipped at C1, sub-group sum clipped at C2) accounted alone, with
    its own subsampling amplification, at δ/2, and the two ε added (Theorem 2, Lemma 2's sensitivities).
    Strict: the two sums are released on the *same* Poisson subsample, so composing separately amplified
    halves is not justified; together they are one Gaussian mechanism. Scaled by 1/C1 and 1/C2 the noise
    std is σ' on both and the joint sensitivity is √5 (`STRICT_TERMWISE_SENSITIVITY`: a record joining an
    existing sub-group can move that group's clipped term by 2·C2), i.e. multiplier σ'/√5. This holds
    for sub-groups formed by independent uniform labels (what the term-wise engine does), so that adding a
    record changes no other record's sub-group. With C2 = 0 there is one ordinary DP-SGD mechanism and no
    strict alternative.
    """
    if not c1 > 0:
        raise ValueError(f"c1 must be > 0, got {c1}")
    if not c2 >= 0:
        raise ValueError(f"c2 must be >= 0, got {c2}")
    per_example = Mechanism("term-wise DP-SGD: per-example sum", noise_multiplier, sample_rate, steps, c1)
    if c2 == 0:
        single = Accounting((per_example,), delta, conversion=conversion, orders=orders)
        return Ledger(single, None, target_epsilon, notes)
    sub_group = Mechanism("term-wise DP-SGD: sub-group sum", noise_multiplier, sample_rate, steps, c2)
    paper = Accounting(
        (per_example, sub_group), delta, accountant="rdp+rdp (sequential)", conversion=conversion, orders=orders
    )
    joint = Mechanism(
        "term-wise DP-SGD: both sums (scaled by 1/C1, 1/C2)",
        noise_multiplier / STRICT_TERMWISE_SENSITIVITY,
        sample_rate,
        steps,
        STRICT_TERMWISE_SENSITIVITY,
    )
    strict = Accounting((joint,), delta, conversion=conversion, orders=orders)
    return Ledger(paper, strict, target_epsilon, notes)


