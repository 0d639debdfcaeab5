"""PriVAE runs' noise calibration and ledgers: which σ each engine gets and how the run is accounted.

* term-wise: σ' = κσ with σ ordinary DP-SGD's multiplier for the target at rate q over T steps and κ per
  `kappa` (`recipes.privae_noise`); ledger `recipes.privae_ledger` (paper: the two halves composed as
  Theorem 2 says; sound: the released gradient as one mechanism; headline paper for κ = paper, else sound).
* micro / batch aggregation (Table 1's baselines): the engine's own mechanisms (paper: Table 1's
  sensitivities B·C and C; sound: 2C on the released average). σ is ordinary DP-SGD's for the target
  under the paper's calibration (`kappa: paper`, headline paper), and that times sound/paper
  sensitivity (2) under a sound one (`sqrt5`/`tight`, headline sound: the sound ledger spends the target).
Every accounting uses the classic RDP conversion over PriVAE's integer orders (TF-Privacy's accountant,
PAPERS.md §1.4).
"""

from __future__ import annotations

from dataclasses import dataclass

from dpvae.errors import ConfigError
from dpvae.methods.recipes import PRIVAE_ORDERS, privae_ledger, privae_noise
from dpvae.privacy.accounting import calibrate_noise
from dpvae.privacy.ledger import Accounting, Ledger

CONVERSION = "classic"
AGGREGATION_NOTES = (
    "paper: Table 1's sensitivity of the released sum (micro agg. B*C, batch agg. C), noise multiplier sigma; "
    "sound: the add/remove-one sensitivity that holds for every realised Poisson batch (2C on the released "
    "average: a record changes every unit that shares the batch-wise term). Headline: paper for kappa = paper, "
    "sound otherwise (then sigma is doubled so that the sound ledger spends the target)"
)


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


def _sigma(epsilon: float, delta: float, sample_rate: float, steps: int) -> float:
    return calibrate_noise(epsilon, delta, sample_rate, steps, CONVERSION, PRIVAE_ORDERS)


def termwise_noise(params, epsilon: float, delta: float, sample_rate: float, steps: int) -> Calibration:
    """σ' = κσ for term-wise DP-SGD per `params.kappa` (κ = 1 without the batch-wise term)."""
    sigma = _sigma(epsilon, delta, sample_rate, steps)
    noise = privae_noise(epsilon, delta, sample_rate, steps, params.clip_sample, params.clip_batch,
                         params.batch_size, params.groups, params.kappa, CONVERSION, PRIVAE_ORDERS, sigma=sigma)
    return Calibration(sigma, noise / sigma, noise)


def aggregation_noise(params, profile, epsilon: float, delta: float, sample_rate: float, steps: int) -> Calibration:
    """σ for micro/batch aggregation: ordinary DP-SGD's, times sound/paper sensitivity under a sound `kappa`."""
    sigma = _sigma(epsilon, delta, sample_rate, steps)
    factor = 1.0 if params.kappa == "paper" else profile.sound_sensitivity / profile.sensitivity
    return Calibration(sigma, factor, factor * sigma)


def termwise_ledger(params, noise_multiplier: float, sample_rate: float, steps: int, delta: float,
                    target: float | None) -> Ledger:
    return privae_ledger(noise_multiplier, sample_rate, steps, delta, params.clip_sample, params.clip_batch,
                         params.batch_size, params.groups, params.kappa, target_epsilon=target,
                         conversion=CONVERSION, orders=PRIVAE_ORDERS)


def aggregation_ledger(params, engine, delta: float, target: float | None) -> Ledger:
    """Paper's and sound accountings of a micro/batch-aggregation engine's steps."""

    def accounting(sound: bool) -> Accounting:
        return Accounting(tuple(engine.mechanisms(sound=sound)), delta, conversion=CONVERSION, orders=PRIVAE_ORDERS)

    return Ledger(accounting(False), accounting(True), target, AGGREGATION_NOTES,
                  headline="paper" if params.kappa == "paper" else "sound")
