"""PriVAE runs' noise calibration and ledgers: which σ each engine gets and how the run is accounted.

* term-wise: σ' = κσ with σ ordinary DP-SGD's multiplier for the target at rate q over T steps
  (`recipes.privae_noise`); ledger `recipes.privae_ledger` (paper: the two halves composed as Theorem 2
  says; sound: the released gradient as one mechanism).
* micro / batch aggregation (Table 1's baselines): the engine's own mechanisms, paper's sensitivities
  (B·C, C) and the sound ones; σ is ordinary DP-SGD's for the target under the paper's calibration, and
  that times (sound sensitivity / paper sensitivity) under a sound one (`kappa` ≠ "paper"), so that the
  sound ledger then spends the target.
Every accounting uses the classic RDP conversion over PriVAE's integer orders (TF-Privacy's accountant,
PAPERS.md §1.4).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dpvae.errors import ConfigError
from dpvae.privacy.accounting import calibrate_noise
from dpvae.privacy.ledger import Accounting, Ledger

CONVERSION = "classic"
AGGREGATION_NOTES = (
    "paper: Table 1's sensitivity of the released sum (micro agg. B*C, batch agg. C), noise multiplier sigma; "
    "sound: the add/remove-one sensitivity that holds for every realised Poisson batch (a record changes every "
    "unit that shares the batch-wise term)"
)


def _recipes():
    """PriVAE's accounting recipes (the module moved to `dpvae.methods.recipes.privae` on the privacy branch)."""
    try:
        from dpvae.methods.recipes import privae as recipes  # type: ignore[attr-defined]
    except ImportError:
        from dpvae.privacy import recipes  # type: ignore[no-redef]
    return recipes


@dataclass(frozen=True)
class Calibration:
    """σ (ordinary DP-SGD's multiplier for the target), the factor applied and the engine's multiplier."""

    sigma: float
    factor: float
    noise_multiplier: float


def check_consistent(params) -> None:
    """Refuse parameter sets whose privacy reading would be ambiguous (a ψ no engine term carries)."""
    has_divergence = params.divergence != "none" and params.alpha > 0
    if params.engine == "termwise" and has_divergence != (params.clip_batch > 0):
        raise ConfigError(
            f"privae: divergence={params.divergence!r}, alpha={params.alpha} and clip_batch={params.clip_batch} "
            "disagree: term-wise DP-SGD carries the batch-wise term only with clip_batch > 0 (C2), and C2 > 0 "
            "needs a divergence with alpha > 0")
    if params.norm == "batch":
        raise ConfigError("privae: norm 'batch' mixes examples inside a batch (no per-example sensitivity); "
                          "use norm: group or none (PAPERS.md A-P1)")


def tight_kappa(c1: float, c2: float, expected_batch_size: float, num_groups: int) -> float:
    """(C1/B + 2·C2/b)/√((C1/B)² + (C2/b)²): the released gradient's sound sensitivity over its noise."""
    recipes = _recipes()
    if hasattr(recipes, "tight_kappa"):
        return recipes.tight_kappa(c1, c2, expected_batch_size, num_groups)
    a, b = c1 / expected_batch_size, c2 / num_groups
    return (a + 2 * b) / math.hypot(a, b)


def termwise_noise(params, epsilon: float, delta: float, sample_rate: float, steps: int) -> Calibration:
    """σ' = κσ for term-wise DP-SGD per `params.kappa` (κ = 1 without the batch-wise term)."""
    recipes = _recipes()
    orders = recipes.PRIVAE_ORDERS
    sigma = calibrate_noise(epsilon, delta, sample_rate, steps, CONVERSION, orders)
    c1, c2, big_b, b = params.clip_sample, params.clip_batch, params.batch_size, params.groups
    if hasattr(recipes, "KAPPAS"):      # the privacy branch's recipes: paper, sqrt5, tight
        noise = recipes.privae_noise(epsilon, delta, sample_rate, steps, c1, c2, big_b, b, params.kappa,
                                     CONVERSION, orders)
    elif c2 == 0:
        noise = sigma
    else:                               # main's recipes: paper, and √5 (called "tight" there)
        factor = {"paper": recipes.privae_kappa(delta, c2, "paper"), "sqrt5": math.sqrt(5),
                  "tight": tight_kappa(c1, c2, big_b, b)}[params.kappa]
        noise = factor * sigma
    return Calibration(sigma, noise / sigma, noise)


def aggregation_noise(params, profile, epsilon: float, delta: float, sample_rate: float, steps: int) -> Calibration:
    """σ for micro/batch aggregation: ordinary DP-SGD's, times sound/paper sensitivity under a sound `kappa`."""
    sigma = calibrate_noise(epsilon, delta, sample_rate, steps, CONVERSION, _recipes().PRIVAE_ORDERS)
    sound = getattr(profile, "sound_sensitivity", None) or profile.strict_sensitivity
    factor = 1.0 if params.kappa == "paper" else sound / profile.sensitivity
    return Calibration(sigma, factor, factor * sigma)


def termwise_ledger(params, noise_multiplier: float, sample_rate: float, steps: int, delta: float,
                    target: float | None) -> Ledger:
    recipes = _recipes()
    c1, c2 = params.clip_sample, params.clip_batch
    if hasattr(recipes, "KAPPAS"):
        return recipes.privae_ledger(noise_multiplier, sample_rate, steps, delta, c1, c2, params.batch_size,
                                     params.groups, params.kappa, target_epsilon=target, conversion=CONVERSION)
    return recipes.privae_ledger(noise_multiplier, sample_rate, steps, delta, c1, c2, target_epsilon=target,
                                 conversion=CONVERSION)


def aggregation_ledger(params, engine, delta: float, target: float | None) -> Ledger:
    """Paper's and sound accountings of a micro/batch-aggregation engine's steps."""
    orders = _recipes().PRIVAE_ORDERS

    def accounting(sound: bool) -> Accounting:
        try:
            mechanisms = engine.mechanisms(sound=sound)
        except TypeError:
            mechanisms = engine.mechanisms(strict=sound)
        return Accounting(tuple(mechanisms), delta, conversion=CONVERSION, orders=orders)

    try:
        return Ledger(accounting(False), accounting(True), target, AGGREGATION_NOTES,
                      headline="paper" if params.kappa == "paper" else "sound")
    except TypeError:
        return Ledger(accounting(False), accounting(True), target, AGGREGATION_NOTES)
