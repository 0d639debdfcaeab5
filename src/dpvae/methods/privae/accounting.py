"""PriVAE's privacy accounting: Theorem 2's way ("paper") and the released gradient's way ("sound").

Term-wise DP-SGD releases one vector per step, g̃ = (g_sample + N(0, (σ'C1)²))/B + (g_batch + N(0, (σ'C2)²))/b
(docs/papers.md §1.1; B the expected batch size, b sub-groups formed by independent uniform labels). Adding
or removing a record moves g_sample by ≤ C1 (its own clipped term) and g_batch by ≤ 2·C2 (it joins or
leaves one existing sub-group, whose clipped gradient can flip; no other record changes sub-group), and
the two can move in the same direction, so

    sensitivity of g_sample/B + g_batch/b  =  c1 + 2·c2,     noise std  =  σ'·√(c1² + c2²),
    with c1 = C1/B and c2 = C2/b;

the step is one Gaussian mechanism with multiplier σ'·√(c1² + c2²)/(c1 + 2·c2), for every realised
Poisson batch. (The issue's (C1 + 2·C2)/√(C1² + C2²) is this ratio with the clip norms weighted by 1/B
and 1/b; taken literally with the raw clip norms it holds only for B = b.)

The sound accounting is under replace-one adjacency, as every method's (N is public: q = B/N and the release's
N records): a replacement is a removal and an addition, each moving the released vector by at most the
sensitivity above, composed by Mironov 2017, Prop. 11 (`privacy.accounting.replace_one_rdp`). The paper's is
add/remove-one.

The noise factor κ = σ'/σ (σ: ordinary DP-SGD's multiplier for the target at the same q and T, under the
headline's adjacency: add/remove-one for κ = paper, replace-one for the sound κs):
* "paper": 2√(log(2/δ)/log(1/δ)) (Abadi's bound at (ε/2, δ/2), Theorem 2 with Lemma 2's C1 + C2; the
  batch term can in fact move by 2·C2, so the paper's ε is a claim, not a bound);
* "sqrt5": √5 = √(1² + 2²), the whitened sensitivity if the two noisy sums were released separately;
  sound for the single release too (Cauchy-Schwarz: (c1 + 2c2)/√(c1² + c2²) ≤ √5), and loose;
* "tight": (c1 + 2·c2)/√(c1² + c2²), the exact worst case of the released vector relative to its
  noise: the sound ledger then spends exactly the target (σ calibrated under replace-one).
The "sound" ledger is the released vector as one mechanism (above), whatever κ; the headline is "paper"
for κ = paper and "sound" otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal, get_args

from dpvae.errors import ConfigError
from dpvae.privacy.accounting import (
    INTEGER_ORDERS,
    Adjacency,
    Conversion,
    abadi_kappa,
    calibrate_noise,
    round_up_noise,
)
from dpvae.privacy.ledger import Accounting, Ledger, Mechanism, recorded_mechanisms
from dpvae.privacy.release import ReleasePart, combined_mechanism
from dpvae.runspec import RunSpec

Kappa = Literal["paper", "sqrt5", "tight"]
KAPPAS: tuple[str, ...] = get_args(Kappa)
#: Orders of docs/papers.md §1.4's [computed] σ(ε) table (integer orders 2–256, classic conversion).
PRIVAE_ORDERS = INTEGER_ORDERS
#: The sound accountings' relation (every method's): neighbours have the same N, which the release reveals.
SOUND: Adjacency = "replace-one"
#: Whitened l2-sensitivity of the two sums (g_sample/C1, g_batch/C2) as two separate releases.
SQRT5 = math.sqrt(5)
PRIVAE_NOTES = (
    "paper: the two noisy sums accounted separately at delta/2 each and the epsilons added (Theorem 2, "
    "Lemma 2's C1 + C2; a claim: a record joining an existing sub-group moves its clipped term by up to "
    "2*C2); sound: the released gradient g_sample/B + g_batch/b + noise as one Gaussian mechanism on the "
    "Poisson subsample, sensitivity C1/B + 2*C2/b (sub-groups by independent labels), noise std "
    "sigma'*sqrt((C1/B)^2 + (C2/b)^2), under replace-one adjacency (a removal and an addition, Mironov 2017 "
    "Prop. 11; N public). sigma: ordinary DP-SGD's for the target, add/remove-one for kappa = paper, replace-one "
    "for the sound kappas. kappa: paper = 2*sqrt(log(2/delta)/log(1/delta)), sqrt5 = sqrt(5) "
    "(sound, loose), tight = (C1/B + 2*C2/b)/sqrt((C1/B)^2 + (C2/b)^2) (sound, exact: spends the target)"
)


def _check_clips(c1: float, c2: float, expected_batch_size: float, num_groups: int) -> None:
    if not c1 > 0:
        raise ValueError(f"c1 must be > 0, got {c1}")
    if not c2 >= 0:
        raise ValueError(f"c2 must be >= 0, got {c2}")
    if not expected_batch_size > 0:
        raise ValueError(f"expected_batch_size must be > 0, got {expected_batch_size}")
    if isinstance(num_groups, bool) or int(num_groups) != num_groups or num_groups < 1:
        raise ValueError(f"num_groups must be an integer >= 1, got {num_groups}")


def release_parts(
    noise_multiplier: float, c1: float, c2: float, expected_batch_size: float, num_groups: int
) -> list[ReleasePart]:
    """The released gradient's two terms (one without the batch term): noise std and sensitivity each."""
    _check_clips(c1, c2, expected_batch_size, num_groups)
    c1w, c2w = c1 / expected_batch_size, c2 / num_groups
    parts = [ReleasePart("per-example sum / B", noise_multiplier * c1w, c1w)]
    if c2 > 0:
        parts.append(ReleasePart("sub-group sum / b", noise_multiplier * c2w, 2 * c2w))
    return parts


