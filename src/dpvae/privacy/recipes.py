"""Each paper's privacy accounting, the paper's own way and a strict way (PAPERS.md §1.4, §3, §4.5, §5).

Every function only assembles `Mechanism`s and hands them to an accountant; ε is always computed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, NamedTuple

from dpvae.privacy.accounting import (
    INTEGER_ORDERS,
    PYVACY_ORDER_BOUNDS,
    Conversion,
    abadi_kappa,
    calibrate_noise,
    solve_noise_multiplier,
)
from dpvae.privacy.ledger import Accounting, Ledger, Mechanism

# ------------------------------------------------------------------------------------------------ P3GM

P3GM_DELTA = 1e-5
P3GM_TEST_FRACTION = 0.1
P3GM_NOTES = (
    "headline: the P3GM code's accountant (add/remove-one, TF-Privacy compute_rdp, improved conversion); "
    "strict: replace-one (DP-PCA sensitivity sqrt(2), DP-SGD via Mironov 2017 Prop. 11 through D without "
    "the record) and the unaccounted initial noisy EM M-step counted"
)


def p3gm_train_size(n_rows: int, test_fraction: float = P3GM_TEST_FRACTION) -> int:
    """Training rows after P3GM's split: scikit-learn's train_test_split keeps n − ⌈test_fraction·n⌉."""
    if isinstance(n_rows, bool) or int(n_rows) != n_rows or n_rows < 2:
        raise ValueError(f"n_rows must be an integer >= 2, got {n_rows}")
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    return int(n_rows) - math.ceil(test_fraction * n_rows)


@dataclass(frozen=True)
class P3GMSetting:
    """One P3GM run's privacy-relevant settings (`src/synthesize.py` arguments; defaults = exp.sh)."""

    n_train: int
    batch_size: int
    epochs: float
    sgd_sigma: float
    pca_sigma: float
    em_sigma: float = 100.0
    em_iters: int = 20
    n_components: int = 1
    clip: float = 1.0
    delta: float = P3GM_DELTA

    def __post_init__(self) -> None:
        for name in ("n_train", "batch_size", "n_components"):
            value = getattr(self, name)
            if isinstance(value, bool) or int(value) != value or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value}")
        if self.batch_size > self.n_train:
            raise ValueError(f"batch_size must be <= n_train ({self.n_train}), got {self.batch_size}")
        if isinstance(self.em_iters, bool) or int(self.em_iters) != self.em_iters or self.em_iters < 0:
            raise ValueError(f"em_iters must be an integer >= 0, got {self.em_iters}")
        if not self.epochs >= 0:
            raise ValueError(f"epochs must be >= 0, got {self.epochs}")
        if not self.sgd_sigma >= 0:
            raise ValueError(f"sgd_sigma must be >= 0, got {self.sgd_sigma}")
        for name in ("pca_sigma", "em_sigma", "clip"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")

    @property
    def sgd_steps(self) -> int:
        """T = ⌈epochs·N/B⌉ as the code's accountant counts it (its loader runs ⌊N/B⌋ − 1 per epoch)."""
        return math.ceil(self.epochs * self.n_train / self.batch_size)


def p3gm_mechanisms(setting: P3GMSetting, strict: bool = False) -> tuple[Mechanism, ...]:
    """DP-PCA, DP-EM and DP-SGD of P3GM's Theorem 4 as the code accounts them, or strictly.

    Paper (add/remove-one): DP-PCA (q = 1, σ_p, one release, sensitivity 1 for unit rows), DP-EM
    (q = 1, σ_e, T_e·(2K+1) Gaussians), DP-SGD (q = B/N, σ_s, T = ⌈epochs·N/B⌉, clip C).

    Strict (replace-one, the relation the paper states):
    * DP-PCA: replacing a unit row changes XᵀX by ‖xxᵀ − x'x'ᵀ‖_F ≤ √2, so the multiplier is σ_p/√2;
    * DP-EM: the coded sensitivities (2/N, 2√d'/ñ_k) are kept ("as coded"), but the noisy initial
      M-step after random responsibilities, which the code does not count, is: (T_e + 1)·(2K+1);
    * DP-SGD: σ_s relative to the clip C (one record's contribution), replace-one bounded through the
      dataset without the record (`accounting.replace_one_rdp`). Poisson sampling is still assumed,
      although the code draws fixed consecutive batches with replacement.
    """
    pca_sensitivity = math.sqrt(2) if strict else 1.0
    em_releases = (setting.em_iters + int(strict)) * (2 * setting.n_components + 1)
    return (
        Mechanism("DP-PCA", setting.pca_sigma / pca_sensitivity, 1.0, 1, pca_sensitivity),
        Mechanism("DP-EM", setting.em_sigma, 1.0, em_releases, 1.0),
        Mechanism(
            "DP-SGD", setting.sgd_sigma, setting.batch_size / setting.n_train, setting.sgd_steps, setting.clip
        ),
    )


def p3gm_accounting(setting: P3GMSetting, strict: bool = False) -> Accounting:
    """P3GM's RDP sum with the improved conversion over TF-Privacy's orders (strict: replace-one)."""
    return Accounting(
        p3gm_mechanisms(setting, strict),
        setting.delta,
        adjacency="replace-one" if strict else "add/remove-one",
        accountant="rdp",
        conversion="improved",
    )


def p3gm_ledger(
    setting: P3GMSetting, target_epsilon: float | None = None, notes: str = P3GM_NOTES
) -> Ledger:
    """Headline = the code's accounting; strict = replace-one + the counted initial EM M-step."""
    return Ledger(p3gm_accounting(setting), p3gm_accounting(setting, strict=True), target_epsilon, notes)


class CompositionComparison(NamedTuple):
    """P3GM fig9: the same mechanisms under Theorem 4's RDP sum and under the baseline composition."""

    proposed: Accounting
    baseline: Accounting


def p3gm_composition_comparison(
    setting: P3GMSetting, conversion: Conversion = "classic"
) -> CompositionComparison:
    """Fig 9: RDP composition vs baseline (PCA by the classic Gaussian bound, EM by zCDP, SGD by the
    moments accountant, each at δ/3, ε summed). PAPERS.md's [computed] values use the classic
    conversion for the RDP curve too."""
    mechanisms = p3gm_mechanisms(setting)
    return CompositionComparison(
        proposed=Accounting(mechanisms, setting.delta, accountant="rdp", conversion=conversion),
        baseline=Accounting(
            mechanisms, setting.delta, accountant="gaussian+zcdp+moments (sequential)", conversion=conversion
        ),
    )


# ---------------------------------------------------------------------------------------------- PriVAE

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


# --------------------------------------------------------------------------------------------- DP²-VAE

DP2VAE_DELTA = 1e-5
DP2VAE_NOTES = (
    "headline: pyvacy Eps(K, sigma, T, delta) (q = 1/K, T steps, classic conversion, order searched in "
    "[1, 512]); strict: T*B compositions (GS-WGAN style), because the non-privately trained encoder makes "
    "all B per-example gradients of a step depend on every record of the chosen subset"
)


def _dp2vae_accounting(
    name: str, noise_multiplier: float, num_subsets: int, compositions: int, clip: float, delta: float
) -> Accounting:
    """`compositions` q = 1/K subsampled Gaussians, classic conversion, order searched in [1, 512]."""
    if isinstance(num_subsets, bool) or int(num_subsets) != num_subsets or num_subsets < 1:
        raise ValueError(f"num_subsets must be an integer >= 1, got {num_subsets}")
    mechanism = Mechanism(name, noise_multiplier, 1.0 / num_subsets, compositions, clip)
    return Accounting(
        (mechanism,), delta, accountant="rdp-order-search", conversion="classic", orders=PYVACY_ORDER_BOUNDS
    )


def dp2vae_epsilon(num_subsets: int, noise_multiplier: float, steps: int, delta: float = DP2VAE_DELTA) -> float:
    """DP²-VAE's Eps(K, σ, T, δ), the pyvacy way: q = 1/K, T compositions, classic conversion,
    continuous order searched in [1, 512]."""
    return _dp2vae_accounting("decoder DP-SGD", noise_multiplier, num_subsets, steps, 1.0, delta).epsilon


def dp2vae_noise(target_epsilon: float, num_subsets: int, steps: int, delta: float = DP2VAE_DELTA) -> float:
    """σ with Eps(K, σ, T, δ) = `target_epsilon` (the inverse of `dp2vae_epsilon`)."""
    if isinstance(steps, bool) or int(steps) != steps or steps < 1:
        raise ValueError(f"steps must be an integer >= 1, got {steps}")
    return solve_noise_multiplier(lambda sigma: dp2vae_epsilon(num_subsets, sigma, steps, delta), target_epsilon)


def dp2vae_ledger(
    noise_multiplier: float,
    num_subsets: int,
    steps: int,
    batch_size: int,
    clip: float = 1.0,
    delta: float = DP2VAE_DELTA,
    target_epsilon: float | None = None,
    notes: str = DP2VAE_NOTES,
) -> Ledger:
    """Paper: pyvacy's Eps (q = 1/K, T steps). Strict: GS-WGAN-style T·B compositions of the same
    q = 1/K subsampled Gaussian, because the non-privately trained encoder θ_k makes every one of the
    B per-example decoder gradients depend on each record of the chosen subset (PAPERS.md §4.5.2).
    Both use the classic conversion and pyvacy's continuous order search."""
    if isinstance(batch_size, bool) or int(batch_size) != batch_size or batch_size < 1:
        raise ValueError(f"batch_size must be an integer >= 1, got {batch_size}")
    paper = _dp2vae_accounting("decoder DP-SGD (T steps)", noise_multiplier, num_subsets, steps, clip, delta)
    strict = _dp2vae_accounting(
        "decoder DP-SGD (T·B compositions)", noise_multiplier, num_subsets, steps * int(batch_size), clip, delta
    )
    return Ledger(paper, strict, target_epsilon, notes)
