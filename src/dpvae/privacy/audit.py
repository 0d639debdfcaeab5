"""What a membership-inference attack says about privacy: its trade-off curve and the ε it proves.

An attack gives every target a score (higher = "member"). Thresholding the scores gives, per threshold, a
type-I error α (false alarm: a non-member flagged, the false-positive rate) and a type-II error β (missed
member, 1 − TPR). (ε, δ)-DP implies, for every test (Kairouz et al. 2015; LVAE's Theorem 1)

    α + e^ε β ≥ 1 − δ   and   e^ε α + β ≥ 1 − δ,

so one observed (α, β) proves ε ≥ max{log((1 − δ − β)/α), log((1 − δ − α)/β)}. With finitely many targets
α and β are estimates: replacing them by one-sided Clopper–Pearson upper bounds (each at level
(1 − confidence)/2, a union bound over the two rates) gives a lower confidence bound on ε (Jagielski et al.
2020; Nasr et al. 2021). Taking the best threshold on the same targets makes that bound optimistic, so
`empirical_epsilon` also reports the bound at the threshold chosen on one half of the targets and evaluated
on the other (valid for independent targets).

Caveat every caller should repeat: the targets of one trained model are not independent trials of the DP
game (members and non-members are different records, all judged by one model), so these are the usual
heuristic audit numbers, not a proof about the training algorithm (that needs many runs, or the one-run
audit of Steinke et al. 2023 with randomly included canaries).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class Curve:
    """The attack's ROC as a trade-off curve: type-I errors `alpha` (ascending) and type-II errors `beta`."""

    alpha: np.ndarray
    beta: np.ndarray
    thresholds: np.ndarray

    @property
    def tpr(self) -> np.ndarray:
        return 1 - self.beta