def tight_kappa(c1: float, c2: float, expected_batch_size: float, num_groups: int) -> float:
    """(c1 + 2·c2)/√(c1² + c2²) with c1 = C1/B, c2 = C2/b: the released vector's sensitivity over its noise
    per unit multiplier (1 without the batch term)."""
    _check_clips(c1, c2, expected_batch_size, num_groups)
    c1w, c2w = c1 / expected_batch_size, c2 / num_groups
    return (c1w + 2 * c2w) / math.hypot(c1w, c2w)


def privae_kappa(
    delta: float, c1: float, c2: float, expected_batch_size: float, num_groups: int, kappa: Kappa = "paper"
) -> float:
    """Noise factor σ'/σ of term-wise DP-SGD (see the module docstring); 1 without the batch-wise term."""
    if kappa not in KAPPAS:
        raise ValueError(f"kappa must be one of {KAPPAS}, got {kappa!r}")
    _check_clips(c1, c2, expected_batch_size, num_groups)
    if c2 == 0:
        return 1.0
    if kappa == "paper":
        return abadi_kappa(delta)
    return SQRT5 if kappa == "sqrt5" else tight_kappa(c1, c2, expected_batch_size, num_groups)


def privae_ledger(
    noise_multiplier: float,
    sample_rate: float,
    steps: int,
    delta: float,
    c1: float,
    c2: float,
    expected_batch_size: float,
    num_groups: int,
    kappa: Kappa = "paper",
    target_epsilon: float | None = None,
    conversion: Conversion = "classic",
    orders: tuple[float, ...] = PRIVAE_ORDERS,
    notes: str = PRIVAE_NOTES,
) -> Ledger:
    """Ledger of a term-wise DP-SGD run whose two noisy sums both use multiplier σ' = `noise_multiplier`.

    Paper: each half (per-example sum at C1, sub-group sum at C2) accounted alone with its own
    amplification at δ/2 and the two ε added (Theorem 2). Sound: the released gradient as one
    Poisson-subsampled Gaussian mechanism under replace-one (module docstring). Without the batch term (C2 = 0)
    both are ordinary DP-SGD at C1. `kappa` only picks the headline: "paper" for κ = paper, else "sound".
    """
    if kappa not in KAPPAS:
        raise ValueError(f"kappa must be one of {KAPPAS}, got {kappa!r}")
    parts = release_parts(noise_multiplier, c1, c2, expected_batch_size, num_groups)
    sound_mechanism = combined_mechanism("term-wise DP-SGD: released gradient", parts, sample_rate, steps)
    sound = Accounting((sound_mechanism,), delta, adjacency=SOUND, conversion=conversion, orders=orders)
    headline = "paper" if kappa == "paper" else "sound"
    per_example = Mechanism("term-wise DP-SGD: per-example sum", noise_multiplier, sample_rate, steps, c1)
    if c2 == 0:
        paper = Accounting((per_example,), delta, conversion=conversion, orders=orders)
        return Ledger(paper, sound, target_epsilon, notes, headline)
    sub_group = Mechanism("term-wise DP-SGD: sub-group sum", noise_multiplier, sample_rate, steps, c2)
    paper = Accounting(
        (per_example, sub_group), delta, accountant="rdp+rdp (sequential)", conversion=conversion, orders=orders
    )
    return Ledger(paper, sound, target_epsilon, notes, headline)


