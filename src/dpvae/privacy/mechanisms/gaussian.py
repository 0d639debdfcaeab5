"""The Gaussian mechanism, l2 row clipping and the argument checks the other mechanisms share."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from dpvae import samplers
from dpvae.privacy.ledger import Mechanism


def check_generator(rng: object) -> np.random.Generator:
    """Return `rng` if it is a `numpy.random.Generator`; all randomness must flow through one."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    return rng


def check_noise_multiplier(noise_multiplier: float, name: str = "noise_multiplier") -> float:
    """Return `noise_multiplier` as a float if it is finite and >= 0 (0 = no noise, no privacy)."""
    if not (np.isfinite(noise_multiplier) and noise_multiplier >= 0):
        raise ValueError(f"{name} must be a finite number >= 0, got {noise_multiplier}")
    return float(noise_multiplier)


def check_count(value: int, name: str, minimum: int) -> int:
    """Return `value` if it is an integer >= `minimum`."""
    if isinstance(value, bool) or int(value) != value or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value}")
    return int(value)


def check_matrix(x: ArrayLike, name: str) -> np.ndarray:
    """Return `x` as a finite float64 matrix with at least one row."""
    array = np.asarray(x, dtype=np.float64)
    if array.ndim != 2 or array.shape[0] == 0 or array.shape[1] == 0:
        raise ValueError(f"{name} must be a non-empty 2-D array (rows = records), got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return array


def clip_rows(x: np.ndarray, max_norm: float = 1.0) -> np.ndarray:
    """Scale every row whose l2 norm exceeds `max_norm` down to norm `max_norm`; other rows are kept."""
    if not max_norm > 0:
        raise ValueError(f"max_norm must be > 0, got {max_norm}")
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x * np.minimum(1.0, max_norm / np.maximum(norms, np.finfo(np.float64).tiny))


def gaussian_noise(shape: tuple[int, ...], std: float, rng: np.random.Generator) -> np.ndarray:
    """I.i.d. N(0, std²) noise of the given shape (std 0 gives zeros but still advances `rng`)."""
    return rng.normal(0.0, 1.0, size=shape) * std


def gaussian_mechanism(
    value: ArrayLike,
    sensitivity: float,
    noise_multiplier: float,
    rng: np.random.Generator,
    *,
    name: str = "gaussian",
    secret: bool = False,
) -> tuple[np.ndarray, Mechanism]:
    """Release `value` + i.i.d. N(0, (noise_multiplier · sensitivity)²) noise on every entry (`secret`: a release,
    the value on its grid plus the discrete Gaussian, `dpvae.samplers`).

    `sensitivity` is the l2-sensitivity of `value` (as a flat vector) under the caller's adjacency; the
    record then carries noise_multiplier = noise std / sensitivity, which is all the accountant needs.
    """
    exact = np.asarray(value, dtype=np.float64)
    record = gaussian_record(name, noise_multiplier, sensitivity, exact.size if secret else None)
    sigma, rng = record.noise_multiplier, check_generator(rng)
    return samplers.gaussian(exact, sigma, float(sensitivity), secret=secret, rng=rng), record


def gaussian_record(name: str, noise_multiplier: float, sensitivity: float, entries: int | None = None) -> Mechanism:
    """The ledger record of one Gaussian release (`gaussian_mechanism`'s), known before the release: planned
    ledgers build the same record from the same arguments (`entries`: a release's, of that many values, whose
    discrete sampler is recorded)."""
    if not (np.isfinite(sensitivity) and sensitivity > 0):
        raise ValueError(f"sensitivity must be a finite number > 0, got {sensitivity}")
    sigma = check_noise_multiplier(noise_multiplier)
    sampler = None if entries is None else samplers.gaussian_sampler(sigma, float(sensitivity), entries)
    return Mechanism(name, sigma, sensitivity=float(sensitivity), sampler=sampler)


def dp_mean(
    x: ArrayLike,
    clip: float,
    noise_multiplier: float,
    rng: np.random.Generator,
    *,
    name: str = "dp_mean",
    secret: bool = False,
) -> tuple[np.ndarray, Mechanism]:
    """Release the mean of the rows clipped to l2 norm `clip`: (Σ_i clip(x_i) + N(0, (σ·clip)² I)) / N.

    The sum's sensitivity is `clip` under add/remove-one and 2·`clip` under replace-one (the record
    carries the add/remove value); N, the number of rows, is treated as public (as N in DP-SGD's q = B/N;
    under replace-one it is). `clip` must not depend on the data (e.g. √d for features in [0, 1]).
    """
    rows = check_matrix(x, "x")
    clipped = clip_rows(rows, clip)
    noisy_sum, record = gaussian_mechanism(clipped.sum(axis=0), clip, noise_multiplier, rng, name=name, secret=secret)
    return noisy_sum / rows.shape[0], record
