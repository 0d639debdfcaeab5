"""The noise of directly released statistics: seeded floating-point draws, or exact discrete samplers in a release.

A replication run (seeded) draws Laplace and Gaussian noise in floating point from its `numpy.random.Generator`, as
it always has (its recorded results repeat byte for byte). A release (`randomness.is_secret`) adds integer noise
from OpenDP's exact samplers, which draw from the operating system's entropy (the generator is not used), to an
integer statistic, so that no low-order bit of a released value depends on anything but that integer sum
(Mironov 2012; Jin et al. 2022):

* **counts** (integer statistics): discrete Laplace with the same scale b (ε = Δ/b, as the continuous mechanism)
  or discrete Gaussian with the same σ (Canonne, Kamath & Steinke 2020, Thm. 14: ½(Δ/σ)²-zCDP, so the RDP curve
  α·Δ²/(2σ²) the ledgers use is unchanged);
* **real-valued sums**: the statistic v ∈ R^M is rounded to the grid γ = 2^-k (q = round(v/γ)). Every coordinate
  moves by at most 1/2 in rounding, so for neighbours ‖q − q'‖₂ ≤ ‖v − v'‖₂/γ + √M (OpenDP's own bound for its
  float Gaussian) under either adjacency: the integer sensitivity is Δ_int = Δ/γ + √M, Δ the mechanism's recorded
  sensitivity. The discrete Gaussian's σ on the grid is the multiplier times Δ_int, so the noise is raised by the
  rounding's share (at most `ROUNDING_SHARE`) and the ledger's multiplier σ/Δ still bounds std/sensitivity under
  every adjacency whose sensitivity is ≥ Δ (the recorded values are the smallest of each mechanism). γ·(q + Y) is
  exact in float64 while |q + Y| < 2^53 (checked).

What a release used is a `Sampler` in the mechanism's ledger record (`Mechanism.sampler`): the sampler, the grid,
the sensitivity and the noise scale on the integer scale. The statistic itself is computed in floating point as
before (its rounding error is part of the statistic, as for every mechanism here).
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

Kind = Literal["discrete Laplace", "discrete Gaussian"]
#: the largest share by which rounding to the grid may raise the sensitivity (and so the noise): 2^-10
ROUNDING_SHARE = 2.0**-10
#: where the samplers come from (`envs/requirements.txt` pins the version)
SOURCE = "OpenDP make_laplace / make_gaussian on i64 vectors (exact samplers, OS entropy)"
_EXACT = 2.0**53  # float64 holds every integer below this
CHUNK = 8192  # draws per OpenDP call when a release's draws are spread over the cores


@dataclass(frozen=True)
class Sampler:
    """How one mechanism's noise was drawn in a release: `kind`, the grid γ (1 for counts), the `sensitivity` on
    the integer scale (L1 for Laplace, L2 for Gaussian; the mechanism's recorded adjacency, rounding included) and
    the noise `scale` there (Laplace b, Gaussian σ)."""

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


def laplace_noise(shape: tuple[int, ...], scale: float, *, secret: bool, rng: np.random.Generator) -> np.ndarray:
    """Laplace(`scale`) noise for counts: `rng`'s float draw (seeded), OpenDP's discrete Laplace (secret)."""
    if not secret:
        return rng.laplace(0.0, scale, size=shape)
    return _opendp("laplace", math.prod(shape), scale).reshape(shape).astype(np.float64)


def gaussian_noise(
    shape: tuple[int, ...], std: float, *, secret: bool, rng: np.random.Generator | None, grid: float = 1.0
) -> np.ndarray:
    """N(0, std²) noise: `rng`'s float draw (seeded), or γ·(discrete Gaussian of σ = std/γ) on the grid γ (secret,
    no generator needed)."""
    if not secret:
        assert rng is not None, "a seeded draw needs its generator"
        return rng.normal(0.0, 1.0, size=shape) * std
    return grid * _opendp("gaussian", math.prod(shape), std / grid).reshape(shape).astype(np.float64)


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
    return sampler.grid * (counts + _opendp("gaussian", values.size, sampler.scale).reshape(values.shape))


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


def _opendp(kind: str, size: int, scale: float) -> np.ndarray:
    """`size` draws of OpenDP's discrete Laplace or Gaussian of `scale` around 0 (int64; zeros at scale 0, no noise),
    in chunks of `CHUNK` on a thread per core (OpenDP's exact samplers take 10-50 µs a draw; its ctypes calls release
    the GIL, and the draws are independent whichever thread makes them)."""
    if size == 0 or scale == 0:
        return np.zeros(size, dtype=np.int64)
    import opendp.prelude as dp

    dp.enable_features("contrib")
    laplace = kind == "laplace"
    metric = (dp.l1_distance if laplace else dp.l2_distance)(T="i64")
    make = dp.m.make_laplace if laplace else dp.m.make_gaussian

    def draws(n: int) -> np.ndarray:  # a measurement per call: nothing shared between threads
        measurement = make(dp.vector_domain(dp.atom_domain(T="i64")), metric, scale=float(scale))
        return np.asarray(measurement([0] * n), dtype=np.int64)

    chunks = [min(CHUNK, size - start) for start in range(0, size, CHUNK)]
    workers = min(len(chunks), len(os.sched_getaffinity(0)))
    if workers == 1:
        return draws(size)
    with ThreadPoolExecutor(workers) as pool:
        return np.concatenate(list(pool.map(draws, chunks)))