def privae_noise(
    epsilon: float,
    delta: float,
    sample_rate: float,
    steps: int,
    c1: float,
    c2: float,
    expected_batch_size: float,
    num_groups: int,
    kappa: Kappa = "paper",
    conversion: Conversion = "classic",
    orders: tuple[float, ...] = PRIVAE_ORDERS,
    sigma: float | None = None,
) -> float:
    """σ' = κ·σ, σ being ordinary DP-SGD's multiplier for (ε, δ) at rate q over `steps` steps under the headline's
    adjacency (`headline_adjacency`), rounded up (if ever needed) so that the headline ε of `privae_ledger` never
    exceeds `epsilon`. `sigma`: that σ when the caller has calibrated it already (the same arguments; calibrating
    costs seconds of RDP)."""
    factor = privae_kappa(delta, c1, c2, expected_batch_size, num_groups, kappa)
    if sigma is None:
        sigma = calibrate_noise(epsilon, delta, sample_rate, steps, conversion, orders, headline_adjacency(kappa))
    sigma = factor * sigma

    def headline(noise: float) -> float:
        return privae_ledger(
            noise,
            sample_rate,
            steps,
            delta,
            c1,
            c2,
            expected_batch_size,
            num_groups,
            kappa,
            conversion=conversion,
            orders=orders,
        ).epsilon

    # κσ/κ can round below σ; Theorem 2's halves are not guaranteed either
    return round_up_noise(headline, sigma, epsilon)


# ------------------------------------------------------------------ a run's calibration and ledger

# Which σ each engine of a run gets and how the run is accounted:
# * term-wise: σ' = κσ with σ ordinary DP-SGD's multiplier for the target at rate q over T steps and κ per
#   `kappa` (`privae_noise`); ledger `privae_ledger` (paper: the two halves composed as
#   Theorem 2 says; sound: the released gradient as one mechanism; headline paper for κ = paper, else sound).
# * micro / batch aggregation (Table 1's baselines): the engine's own mechanisms (paper: Table 1's
#   sensitivities B·C and C; sound: 2C on the released average). σ is ordinary DP-SGD's for the target
#   under the paper's calibration (`kappa: paper`, headline paper), and that times sound/paper
#   sensitivity (2) under a sound one (`sqrt5`/`tight`, headline sound: the sound ledger spends the target).
# Every accounting uses the classic RDP conversion over PriVAE's integer orders (TF-Privacy's accountant,
# docs/papers.md §1.4).

CONVERSION = "classic"
AGGREGATION_NOTES = (
    "paper: Table 1's sensitivity of the released sum (micro agg. B*C, batch agg. C), noise multiplier sigma; "
    "sound: the add/remove-one sensitivity that holds for every realised Poisson batch (2C on the released "
    "average: a record changes every unit that shares the batch-wise term), under replace-one adjacency (a "
    "removal and an addition, Mironov 2017 Prop. 11; N public). Headline: paper for kappa = paper, sound "
    "otherwise (then sigma, calibrated under replace-one, is doubled so that the sound ledger spends the target)"
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
            "needs a divergence with alpha > 0"
        )
    if params.norm == "batch":
        raise ConfigError(
            "privae: norm 'batch' mixes examples inside a batch (no per-example sensitivity); "
            "use norm: group or none (docs/papers.md A-P1)"
        )


def headline_adjacency(kappa: str) -> Adjacency:
    """The relation of the headline accounting a `kappa` picks: the paper's add/remove-one, else the sound one."""
    return "add/remove-one" if kappa == "paper" else SOUND


def _sigma(epsilon: float, delta: float, sample_rate: float, steps: int, kappa: str) -> float:
    """Ordinary DP-SGD's σ for the target under the headline's adjacency."""
    return calibrate_noise(epsilon, delta, sample_rate, steps, CONVERSION, PRIVAE_ORDERS, headline_adjacency(kappa))


def termwise_noise(params, epsilon: float, delta: float, sample_rate: float, steps: int) -> Calibration:
    """σ' = κσ for term-wise DP-SGD per `params.kappa` (κ = 1 without the batch-wise term)."""
    sigma = _sigma(epsilon, delta, sample_rate, steps, params.kappa)
    noise = privae_noise(
        epsilon,
        delta,
        sample_rate,
        steps,
        params.clip_sample,
        params.clip_batch,
        params.batch_size,
        params.groups,
        params.kappa,
        CONVERSION,
        PRIVAE_ORDERS,
        sigma=sigma,
    )
    return Calibration(sigma, noise / sigma, noise)


