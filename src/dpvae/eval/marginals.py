"""2-way marginal histograms and their total-variation distance (P3GM Table VIII; docs/papers.md §3.3).

Pure functions behind the `marginals_2way` and `marginals_2way_public` metrics (see `marginals_2way` for the
notebook's binning and the two switches); no registry import, so any metric module can import them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from dpvae.params import MetricOptions, param

Binning = Literal["clipped", "notebook"]
BINNINGS: tuple[str, ...] = ("clipped", "notebook")


@dataclass(frozen=True)
class Marginals2WayOptions(MetricOptions):
    edges: int = param(5, "linearly spaced bin edges per column on the real training data's [min, max]", minimum=2)
    binning: Binning = param(
        "clipped",
        "clipped: edges-1 intervals, out-of-range values clipped; notebook: "
        "show.ipynb's digitize(x, edges) - 1 with the -1 wrap",
    )
    label_columns: Literal["onehot", "single", "none"] = param(
        "onehot", "how the label enters the columns: one-hot (P3GM's data layout), one integer column, or not at all"
    )


def n_label_classes(ctx: Any) -> int:
    names = ctx.data.meta.get("label_names")
    return len(names) if names else int(max(ctx.data.train.y.max(), ctx.data.test.y.max())) + 1


def bin_codes(
    values: np.ndarray, low: np.ndarray, high: np.ndarray, edges: int = 5, binning: Binning = "clipped"
) -> tuple[np.ndarray, int]:
    """Cell index of every value [N, d] per column, and the number of cells per column.

    `low`/`high` [d] are the reference (real training) data's column minima and maxima. A constant
    column (low == high) puts every value equal to it in the last cell, like numpy's digitize would.
    """
    if binning not in BINNINGS:
        raise ValueError(f"binning must be one of {BINNINGS}, got {binning!r}")
    if edges < 2:
        raise ValueError(f"edges must be >= 2, got {edges}")
    values = np.asarray(values, dtype=np.float64)
    fractions = np.linspace(0.0, 1.0, edges)
    grid = low[None, :] + fractions[:, None] * (high - low)[None, :]  # [edges, d]
    # digitize per column: number of edges <= value (right=False), minus one
    codes = (values[:, None, :] >= grid[None, :, :]).sum(axis=1) - 1  # [N, d] in -1..edges-1
    if binning == "notebook":
        return np.where(codes < 0, edges - 1, codes), edges  # -1 wraps to the last cell
    return np.clip(codes, 0, edges - 2), edges - 1


def _onehot(codes: np.ndarray, cells: int) -> np.ndarray:
    """[N, d·cells] indicator matrix of the cells (float32 counts are exact up to 2^24 records)."""
    n, d = codes.shape
    onehot = np.zeros((n, d * cells), dtype=np.float32)
    onehot[np.arange(n)[:, None], np.arange(d)[None, :] * cells + codes] = 1.0
    return onehot


def tvd_2way(real: np.ndarray, synthetic: np.ndarray, edges: int = 5, binning: Binning = "clipped") -> float:
    """Mean over all ordered column pairs (self-pairs included) of ½·L1 between the 2-way histograms.

    Bins come from `real`'s column ranges (docs/papers.md §3.3); `real` [N, d], `synthetic` [M, d]. All
    pairs' joint counts are one indicator-matrix product (blocks of 128 columns bound the memory).
    """
    real, synthetic = np.asarray(real, dtype=np.float64), np.asarray(synthetic, dtype=np.float64)
    if real.ndim != 2 or synthetic.ndim != 2 or real.shape[1] != synthetic.shape[1]:
        raise ValueError(f"real and synthetic must be [N, d] with the same d, got {real.shape} and {synthetic.shape}")
    if not len(real) or not len(synthetic):
        raise ValueError("real and synthetic must hold at least one record each")
    low, high = real.min(axis=0), real.max(axis=0)
    real_codes, cells = bin_codes(real, low, high, edges, binning)
    synthetic_codes, _ = bin_codes(synthetic, low, high, edges, binning)
    (r, nr), (s, ns) = (_onehot(real_codes, cells), len(real)), (_onehot(synthetic_codes, cells), len(synthetic))
    d, total = real.shape[1], 0.0
    for start in range(0, d * cells, 128 * cells):
        block = slice(start, min(d * cells, start + 128 * cells))
        joint = (r[:, block].T @ r).astype(np.float64) / nr - (s[:, block].T @ s).astype(np.float64) / ns
        total += float(np.abs(joint).sum())
    return 0.5 * total / (d * d)


def data_matrix(x: np.ndarray, y: np.ndarray, n_classes: int, label_columns: str = "onehot") -> np.ndarray:
    """Records as P3GM's data arrays: flattened features, then the label (one-hot, one column or none)."""
    flat = np.asarray(x, dtype=np.float64).reshape(len(x), -1)
    if label_columns == "none":
        return flat
    if label_columns == "single":
        return np.column_stack([flat, np.asarray(y, dtype=np.float64)])
    return np.column_stack([flat, np.eye(n_classes)[np.asarray(y, dtype=np.int64)]])
