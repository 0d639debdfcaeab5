"""Privacy accounting: RDP of (subsampled) Gaussian mechanisms, composition, conversions, calibration.

One module for every accountant the four papers use:

* RDP of the Poisson-subsampled Gaussian mechanism, from opacus' analysis (the TF-Privacy formulas of
  Mironov, Talwar & Zhang 2019); q = 1 gives the plain Gaussian α/(2σ²). Composition of a list of
  (heterogeneous) mechanisms is the sum of their RDP curves.
* RDP → (ε, δ): `classic` ε = r − log δ/(α−1) (Mironov 2017, Prop. 3) and `improved`
  ε = r + log(1 − 1/α) − (log δ + log α)/(α−1) (Balle et al. 2020, Prop. 12 / Canonne et al. 2020), the
  one in today's TF-Privacy, opacus, dp-accounting and the P3GM code's vendored TF-Privacy.
* zCDP → (ε, δ), the classic Gaussian-mechanism bound, Abadi et al.'s moments accountant and the
  closed-form factor κ PriVAE derives from it.
* Pure ε-DP composition of Laplace / exponential mechanisms (`pure_epsilon`, accountant "pure").
* Replace-one adjacency (see `replace_one_rdp`), calibration of σ for a target ε (rounded up: the ε of
  the returned σ never exceeds the target), and the continuous order search of pyvacy (DP²-VAE's
  accountant).
* Sampling one of 1/q fixed disjoint subsets per step (`fixed_partition_rdp`): the unsampled branch is
  then a different subset's output, not the same sum without the record, so Poisson amplification does
  not apply; a weaker bound does.

Adjacency conventions (what `noise_multiplier` means): under add/remove-one it is noise std / the
l2 contribution bound of one record. Under replace-one, a full-batch mechanism (q = 1) is an ordinary
Gaussian mechanism and its noise_multiplier is std / replace-one sensitivity (e.g. σ_p/√2 for DP-PCA
on XᵀX with unit rows, σ/(2C) for a sum of clipped terms); a subsampled mechanism (q < 1) keeps
std / one record's contribution bound (its add/remove sensitivity), because replace-one is bounded
through the dataset without the record.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Literal, Protocol, get_args

import numpy as np
from scipy import optimize

Conversion = Literal["classic", "improved"]
Adjacency = Literal["add/remove-one", "replace-one"]
PartAccountant = Literal["rdp", "moments", "zcdp", "gaussian"]
Sampling = Literal["poisson", "fixed-partition"]

CONVERSIONS: tuple[str, ...] = get_args(Conversion)
ADJACENCIES: tuple[str, ...] = get_args(Adjacency)
PART_ACCOUNTANTS: tuple[str, ...] = get_args(PartAccountant)
SAMPLINGS: tuple[str, ...] = get_args(Sampling)

#: RDP orders of TF-Privacy's 2019 DP-SGD tutorials, used verbatim by the P3GM code.
DEFAULT_ORDERS: tuple[float, ...] = tuple(
    float(a) for a in [1.25, 1.5, 1.75, 2, 2.25, 2.5, 3, 3.5, 4, 4.5, *range(5, 64), 128, 256, 512]
)
#: Integer orders α = λ + 1 for the moments accountant's λ = 1 … 255 (also behind docs/papers.md's [computed]
#: PriVAE σ(ε) and DP²-VAE σ(T, ε) tables).
INTEGER_ORDERS: tuple[float, ...] = tuple(float(a) for a in range(2, 257))
#: pyvacy's continuous order search interval (DP²-VAE).
PYVACY_ORDER_BOUNDS: tuple[float, float] = (1.0, 512.0)

_SEQUENTIAL_SUFFIX = " (sequential)"
#: Pure ε-DP composition (Laplace / exponential mechanisms, δ = 0), see `pure_epsilon`.
PURE_ACCOUNTANT = "pure"


class GaussianMechanismLike(Protocol):
    """What the accountant reads from a `dpvae.privacy.ledger.Mechanism`."""

    name: str
    noise_multiplier: float
    sample_rate: float
    steps: int
    sampling: Sampling


# ---------------------------------------------------------------------------------------------- checks


def _check_delta(delta: float) -> float:
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    return float(delta)


def _check_orders(orders: Iterable[float]) -> np.ndarray:
    vector = np.asarray(tuple(orders), dtype=np.float64)
    if vector.ndim != 1 or vector.size == 0 or not np.all(vector > 1) or not np.all(np.isfinite(vector)):
        raise ValueError(f"orders must be a non-empty sequence of finite numbers > 1, got {vector.tolist()}")
    return vector


def _check_choice(value: str, allowed: tuple[str, ...], name: str) -> str:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
    return value


def _check_mechanism_args(noise_multiplier: float, sample_rate: float, steps: int) -> None:
    if not noise_multiplier >= 0:
        raise ValueError(f"noise_multiplier must be >= 0, got {noise_multiplier}")
    if not 0 < sample_rate <= 1:
        raise ValueError(f"sample_rate must be in (0, 1], got {sample_rate}")
    if isinstance(steps, bool) or int(steps) != steps or steps < 0:
        raise ValueError(f"steps must be a non-negative integer, got {steps}")


# ------------------------------------------------------------------------------------------ RDP curves


def subsampled_gaussian_rdp(
    noise_multiplier: float, sample_rate: float, steps: int, orders: Sequence[float]
) -> np.ndarray:
    """RDP ε(α) of `steps` Poisson-subsampled Gaussian mechanisms (add/remove-one), opacus' analysis.

    q = 1 gives the Gaussian mechanism's steps·α/(2σ²); σ = 0 gives inf (no privacy); 0 steps give 0.
    """
    _check_mechanism_args(noise_multiplier, sample_rate, steps)
    alphas = _check_orders(orders)
    if steps == 0:
        return np.zeros_like(alphas)
    # T steps compose to T times one step's curve, which is what opacus' compute_rdp returns (the same product)
    curve = _one_step_rdp(float(noise_multiplier), float(sample_rate), tuple(alphas.tolist())) * steps
    # RDP is >= 0; opacus' signed series can round to -1e-15 for huge σ at fractional orders.
    return np.maximum(curve, 0.0)


@functools.lru_cache(maxsize=8192)
def _one_step_rdp(noise_multiplier: float, sample_rate: float, orders: tuple[float, ...]) -> np.ndarray:
    """One subsampled Gaussian's RDP curve, remembered: a calibration's search and every ledger of the same
    mechanism ask for the same σ again (opacus' series is pure Python, ~0.4 ms an order). Read-only."""
    # Imported here: `opacus` imports torch, which ledger users (numpy-only mechanisms) should not pay for.
    from opacus.accountants.analysis.rdp import compute_rdp

    curve = np.asarray(
        compute_rdp(q=sample_rate, noise_multiplier=noise_multiplier, steps=1, orders=list(orders)), dtype=np.float64
    )
    curve.flags.writeable = False
    return curve


def replace_one_rdp(noise_multiplier: float, sample_rate: float, steps: int, orders: Sequence[float]) -> np.ndarray:
    """A sound RDP bound under replace-one adjacency (D and D' differ in one record's value).

    * q = 1: the Gaussian mechanism, `noise_multiplier` taken relative to the replace-one sensitivity,
      so the curve is exactly steps·α/(2σ²).
    * q < 1: `noise_multiplier` is relative to one record's contribution bound (the add/remove
      sensitivity, e.g. the clipping norm C). With D⁻ = D without the record, Mironov 2017, Prop. 11
      (weak triangle inequality, Hölder with p = q = 2) gives
          D_α(M(D) ‖ M(D')) ≤ (α − ½)/(α − 1) · D_{2α}(M(D) ‖ M(D⁻)) + D_{2α−1}(M(D⁻) ‖ M(D')),
      and both right-hand divergences (a removal and an addition) are bounded by the add/remove RDP of
      the subsampled Gaussian (Mironov, Talwar & Zhang 2019 show that the direction the formula
      computes dominates the other one).
      Per step this is (α − ½)/(α − 1)·ε₁(2α) + ε₁(2α − 1); composition over steps is additive.
    """
    _check_mechanism_args(noise_multiplier, sample_rate, steps)
    alphas = _check_orders(orders)
    if sample_rate == 1:
        return subsampled_gaussian_rdp(noise_multiplier, 1.0, steps, alphas)
    removal = subsampled_gaussian_rdp(noise_multiplier, sample_rate, steps, 2 * alphas)
    addition = subsampled_gaussian_rdp(noise_multiplier, sample_rate, steps, 2 * alphas - 1)
    return (alphas - 0.5) / (alphas - 1) * removal + addition


def fixed_partition_rdp(noise_multiplier: float, sample_rate: float, steps: int, orders: Sequence[float]) -> np.ndarray:
    """RDP of `steps` Gaussian mechanisms, each applied to one of 1/q fixed disjoint subsets drawn uniformly.

    The record lies in one subset; a step draws it with probability q, and then the released statistic
    can move by the sensitivity (`noise_multiplier` = noise std / that sensitivity, under whichever
    relation keeps the partition fixed: replace-one for a shuffle-and-split partition). Otherwise the
    step releases another subset's statistic, identical on both datasets but *not* centred where the
    record's subset would be: the output pair is P = (1−q)R + qA, Q = (1−q)R + qA' with R arbitrary.
    Joint convexity of (p, q) ↦ p^α q^(1−α) gives E_Q[(P/Q)^α] ≤ 1 − q + q·exp((α−1)·α/(2σ²)), i.e.
        ε(α) = steps · log(1 − q + q·exp((α−1)·α/(2σ²))) / (α − 1),
    which R far from A, A' attains. (The same bound follows by conditioning on the data-independent
    schedule: the record's subset is drawn Binomial(T, q) times, each a Gaussian mechanism.) The
    Poisson-subsampled curve (`subsampled_gaussian_rdp`) assumes R = N(f(D without the record)) and is
    not a bound here. q = 1 gives steps·α/(2σ²).
    """
    _check_mechanism_args(noise_multiplier, sample_rate, steps)
    alphas = _check_orders(orders)
    if steps == 0:
        return np.zeros_like(alphas)
    if noise_multiplier == 0:
        return np.full_like(alphas, np.inf)
    exponent = (alphas - 1) * alphas / (2 * noise_multiplier**2)
    if sample_rate == 1:
        per_step = exponent
    else:
        per_step = np.logaddexp(math.log1p(-sample_rate), math.log(sample_rate) + exponent)
    return steps * per_step / (alphas - 1)


_RDP_CURVES: dict[str, Callable[[float, float, int, Sequence[float]], np.ndarray]] = {
    "add/remove-one": subsampled_gaussian_rdp,
    "replace-one": replace_one_rdp,
}


def mechanism_rdp(
    mechanism: GaussianMechanismLike, orders: Sequence[float], adjacency: Adjacency = "add/remove-one"
) -> np.ndarray:
    """RDP curve of one mechanism record under `adjacency`.

    Poisson sampling: `subsampled_gaussian_rdp` (add/remove) or `replace_one_rdp`. Fixed-partition
    sampling: `fixed_partition_rdp` under either relation (its multiplier is relative to the sensitivity
    under the accounting's relation, which must keep the partition fixed).
    """
    curve = _RDP_CURVES[_check_choice(adjacency, ADJACENCIES, "adjacency")]
    if _check_choice(getattr(mechanism, "sampling", "poisson"), SAMPLINGS, "sampling") == "fixed-partition":
        curve = fixed_partition_rdp
    return curve(mechanism.noise_multiplier, mechanism.sample_rate, mechanism.steps, orders)


def composed_rdp(
    mechanisms: Sequence[GaussianMechanismLike],
    orders: Sequence[float],
    adjacency: Adjacency = "add/remove-one",
) -> np.ndarray:
    """RDP of the adaptive composition of `mechanisms` (heterogeneous): the sum of their curves."""
    if len(mechanisms) == 0:
        raise ValueError("mechanisms must contain at least one mechanism")
    return np.sum([mechanism_rdp(m, orders, adjacency) for m in mechanisms], axis=0)


# ------------------------------------------------------------------------------------------ conversions


def rdp_to_dp(
    orders: Sequence[float], rdp: Sequence[float], delta: float, conversion: Conversion = "improved"
) -> tuple[float, float]:
    """(ε, optimal order) of an RDP curve at `delta`, minimised over the given orders.

    `classic`: ε = r − log δ/(α−1). `improved`: ε = r + log(1 − 1/α) − (log δ + log α)/(α−1), with the
    two guards of TF-Privacy / dp-accounting: ε = 0 when the KL bound already gives δ
    (δ² + expm1(−r) ≥ 0), and ε = inf for α ≤ 1.01 where the bound is numerically unstable.
    """
    alphas = _check_orders(orders)
    curve = np.asarray(rdp, dtype=np.float64)
    if curve.shape != alphas.shape:
        raise ValueError(f"rdp must have one value per order ({alphas.size}), got shape {curve.shape}")
    if np.any(curve < 0) or np.any(np.isnan(curve)):
        raise ValueError("rdp values must be >= 0 (and not NaN)")
    delta = _check_delta(delta)
    _check_choice(conversion, CONVERSIONS, "conversion")
    with np.errstate(invalid="ignore", over="ignore"):
        if conversion == "classic":
            eps = curve - math.log(delta) / (alphas - 1)
        else:
            eps = curve + np.log1p(-1 / alphas) - np.log(delta * alphas) / (alphas - 1)
            eps = np.where(alphas > 1.01, eps, np.inf)
            eps = np.where(delta**2 + np.expm1(-curve) >= 0, 0.0, eps)
    best = int(np.argmin(eps))
    return max(0.0, float(eps[best])), float(alphas[best])


def zcdp_epsilon(rho: float, delta: float) -> float:
    """ε of ρ-zCDP at `delta` (Bun & Steinke 2016, Prop. 1.3): ε = ρ + 2√(ρ log(1/δ))."""
    if not rho >= 0:
        raise ValueError(f"rho must be >= 0, got {rho}")
    return rho + 2 * math.sqrt(rho * math.log(1 / _check_delta(delta)))


def gaussian_epsilon(noise_multiplier: float, delta: float) -> float:
    """Classic Gaussian-mechanism bound (Dwork & Roth 2014, Thm A.1): ε = √(2 ln(1.25/δ))/σ.

    The theorem is proved for ε < 1 only; the P3GM fig9 baseline uses it as a formula beyond that.
    """
    if not noise_multiplier > 0:
        raise ValueError(f"noise_multiplier must be > 0, got {noise_multiplier}")
    return math.sqrt(2 * math.log(1.25 / _check_delta(delta))) / noise_multiplier


def moments_accountant_epsilon(
    noise_multiplier: float, sample_rate: float, steps: int, delta: float, max_lambda: int = 255
) -> tuple[float, float]:
    """Abadi et al. 2016's moments accountant: (ε, λ) = min over integer λ of (T·α_M(λ) + log(1/δ))/λ.

    The log moment of one subsampled-Gaussian step is α_M(λ) = log E[(p/p')^λ] = λ·ε_RDP(λ + 1)
    (Mironov 2017, Prop. 10; P3GM's Theorem 3), so the tail bound equals the RDP curve at the integer
    orders λ + 1 with the classic conversion: ε = T·ε_RDP(λ+1) − log δ/λ. This function is exactly
    that; the λ returned is the optimal order minus one.
    """
    if isinstance(max_lambda, bool) or int(max_lambda) != max_lambda or max_lambda < 1:
        raise ValueError(f"max_lambda must be an integer >= 1, got {max_lambda}")
    orders = tuple(float(lam + 1) for lam in range(1, int(max_lambda) + 1))
    rdp = subsampled_gaussian_rdp(noise_multiplier, sample_rate, steps, orders)
    eps, order = rdp_to_dp(orders, rdp, delta, "classic")
    return eps, order - 1


def abadi_kappa(delta: float) -> float:
    """PriVAE's factor κ = 2√(log(2/δ)/log(1/δ)).

    Abadi's bound σ ≥ c₂·q·√(T log(1/δ))/ε applied at (ε/2, δ/2) instead of (ε, δ) multiplies σ by κ.
    """
    delta = _check_delta(delta)
    return 2 * math.sqrt(math.log(2 / delta) / math.log(1 / delta))


# --------------------------------------------------------------------------------------------- epsilon


def epsilon(
    mechanisms: Sequence[GaussianMechanismLike],
    delta: float,
    conversion: Conversion = "improved",
    orders: Sequence[float] = DEFAULT_ORDERS,
    adjacency: Adjacency = "add/remove-one",
) -> tuple[float, float]:
    """(ε, optimal order) of the RDP composition of `mechanisms` at `delta`."""
    return rdp_to_dp(orders, composed_rdp(mechanisms, orders, adjacency), delta, conversion)


def epsilon_order_search(
    mechanisms: Sequence[GaussianMechanismLike],
    delta: float,
    conversion: Conversion = "classic",
    bounds: tuple[float, float] = PYVACY_ORDER_BOUNDS,
    adjacency: Adjacency = "add/remove-one",
) -> tuple[float, float]:
    """(ε, order) minimised over a *continuous* order in `bounds` (pyvacy's accountant, DP²-VAE).

    pyvacy ternary-searches α ∈ [1, 512] (72 steps); ε(α) is unimodal there, so scipy's bounded
    Brent search on the same interval finds the same minimum (to 1e-6 in α).
    """
    low, high = (float(b) for b in bounds)
    if not 1 <= low < high or not math.isfinite(high):
        raise ValueError(f"bounds must satisfy 1 <= low < high < inf, got {bounds}")

    def eps_at(alpha: float) -> float:
        return rdp_to_dp([alpha], composed_rdp(mechanisms, [alpha], adjacency), delta, conversion)[0]

    result = optimize.minimize_scalar(eps_at, bounds=(low, high), method="bounded", options={"xatol": 1e-6})
    return float(result.fun), float(result.x)


def pure_epsilon(mechanisms: Sequence[GaussianMechanismLike]) -> float:
    """ε of the sequential composition of pure ε-DP mechanisms (δ = 0): Σ steps_i / noise_multiplier_i.

    Under the "pure" accountant a mechanism record is a Laplace mechanism whose `noise_multiplier` is its
    scale / L1-sensitivity (so one release is (1/multiplier)-DP), or any other ε_i-DP mechanism (e.g. an
    exponential mechanism) written with multiplier 1/ε_i. Basic composition adds the ε_i; the guarantee
    holds at δ = 0, hence at every δ.
    """
    total = 0.0
    for m in mechanisms:
        if m.sample_rate != 1:
            raise ValueError(f"{m.name}: the pure accountant does not amplify by sampling (sample_rate must be 1)")
        if m.steps:
            total += math.inf if m.noise_multiplier == 0 else m.steps / m.noise_multiplier
    return float(total)


def parse_accountant(accountant: str, n_mechanisms: int) -> tuple[PartAccountant, ...] | None:
    """Per-mechanism accountants of a sequential accountant name, or None for joint accountants.

    Names: "rdp" (sum of RDP curves over the given orders, one conversion), "pure" (pure ε-DP
    composition of Laplace / exponential mechanisms at δ = 0, `pure_epsilon`), "rdp-order-search"
    (the same with a continuous order search inside [min(orders), max(orders)]), or
    "<a>+<b>+… (sequential)" with one part per mechanism among "rdp", "moments", "zcdp", "gaussian":
    each mechanism is accounted alone at δ/n (n = number of mechanisms) and the ε add up (basic
    sequential composition). "moments" always uses λ = 1…255 and the classic conversion (Abadi et al.);
    "zcdp" (ρ = steps/(2σ²)) and "gaussian" (one release) need q = 1.
    """
    if accountant in ("rdp", "rdp-order-search", PURE_ACCOUNTANT):
        return None
    if not accountant.endswith(_SEQUENTIAL_SUFFIX):
        raise ValueError(
            f"accountant must be 'rdp', 'rdp-order-search', '{PURE_ACCOUNTANT}' or '<part>+…{_SEQUENTIAL_SUFFIX}', "
            f"got {accountant!r}"
        )
    parts = tuple(accountant[: -len(_SEQUENTIAL_SUFFIX)].split("+"))
    for part in parts:
        _check_choice(part, PART_ACCOUNTANTS, "accountant part")
    if len(parts) != n_mechanisms:
        raise ValueError(f"accountant {accountant!r} names {len(parts)} parts for {n_mechanisms} mechanisms")
    return parts  # type: ignore[return-value]


def _part_epsilon(
    part: PartAccountant,
    mechanism: GaussianMechanismLike,
    delta: float,
    conversion: Conversion,
    orders: Sequence[float],
    adjacency: Adjacency,
) -> float:
    """ε of one mechanism accounted alone by `part` at `delta`."""
    if part == "rdp":
        return epsilon([mechanism], delta, conversion, orders, adjacency)[0]
    if getattr(mechanism, "sampling", "poisson") != "poisson" and mechanism.sample_rate < 1:
        raise ValueError(f"{mechanism.name}: accountant part {part!r} supports only Poisson sampling")
    if adjacency != "add/remove-one" and mechanism.sample_rate < 1:
        raise ValueError(f"{mechanism.name}: accountant part {part!r} supports replace-one only for q = 1")
    if part == "moments":
        return moments_accountant_epsilon(mechanism.noise_multiplier, mechanism.sample_rate, mechanism.steps, delta)[0]
    if mechanism.sample_rate != 1:
        raise ValueError(f"{mechanism.name}: accountant part {part!r} needs sample_rate 1")
    if mechanism.steps == 0:
        return 0.0
    if mechanism.noise_multiplier == 0:
        return math.inf
    if part == "zcdp":
        return zcdp_epsilon(mechanism.steps / (2 * mechanism.noise_multiplier**2), delta)
    if mechanism.steps != 1:
        raise ValueError(f"{mechanism.name}: accountant part 'gaussian' covers a single release (steps 1)")
    return gaussian_epsilon(mechanism.noise_multiplier, delta)


def account(
    mechanisms: Sequence[GaussianMechanismLike],
    delta: float,
    accountant: str = "rdp",
    conversion: Conversion = "improved",
    orders: Sequence[float] = DEFAULT_ORDERS,
    adjacency: Adjacency = "add/remove-one",
) -> tuple[float, float | None]:
    """(ε, optimal order or None) of `mechanisms` under the named accountant (see `parse_accountant`)."""
    _check_delta(delta)
    _check_choice(conversion, CONVERSIONS, "conversion")
    _check_choice(adjacency, ADJACENCIES, "adjacency")
    parts = parse_accountant(accountant, len(mechanisms))
    if accountant == PURE_ACCOUNTANT:
        return pure_epsilon(mechanisms), None
    if accountant == "rdp":
        return epsilon(mechanisms, delta, conversion, orders, adjacency)
    if accountant == "rdp-order-search":
        bounds = tuple(float(a) for a in orders)
        if not bounds:
            raise ValueError("orders must hold the order-search bounds, got an empty sequence")
        return epsilon_order_search(mechanisms, delta, conversion, (min(bounds), max(bounds)), adjacency)
    assert parts is not None
    share = delta / len(parts)
    total = sum(_part_epsilon(p, m, share, conversion, orders, adjacency) for p, m in zip(parts, mechanisms))
    return float(total), None


# ----------------------------------------------------------------------------------------- calibration


def solve_noise_multiplier(
    epsilon_of_sigma: Callable[[float], float],
    target_epsilon: float,
    bracket: tuple[float, float] = (2.0**-8, 2.0**16),
    rtol: float = 1e-10,
    floor: float | None = None,
) -> float:
    """The smallest σ (to `rtol`) with epsilon_of_sigma(σ) <= target, by Brent's method in log σ, rounded up.

    The one noise calibration every method uses. ε must decrease in σ. The root is rounded up until
    ε(σ) <= target holds exactly, so a run calibrated with it never overspends (no tolerance). `floor`: the
    smallest σ wanted (a configured one), returned as it is when it meets the target, else the search's lower
    end. Raises ValueError if the target cannot be reached inside `bracket`: too small for the largest σ (e.g.
    the classic conversion never goes below log(1/δ)/(α_max − 1)) or too large for the smallest.
    """
    if floor is not None:
        if epsilon_of_sigma(floor) <= target_epsilon:
            return floor
        bracket = (max(floor, bracket[0]), bracket[1])
    if not (target_epsilon > 0 and math.isfinite(target_epsilon)):
        raise ValueError(f"target_epsilon must be a finite number > 0, got {target_epsilon}")
    low, high = math.log(bracket[0]), math.log(bracket[1])

    def gap(log_sigma: float) -> float:
        return epsilon_of_sigma(math.exp(log_sigma)) - target_epsilon

    gap_high = gap(high)
    if gap_high > 0:
        raise ValueError(
            f"target_epsilon={target_epsilon} is unreachable: even noise_multiplier={bracket[1]:g} gives "
            f"epsilon={gap_high + target_epsilon:.6g}"
        )
    gap_low = gap(low)
    if gap_low < 0:
        raise ValueError(
            f"target_epsilon={target_epsilon} is unreachable from below: noise_multiplier={bracket[0]:g} "
            f"already gives epsilon={gap_low + target_epsilon:.6g}"
        )
    log_sigma = optimize.brentq(gap, low, high, xtol=1e-12, rtol=rtol)
    step = max(1e-12, rtol)
    while gap(log_sigma) > 0:  # round up: never return a σ whose ε exceeds the target
        log_sigma = min(high, log_sigma + step)
        step *= 2
    return math.exp(log_sigma)


def round_up_noise(epsilon_of_sigma: Callable[[float], float], sigma: float, target_epsilon: float) -> float:
    """`sigma`, raised by relative steps of 1e-12, 2e-12, 4e-12, ... until epsilon_of_sigma(σ) <= target: for a σ
    derived from a calibrated one (PriVAE's κσ), whose own ε may round above the target."""
    step = 1e-12
    while epsilon_of_sigma(sigma) > target_epsilon:
        sigma *= 1 + step
        step *= 2
        if step > 1:
            raise RuntimeError(f"could not round sigma={sigma} below the target epsilon {target_epsilon}")
    return sigma


def calibrate_noise(
    target_epsilon: float,
    delta: float,
    sample_rate: float,
    steps: int,
    conversion: Conversion = "improved",
    orders: Sequence[float] = DEFAULT_ORDERS,
    adjacency: Adjacency = "add/remove-one",
) -> float:
    """Smallest noise multiplier σ (rounded up) of `steps` q-subsampled Gaussians whose ε at `delta` is
    at most `target_epsilon`.

    The inverse of `epsilon` for one mechanism: ε is continuous and strictly decreasing in σ.
    """
    _check_mechanism_args(1.0, sample_rate, steps)
    if steps == 0:
        raise ValueError("steps must be >= 1 to calibrate a noise multiplier")
    _check_delta(delta)
    curve = _RDP_CURVES[_check_choice(adjacency, ADJACENCIES, "adjacency")]

    def eps_of(sigma: float) -> float:
        return rdp_to_dp(orders, curve(sigma, sample_rate, steps, orders), delta, conversion)[0]

    return solve_noise_multiplier(eps_of, target_epsilon)
