"""P3GM's privacy accounting: the code's own way and a sound way (PAPERS.md §3.1, §3.5, §5)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

from dpvae.privacy.accounting import Conversion
from dpvae.privacy.ledger import Accounting, Ledger, Mechanism


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


