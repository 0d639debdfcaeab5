"""The noise of directly released statistics: seeded floating-point draws, or exact discrete samplers in a release.

A replication run (seeded) draws Laplace and Gaussian noise in floating point from its `numpy.random.Generator`, as
it always has (its recorded results repeat byte for byte). A release (`randomness.is_secret`) adds integer noise to
an integer statistic, so that no low-order bit of a released value depends on anything but that integer sum
(Mironov 2012; Jin et al. 2022). The noise comes from Canonne, Kamath & Steinke's exact samplers (NeurIPS 2020,
Algorithms 1-3: Bernoulli(exp(−γ)) for rational γ by von Neumann's series, the discrete Laplace, the discrete
Gaussian by rejection from it), here in vectorised int64 arithmetic (Python integers for the far tail) on uniform
integers from the mechanism's generator (numpy's bounded integers are exact): in a release that generator is one
of the run's secret streams (`dpvae.randomness`: keyed by the key that is never written, so a `--seed-file` release
repeats and a planted leak of the key is caught by the replay adversary). OpenDP's own samplers, which read the OS's
entropy (the tests' reference), take 15-50 µs a draw: over 5 % of a PrivBayes or P3GM run on the papers' data.

* **counts** (integer statistics): discrete Laplace with scale b' ≥ b (b rounded up to a multiple of 2^-20: ε ≤ Δ/b,
  as the continuous mechanism) or discrete Gaussian with σ' ≥ σ (σ² rounded up to c·t/L, `_gaussian_parameters`;
  CKS Thm. 14: ½(Δ/σ)²-zCDP, so the RDP curve α·Δ²/(2σ²) the ledgers use still bounds it);
* **real-valued sums**: the statistic v ∈ R^M is rounded to the grid γ = 2^-k (q = round(v/γ)). Every coordinate
  moves by at most 1/2 in rounding, so for neighbours ‖q − q'‖₂ ≤ ‖v − v'‖₂/γ + √M (OpenDP's bound for its float
  Gaussian) under either adjacency: the integer sensitivity is Δ_int = Δ/γ + √M, Δ the mechanism's recorded
  sensitivity. The discrete Gaussian's σ on the grid is the multiplier times Δ_int, so the noise is raised by the
  rounding's share (γ√M/Δ: at most `ROUNDING_SHARE`, unless σ on that grid would pass `MAX_SCALE`) and the ledger's
  multiplier σ/Δ still bounds std/sensitivity under every adjacency whose sensitivity is ≥ Δ (the recorded values
  are the smallest of each mechanism). γ·(q + Y) is exact in float64 while |q + Y| < 2^53 (checked).

What a release used is a `Sampler` in the mechanism's ledger record (`Mechanism.sampler`): the sampler, the grid,
the sensitivity and the noise scale (a lower bound of the one drawn) on the integer scale. The statistic itself is
computed in floating point as before (its rounding error is part of the statistic, as for every mechanism here).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Any, Literal

import numpy as np

Kind = Literal["discrete Laplace", "discrete Gaussian"]
#: the largest share by which rounding to the grid may raise the sensitivity (and so the noise): 2^-10
ROUNDING_SHARE = 2.0**-10
#: how the samplers draw
SOURCE = "Canonne-Kamath-Steinke 2020 exact samplers (Alg. 1-3), int64 arithmetic, the run's secret stream"
#: the largest discrete Gaussian σ on a grid: a finer grid is not taken where σ on it would pass this
MAX_SCALE = 2.0**24
_EXACT = 2.0**53  # float64 holds every integer below this
_LAPLACE_DENOMINATOR = 2**20  # a discrete Laplace scale is rounded up to a multiple of 2^-20
_GAUSSIAN_LIFT = 20  # at most 2^20: the denominator L of σ'²/t = c/L (`_gaussian_parameters`)


@dataclass(frozen=True)
class Sampler:
    """How one mechanism's noise was drawn in a release: `kind`, the grid γ (1 for counts), the `sensitivity` on
    the integer scale (L1 for Laplace, L2 for Gaussian; the mechanism's recorded adjacency, rounding included) and
    the noise `scale` there (Laplace b, Gaussian σ; the one drawn is this rounded up to what the sampler takes
    exactly, `_exact`)."""

    kind: Kind
    grid: float
    sensitivity: float
    scale: float

    def to_dict(self) -> dict[str, Any]:
        return {"source": SOURCE, **asdict(self)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Sampler:
        if set(data) != {"source", "kind", "grid", "sensitivity", "scale"} or data["source"] != SOURCE:
            raise ValueError(f"a sampler record must be {sorted(['source', 'kind', 'grid', 'sensitivity', 'scale'])} "
                             f"from {SOURCE!r}, got {data}")  # fmt: skip
        return cls(data["kind"], float(data["grid"]), float(data["sensitivity"]), float(data["scale"]))


def grid_for(sensitivity: float, entries: int) -> float:
    """γ = 2^-k, the coarsest power of two whose rounding term γ√M is at most `ROUNDING_SHARE` of Δ."""
    return 2.0 ** math.floor(math.log2(ROUNDING_SHARE * sensitivity / math.sqrt(entries)))


def laplace_sampler(scale: float, sensitivity: float) -> Sampler:
    """Discrete Laplace of scale b on counts (integer L1 sensitivity Δ: ε = Δ/b, as the continuous one)."""
    return Sampler("discrete Laplace", 1.0, float(sensitivity), float(scale))


def gaussian_sampler(
    multiplier: float, sensitivity: float, entries: int, integer: bool = False, under: float | None = None
) -> Sampler:
    """Discrete Gaussian for a statistic of `entries` values with L2 sensitivity Δ and noise multiplier σ: on counts
    (`integer`) σ·Δ; else on the grid `grid_for(Δ, M)` with σ·(Δ/γ + √M) (module docstring). The record states the
    integer sensitivity under its own adjacency, whose value sensitivity is `under` (default Δ; `restated`)."""
    if integer:
        sampler = Sampler("discrete Gaussian", 1.0, float(sensitivity), multiplier * sensitivity)
    else:
        grid = grid_for(sensitivity, entries)
        while multiplier * (sensitivity / grid + math.sqrt(entries)) > MAX_SCALE and sensitivity / grid > 1:
            grid *= 2  # a larger rounding share, σ on the grid within the exact sampler's range
        on_grid = sensitivity / grid + math.sqrt(entries)
        sampler = Sampler("discrete Gaussian", grid, on_grid, multiplier * on_grid)
    return sampler if under is None else restated(sampler, sensitivity, under)


def restated(sampler: Sampler, sensitivity: float, under: float) -> Sampler:
    """The same noise stated under an adjacency whose value sensitivity is `under` (≥ the `sensitivity` it was set
    for): the rounding term Δ_int − Δ/γ kept (0 on counts), under/γ in place of Δ/γ."""
    if under < sensitivity:
        raise ValueError(f"the noise is set for sensitivity {sensitivity}; a record's cannot be below it ({under})")
    rounding = sampler.sensitivity - sensitivity / sampler.grid
    return Sampler(sampler.kind, sampler.grid, under / sampler.grid + rounding, sampler.scale)


def laplace_noise(
    shape: tuple[int, ...], scale: float, *, secret: bool, rng: np.random.Generator, pool: Pool | None = None
) -> np.ndarray:
    """Laplace(`scale`) noise for counts: `rng`'s float draw (seeded), the exact discrete Laplace (secret; from
    `pool` where the caller drew its releases' noise in one go)."""
    if not secret:
        return rng.laplace(0.0, scale, size=shape)
    if pool is not None:
        return pool.take(shape, scale)
    return _exact("laplace", math.prod(shape), scale, rng).reshape(shape).astype(np.float64)


class Pool:
    """Exact draws of one kind and scale made in one call and handed out in order: a release made of many small
    statistics (PrivBayes' tables) pays the samplers' per-call cost once. Draws are independent whichever release
    takes them; a pool that runs short draws more."""

    def __init__(self, kind: str, scale: float, size: int, rng: np.random.Generator) -> None:
        self.kind, self.scale, self.rng = kind, scale, rng
        self.draws = _exact(kind, size, scale, rng)

    def take(self, shape: tuple[int, ...], scale: float) -> np.ndarray:
        if scale != self.scale:
            raise ValueError(f"a pool of scale {self.scale} cannot serve scale {scale}")
        n = math.prod(shape)
        if n > self.draws.size:
            self.draws = np.concatenate([self.draws, _exact(self.kind, n - self.draws.size, self.scale, self.rng)])
        out, self.draws = self.draws[:n], self.draws[n:]
        return out.reshape(shape).astype(np.float64)


def gaussian_noise(
    shape: tuple[int, ...], std: float, *, secret: bool, rng: np.random.Generator, grid: float = 1.0
) -> np.ndarray:
    """N(0, std²) noise: `rng`'s float draw (seeded), or γ·(discrete Gaussian of σ = std/γ) on the grid γ (secret)."""
    if not secret:
        return rng.normal(0.0, 1.0, size=shape) * std
    return grid * _exact("gaussian", math.prod(shape), std / grid, rng).reshape(shape).astype(np.float64)


def laplace(
    values: np.ndarray, scale: float, sensitivity: float, *, secret: bool, rng: np.random.Generator
) -> np.ndarray:
    """`values` + Laplace(`scale`) noise; in a release `values` must be counts (integers) and the noise is discrete.
    `sensitivity` (L1) is the record's (`laplace_sampler`): the discrete draw does not change it."""
    values = np.asarray(values, dtype=np.float64)
    if secret:
        _check_integers(values, scale)
    return values + laplace_noise(values.shape, scale, secret=secret, rng=rng)


def gaussian(
    values: np.ndarray,
    multiplier: float,
    sensitivity: float,
    *,
    secret: bool,
    rng: np.random.Generator,
    integer: bool = False,
    entries: int | None = None,
) -> np.ndarray:
    """`values` + N(0, (σ·Δ)²) noise (seeded: exactly `rng.normal(0, 1, shape) * σΔ`); in a release the statistic
    is rounded to `gaussian_sampler`'s grid (counts, `integer`: kept) and gets its discrete Gaussian. `entries`: the
    size of one release whose sensitivity is Δ, where `values` holds several alike (default: all of them)."""
    values = np.asarray(values, dtype=np.float64)
    if not secret:
        return values + gaussian_noise(values.shape, multiplier * sensitivity, secret=False, rng=rng)
    sampler = gaussian_sampler(multiplier, sensitivity, values.size if entries is None else entries, integer)
    counts = on_grid(values, sampler.grid)
    _check_integers(counts, sampler.scale)
    return sampler.grid * (counts + _exact("gaussian", values.size, sampler.scale, rng).reshape(values.shape))


def on_grid(values: np.ndarray, grid: float) -> np.ndarray:
    """round(values / γ) (half to even): the integer statistic of a release on the grid γ."""
    return np.rint(np.asarray(values, dtype=np.float64) / grid)


def _check_integers(counts: np.ndarray, scale: float) -> None:
    """Refuse what the discrete samplers cannot take exactly: non-integers, or values whose noisy sum could leave
    float64's exact integers (beyond 2^53 less 64 noise scales)."""
    if not np.all(counts == np.rint(counts)):
        raise ValueError("a discrete sampler adds integer noise to integers: the statistic is not integer-valued")
    if counts.size and float(np.abs(counts).max()) + 64 * scale >= _EXACT:
        raise ValueError(f"the statistic on its grid reaches {np.abs(counts).max():.3g}: too large for exact noise")


# -- the exact samplers: Canonne, Kamath & Steinke (2020), Algorithms 1-3, in int64 arithmetic ---------------------


def _exact(kind: str, size: int, scale: float, rng: np.random.Generator) -> np.ndarray:
    """`size` draws (int64) of the discrete Laplace of scale ≥ `scale` (rounded up to a multiple of 2^-20) or the
    discrete Gaussian of σ ≥ `scale` (σ² rounded up to c·t/L, `_gaussian_parameters`); zeros at scale 0 (no noise)."""
    if size == 0 or scale == 0:
        return np.zeros(size, dtype=np.int64)
    if kind == "laplace":
        return _discrete_laplace(size, math.ceil(Fraction(scale) * _LAPLACE_DENOMINATOR), _LAPLACE_DENOMINATOR, rng)
    return _discrete_gaussian(size, *_gaussian_parameters(scale), rng)


def _bernoulli_exp_fraction(numerator: np.ndarray, denominator: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Bernoulli(exp(−γ)) for γ = numerator/denominator in [0, 1] (CKS Alg. 1, von Neumann): K ← 1; while
    Bernoulli(γ/K) succeeds, K ← K + 1; true where K is odd."""
    k = np.where(numerator == denominator, 2, 1)  # γ = 1: the first Bernoulli(γ/1) succeeds
    todo = np.arange(numerator.size)
    rounds = 2**62 // int(denominator.max(initial=1)) - 2  # K·denominator stays below 2^62
    while todo.size:
        rounds -= 1
        if rounds < 0:
            raise RuntimeError("the exact Bernoulli's denominator left int64")  # K ≥ 2^12 at most: p < 1/4096!
        success = rng.integers(0, denominator[todo] * k[todo]) < numerator[todo]
        todo = todo[success]
        k[todo] += 1
    return k % 2 == 1


def _bernoulli_exp(numerator: np.ndarray, denominator: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Bernoulli(exp(−γ)) for rational γ = numerator/denominator ≥ 0 (CKS Alg. 1): ⌊γ⌋ draws of Bernoulli(e^-1), all
    of which must succeed, then Bernoulli(exp(−(γ − ⌊γ⌋)))."""
    whole, rest = np.divmod(numerator, denominator)
    out = np.ones(numerator.shape, dtype=bool)
    todo = np.flatnonzero(whole > 0)
    while todo.size:
        ones = np.ones(todo.size, dtype=np.int64)
        out[todo] = _bernoulli_exp_fraction(ones, ones, rng)
        whole[todo] -= 1
        todo = todo[out[todo] & (whole[todo] > 0)]
    todo = np.flatnonzero(out)
    out[todo] = _bernoulli_exp_fraction(rest[todo], denominator[todo], rng)
    return out


def _geometric_exp_one(size: int, rng: np.random.Generator) -> np.ndarray:
    """V: the successes of Bernoulli(e^-1) before its first failure (P(V ≥ v) = e^-v)."""
    v = np.zeros(size, dtype=np.int64)
    todo = np.arange(size)
    while todo.size:
        ones = np.ones(todo.size, dtype=np.int64)
        success = _bernoulli_exp_fraction(ones, ones, rng)
        v[todo[success]] += 1
        todo = todo[success]
    return v


def _discrete_laplace(size: int, t: int, s: int, rng: np.random.Generator) -> np.ndarray:
    """`size` draws of the discrete Laplace of scale t/s, P(z) ∝ exp(−|z|·s/t) (CKS Alg. 2)."""
    out, todo = np.empty(size, dtype=np.int64), np.arange(size)
    while todo.size:
        n = todo.size
        scale = np.full(n, t, dtype=np.int64)
        u = rng.integers(0, t, size=n)
        keep = _bernoulli_exp_fraction(u, scale, rng)
        v = _geometric_exp_one(n, rng)
        if int(v.max()) >= (2**62 - t) // t:
            raise RuntimeError("the exact discrete Laplace left int64")  # V ≥ 2^62/t: probability exp(−2^62/t)
        y = (u + t * v) // s
        negative = rng.integers(0, 2, size=n) == 1
        keep &= ~(negative & (y == 0))
        out[todo[keep]] = np.where(negative, -y, y)[keep]
        todo = todo[~keep]
    return out


def _gaussian_parameters(sigma: float) -> tuple[int, int, int]:
    """(t, c, L) with σ'² = c·t/L ≥ σ²: t = ⌊σ⌋ + 1 (CKS's Laplace scale), L = 2^j so that |Y|·L stays below 2^31
    up to |Y| = 64·t, c = ⌈σ²·L/t⌉; then σ'²/t = c/L and the acceptance exponent (|Y|·L − c)² / (2·c·t·L) is a ratio
    of int64s (its denominator times von Neumann's K < 64 too)."""
    t = math.floor(sigma) + 1
    lift = 2 ** max(0, min(_GAUSSIAN_LIFT, 25 - t.bit_length()))
    c = math.ceil(Fraction(sigma) ** 2 * lift / t)
    if 2 * c * t * lift * 64 >= 2**62 or c >= 2**31:
        raise ValueError(f"the exact discrete Gaussian takes σ below about 2^27, got {sigma:.3g}")
    return t, c, lift


def _discrete_gaussian(size: int, t: int, c: int, lift: int, rng: np.random.Generator) -> np.ndarray:
    """`size` draws of the discrete Gaussian of σ² = c·t/L (CKS Alg. 3): Y ~ DLap(t), accepted with probability
    exp(−(|Y| − σ²/t)²/(2σ²)); an |Y|·L beyond int64's safe range (probability < e^-64) is handled in Python ints."""
    out, todo = np.empty(size, dtype=np.int64), np.arange(size)
    denominator = 2 * c * t * lift
    while todo.size:
        y = _discrete_laplace(todo.size, t, 1, rng)
        far = np.abs(y) >= 2**31 // lift
        gap = np.abs(np.where(far, 0, y)) * lift - c
        keep = _bernoulli_exp(gap * gap, np.full(y.size, denominator, dtype=np.int64), rng)
        for i in np.flatnonzero(far):
            keep[i] = _bernoulli_exp_big((abs(int(y[i])) * lift - c) ** 2, denominator, rng)
        out[todo[keep]] = y[keep]
        todo = todo[~keep]
    return out


def _bernoulli_exp_big(numerator: int, denominator: int, rng: np.random.Generator) -> bool:
    """Bernoulli(exp(−numerator/denominator)) in Python integers (CKS Alg. 1): the rare far tail."""
    whole, rest = divmod(numerator, denominator)
    for _ in range(whole):
        if not _von_neumann_big(1, 1, rng):
            return False
    return _von_neumann_big(rest, denominator, rng)


def _von_neumann_big(numerator: int, denominator: int, rng: np.random.Generator) -> bool:
    k = 1
    while _below_big(denominator * k, rng) < numerator:
        k += 1
    return k % 2 == 1


def _below_big(high: int, rng: np.random.Generator) -> int:
    """An exact uniform integer in [0, high) of any size: 64-bit words, rejected at or above the largest multiple."""
    words = -(-high.bit_length() // 64)
    limit = (2 ** (64 * words) // high) * high
    while True:
        value = int.from_bytes(rng.bytes(8 * words), "little")
        if value < limit:
            return value % high