def _scores(members: np.ndarray, nonmembers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    members, nonmembers = np.asarray(members, dtype=np.float64), np.asarray(nonmembers, dtype=np.float64)
    if members.ndim != 1 or nonmembers.ndim != 1 or not len(members) or not len(nonmembers):
        raise ValueError(f"need 1-d non-empty score arrays, got {members.shape} and {nonmembers.shape}")
    if not (np.isfinite(members).all() and np.isfinite(nonmembers).all()):
        raise ValueError("attack scores must be finite")
    return members, nonmembers


def tradeoff_curve(members: np.ndarray, nonmembers: np.ndarray) -> Curve:
    """Every threshold's (α, β) from scikit-learn's ROC (members are the positives; ties stay together)."""
    from sklearn.metrics import roc_curve

    members, nonmembers = _scores(members, nonmembers)
    labels = np.r_[np.ones(len(members)), np.zeros(len(nonmembers))]
    fpr, tpr, thresholds = roc_curve(labels, np.r_[members, nonmembers], drop_intermediate=False)
    return Curve(fpr, 1 - tpr, thresholds)


def auc(members: np.ndarray, nonmembers: np.ndarray) -> float:
    """Area under the ROC curve (0.5 = guessing)."""
    from sklearn.metrics import roc_auc_score

    members, nonmembers = _scores(members, nonmembers)
    return float(roc_auc_score(np.r_[np.ones(len(members)), np.zeros(len(nonmembers))], np.r_[members, nonmembers]))


def tpr_at_fpr(curve: Curve, fpr: float) -> float:
    """The largest true-positive rate among thresholds whose false-positive rate is at most `fpr`."""
    ok = curve.alpha <= fpr + 1e-12
    return float(curve.tpr[ok].max()) if ok.any() else 0.0


def clopper_pearson(k: int | np.ndarray, n: int, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Exact one-sided bounds (lower, upper) of a binomial proportion k/n, each holding with prob. ≥ `level`."""
    from scipy import stats

    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    k = np.asarray(k, dtype=np.float64)
    if n < 1 or (k < 0).any() or (k > n).any():
        raise ValueError(f"need 0 <= k <= n with n >= 1, got k={k}, n={n}")
    tail = 1 - level
    lower = np.where(k == 0, 0.0, stats.beta.ppf(tail, k, n - k + 1))
    upper = np.where(k == n, 1.0, stats.beta.ppf(1 - tail, k + 1, n - k))
    return lower, upper


def epsilon_from_errors(alpha: np.ndarray | float, beta: np.ndarray | float, delta: float) -> np.ndarray:
    """The ε that type-I/type-II errors (α, β) prove at δ: max of the two DP inequalities, floored at 0."""
    alpha, beta = np.asarray(alpha, dtype=np.float64), np.asarray(beta, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        one = np.log(np.clip(1 - delta - beta, 0, None) / alpha)
        two = np.log(np.clip(1 - delta - alpha, 0, None) / beta)
    eps = np.fmax(np.nan_to_num(one, nan=-np.inf, posinf=np.inf), np.nan_to_num(two, nan=-np.inf, posinf=np.inf))
    return np.maximum(eps, 0.0)


def epsilon_lower_bound(
    false_positives: np.ndarray | int,
    negatives: int,
    false_negatives: np.ndarray | int,
    positives: int,
    delta: float,
    confidence: float = 0.95,
) -> np.ndarray:
    """Lower confidence bound on ε from counts at one (or each) threshold: Clopper–Pearson upper bounds on
    α = FP/negatives and β = FN/positives, each at level 1 − (1 − confidence)/2."""
    level = 1 - (1 - confidence) / 2
    _, alpha_high = clopper_pearson(false_positives, negatives, level)
    _, beta_high = clopper_pearson(false_negatives, positives, level)
    return epsilon_from_errors(alpha_high, beta_high, delta)


@dataclass(frozen=True)
class EpsilonEstimate:
    """ε proved by an attack at δ: the max-over-thresholds CP bound (optimistic: the threshold is chosen on
    the same targets) and the CP bound at a threshold chosen on a disjoint half of the targets (`heldout`,
    valid for independent targets). No plug-in point estimate: it is infinite whenever some threshold
    misses no member (or flags no non-member), which says nothing at these sample sizes."""

    lower_max: float
    heldout: float
    delta: float
    confidence: float

    def to_dict(self) -> dict:
        return asdict(self)


def _counts(members: np.ndarray, nonmembers: np.ndarray, thresholds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """False positives (non-members with score ≥ t) and false negatives (members below t) per threshold."""
    fp = len(nonmembers) - np.searchsorted(np.sort(nonmembers), thresholds, side="left")
    fn = np.searchsorted(np.sort(members), thresholds, side="left")
    return fp, fn


def empirical_epsilon(
    members: np.ndarray,
    nonmembers: np.ndarray,
    delta: float,
    confidence: float = 0.95,
    rng: np.random.Generator | None = None,
) -> EpsilonEstimate:
    """The ε lower bounds an attack's scores imply at δ (see `EpsilonEstimate`); `rng` splits the halves."""
    members, nonmembers = _scores(members, nonmembers)
    thresholds = np.unique(np.r_[members, nonmembers, np.inf])
    fp, fn = _counts(members, nonmembers, thresholds)
    lower = epsilon_lower_bound(fp, len(nonmembers), fn, len(members), delta, confidence).max()
    rng = rng or np.random.default_rng(0)
    heldout = 0.0
    if len(members) >= 2 and len(nonmembers) >= 2:
        pm, pn = rng.permutation(len(members)), rng.permutation(len(nonmembers))
        sel_m, ev_m = members[pm[: len(pm) // 2]], members[pm[len(pm) // 2 :]]
        sel_n, ev_n = nonmembers[pn[: len(pn) // 2]], nonmembers[pn[len(pn) // 2 :]]
        fp_s, fn_s = _counts(sel_m, sel_n, thresholds)
        chosen = epsilon_lower_bound(fp_s, len(sel_n), fn_s, len(sel_m), delta, confidence)
        best = thresholds[int(np.argmax(chosen))]
        fp_e, fn_e = _counts(ev_m, ev_n, np.array([best]))
        heldout = float(epsilon_lower_bound(fp_e, len(ev_n), fn_e, len(ev_m), delta, confidence)[0])
    return EpsilonEstimate(float(lower), heldout, float(delta), float(confidence))


def summary(
    members: np.ndarray,
    nonmembers: np.ndarray,
    delta: float,
    confidence: float = 0.95,
    rng: np.random.Generator | None = None,
) -> dict[str, float]:
    """AUC, TPR at 1 % and 0.1 % FPR and the ε estimates of one attack, as plain floats."""
    curve = tradeoff_curve(members, nonmembers)
    eps = empirical_epsilon(members, nonmembers, delta, confidence, rng)
    return {
        "auc": auc(members, nonmembers),
        "tpr_at_1pct_fpr": tpr_at_fpr(curve, 0.01),
        "tpr_at_0.1pct_fpr": tpr_at_fpr(curve, 0.001),
        "eps_lower_max": eps.lower_max,
        "eps_lower_heldout": eps.heldout,
    }