def aggregation_noise(params, profile, epsilon: float, delta: float, sample_rate: float, steps: int) -> Calibration:
    """σ for micro/batch aggregation: ordinary DP-SGD's (under the headline's adjacency), times sound/paper
    sensitivity under a sound `kappa`."""
    sigma = _sigma(epsilon, delta, sample_rate, steps, params.kappa)
    factor = 1.0 if params.kappa == "paper" else profile.sound_sensitivity / profile.sensitivity
    return Calibration(sigma, factor, factor * sigma)


def termwise_ledger(
    params, noise_multiplier: float, sample_rate: float, steps: int, delta: float, target: float | None
) -> Ledger:
    return privae_ledger(
        noise_multiplier,
        sample_rate,
        steps,
        delta,
        params.clip_sample,
        params.clip_batch,
        params.batch_size,
        params.groups,
        params.kappa,
        target_epsilon=target,
        conversion=CONVERSION,
        orders=PRIVAE_ORDERS,
    )


def aggregation_ledger(params, engine, delta: float, target: float | None) -> Ledger:
    """Paper's and sound accountings of a micro/batch-aggregation engine's steps."""

    def accounting(sound: bool) -> Accounting:
        adjacency = SOUND if sound else "add/remove-one"
        mechanisms = tuple(engine.mechanisms(sound=sound))
        return Accounting(mechanisms, delta, adjacency=adjacency, conversion=CONVERSION, orders=PRIVAE_ORDERS)

    return Ledger(
        accounting(False),
        accounting(True),
        target,
        AGGREGATION_NOTES,
        headline="paper" if params.kappa == "paper" else "sound",
    )


def aggregation_engine(
    params: Any, model: Any, sample_rate: float, steps: int, epsilon: float, delta: float, generator: Any = None
) -> tuple[Any, Calibration]:
    """A micro/batch-aggregation engine on `model` with its noise calibrated (`aggregation_noise`), and that
    calibration."""
    from dpvae.privacy.dpsgd import BatchAggregation, MicroAggregation

    cls = MicroAggregation if params.engine == "micro" else BatchAggregation
    options = {
        "sample_rate": sample_rate,
        "generator": generator,
        **({"expected_batch_size": params.batch_size} if params.engine == "micro" else {}),
    }
    probe = cls(model, max_grad_norm=params.clip, noise_multiplier=1.0, **options)
    calibration = aggregation_noise(params, probe.noise_profile(), epsilon, delta, sample_rate, steps)
    probe.close()
    return cls(model, max_grad_norm=params.clip, noise_multiplier=calibration.noise_multiplier, **options), calibration


def schedule(params: Any, n: int) -> tuple[float, int]:
    """(q, T) of a private run on `n` training records: Poisson rate B/N, T = ⌈epochs·N/B⌉ steps (a batch larger
    than the training split refused)."""
    if params.batch_size > n:
        raise ConfigError(f"batch_size {params.batch_size} exceeds the {n} training records")
    return params.batch_size / n, math.ceil(params.epochs * n / params.batch_size)


def recompute_ledger(params: Any, spec: RunSpec, recorded: dict) -> Ledger:
    """A PriVAE run's ledger computed again from its parameters and the rate and steps it records (σ recalibrated)."""
    run = recorded_mechanisms(recorded)[0]
    return ledger_at(params, run.sample_rate, run.steps, spec.epsilon, spec.delta)


def planned_ledger(params: Any, spec: RunSpec, n: int) -> Ledger:
    """The ledger a private run on `n` training records writes, before it trains (its `schedule`, `ledger_at`)."""
    check_consistent(params)
    return ledger_at(params, *schedule(params, n), spec.epsilon, spec.delta)


def ledger_at(params: Any, rate: float, steps: int, epsilon: float, delta: float) -> Ledger:
    """The ledger of `steps` steps at rate q with the noise calibrated to (ε, δ) as training calibrates it
    (a micro/batch-aggregation engine built on a stand-in model: its accounting does not read the model)."""
    import torch

    if params.engine == "termwise":
        calibration = termwise_noise(params, epsilon, delta, rate, steps)
        return termwise_ledger(params, calibration.noise_multiplier, rate, steps, delta, epsilon)
    engine, _ = aggregation_engine(params, torch.nn.Linear(1, 1), rate, steps, epsilon, delta)
    engine.steps = steps
    ledger = aggregation_ledger(params, engine, delta, epsilon)
    engine.close()
    return ledger
