"""Generated datasets: the pinwheel of PriVAE's clustering task and P3GM Fig. 6's two Gaussians."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dpvae.data.store import Prepared, Split, holdout_split

# Mathieu et al.'s scripts/gen_pinwheel_small.sh: pinwheel(0.1, 0.3, 4, 100, 0.25), once for train, once for test.
PINWHEEL_OPTIONS = {"radial_std": 0.1, "tangential_std": 0.3, "num_classes": 4, "num_per_class": 100, "rate": 0.25}
TWO_GAUSSIANS_PER_CLASS = 10_000


def pinwheel(
    rng: np.random.Generator,
    *,
    radial_std: float,
    tangential_std: float,
    num_classes: int,
    num_per_class: int,
    rate: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Johnson et al.'s pinwheel with the behaviour of the MATLAB ``pinwheel.m`` Mathieu et al. ran.

    MATLAB scales the *first* coordinate by ``tangential_std`` and the second by ``radial_std`` (the
    reverse of the usual Python port): u = 1 + tangential_std·e₁, v = radial_std·e₂. Class k (0-based,
    records grouped by class) has base angle 2πk/K; with a = 2πk/K + rate·exp(u) the point is the row
    vector (u, v) times [[cos a, -sin a], [sin a, cos a]] = (u cos a + v sin a, -u sin a + v cos a).
    Returns float64 points (N, 2) and int64 classes (N,).
    """
    if min(num_classes, num_per_class) < 1 or min(radial_std, tangential_std) < 0:
        raise ValueError("num_classes and num_per_class must be >= 1 and the standard deviations >= 0")
    n_points = num_classes * num_per_class
    noise = rng.standard_normal((2, n_points))  # MATLAB randn([N 2]) fills column 1, then column 2
    u = 1.0 + tangential_std * noise[0]
    v = radial_std * noise[1]
    classes = np.repeat(np.arange(num_classes), num_per_class)
    angle = 2 * np.pi * classes / num_classes + rate * np.exp(u)
    points = np.column_stack([u * np.cos(angle) + v * np.sin(angle), -u * np.sin(angle) + v * np.cos(angle)])
    return points, classes.astype(np.int64)


def build_pinwheel(raw_dir: Path | None, seed: int) -> Prepared:
    """400 train and 400 test points (4 classes × 100), two successive draws from ``default_rng(seed)``."""
    rng = np.random.default_rng(seed)
    draws = [pinwheel(rng, **PINWHEEL_OPTIONS) for _ in ("train", "test")]
    splits = [Split(points.astype(np.float32), classes) for points, classes in draws]
    meta = {
        "scaling": "none (raw generator output)",
        "split": {"rule": "independent draws: train first, then test, from numpy default_rng(seed)", "seed": seed},
        "label_names": [f"arm {k}" for k in range(PINWHEEL_OPTIONS["num_classes"])],
        "options": {
            **PINWHEEL_OPTIONS,
            "generator": "MATLAB pinwheel.m behaviour (first coordinate scaled by tangential_std)",
        },
    }
    return Prepared(splits[0], splits[1], meta)


def two_gaussians(rng: np.random.Generator, dim: int, n_per_class: int) -> tuple[np.ndarray, np.ndarray]:
    """Class 0 ~ N(-1, I_dim), class 1 ~ N(+1, I_dim), ``n_per_class`` each (class 0 rows first)."""
    if dim < 1 or n_per_class < 1:
        raise ValueError(f"dim and n_per_class must be >= 1, got dim={dim}, n_per_class={n_per_class}")
    classes = np.repeat(np.arange(2), n_per_class)
    points = rng.standard_normal((2 * n_per_class, dim)) + (2.0 * classes - 1.0)[:, None]
    return points, classes.astype(np.int64)


def build_two_gaussians(
    raw_dir: Path | None, seed: int, *, dim: int, n_per_class: int = TWO_GAUSSIANS_PER_CLASS
) -> Prepared:
    """P3GM Fig. 6 data in ``dim`` dimensions: 2 × ``n_per_class`` points, seeded 90/10 holdout.

    The points come from a child stream of ``SeedSequence(seed)``, independent of the split's stream.
    """
    rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])
    points, classes = two_gaussians(rng, dim, n_per_class)
    train, test, split_meta = holdout_split(points.astype(np.float32), classes, seed=seed)
    meta = {
        "scaling": "none",
        "split": split_meta,
        "label_names": ["N(-1, I)", "N(+1, I)"],
        "positive_class": 1,
        "options": {"dim": dim, "n_per_class": n_per_class},
    }
    return Prepared(train, test, meta)
