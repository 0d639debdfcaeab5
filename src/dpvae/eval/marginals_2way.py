"""Average total-variation distance of all 2-way marginals (P3GM Table VIII; PAPERS.md §3.3).

The reference notebook (`show.ipynb`) bins every column with 5 linearly spaced *edges* on the real
training data's [min, max] and compares 5×5 joint histograms of **all ordered pairs of columns,
including a column with itself**; TV = ½·L1 between the normalised real and synthetic histograms,
averaged over the pairs. Its binning is `digitize(x, edges) − 1`: four intervals [min, max) get 0..3,
values ≥ max get 4, and synthetic values below min get −1, which indexes (wraps to) the last cell.

Two binnings, one switch:

* ``clipped`` (default, the evident intent): the four equal-width intervals between the five edges, the
  maximum in the last one, synthetic values outside [min, max] clipped into the first/last interval.
* ``notebook``: the notebook's cells exactly, with the −1 wrap (values below min share the ≥ max cell).

The data matrix is the features plus the label as one-hot columns (the layout of P3GM's data arrays,
which the notebook binned), unless `label_columns` says otherwise. `tvd_2way` is the public function the
P3GM reconstruction variant (`marginals_2way_public`) reuses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from dpvae.eval.base import EvalContext, Rows
from dpvae.eval.registry import register_metric
from dpvae.params import MetricOptions, param

Binning = Literal["clipped", "notebook"]
BINNINGS: tuple[str, ...] = ("clipped", "notebook")


@dataclass(frozen=True)
class Marginals2WayOptions(MetricOptions):
    edges: int = param(5, "linearly spaced bin edges per column on the real training data's [min, max]", minimum=2)
    binning: Binning = param("clipped", "clipped: edges-1 intervals, out-of-range values clipped; notebook: "
                                        "show.ipynb's digitize(x, edges) - 1 with the -1 wrap")
    label_columns: Literal["onehot", "single", "none"] = param(
        "onehot", "how the label enters the columns: one-hot (P3GM's data layout), one integer column, or not at all")


def bin_codes(values: np.ndarray, low: np.ndarray, high: np.ndarray, edges: int = 5,
              binning: Binning = "clipped") -> tuple[np.ndarray, int]:
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
    grid = low[None, :] + fractions[:, None] * (high - low)[None, :]      # [edges, d]
    # digitize per column: number of edges <= value (right=False), minus one
    codes = (values[:, None, :] >= grid[None, :, :]).sum(axis=1) - 1       # [N, d] in -1..edges-1
    if binning == "notebook":
        return np.where(codes < 0, edges - 1, codes), edges                # -1 wraps to the last cell
    return np.clip(codes, 0, edges - 2), edges - 1


def _onehot(codes: np.ndarray, cells: int) -> np.ndarray:
    """[N, d·cells] indicator matrix of the cells (float32 counts are exact up to 2^24 records)."""
    n, d = codes.shape
    onehot = np.zeros((n, d * cells), dtype=np.float32)
    onehot[np.arange(n)[:, None], np.arange(d)[None, :] * cells + codes] = 1.0
    return onehot


def tvd_2way(real: np.ndarray, synthetic: np.ndarray, edges: int = 5, binning: Binning = "clipped") -> float:
    """Mean over all ordered column pairs (self-pairs included) of ½·L1 between the 2-way histograms.

    Bins come from `real`'s column ranges (PAPERS.md §3.3); `real` [N, d], `synthetic` [M, d]. All
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


def n_label_classes(ctx: EvalContext) -> int:
    names = ctx.data.meta.get("label_names")
    return len(names) if names else int(max(ctx.data.train.y.max(), ctx.data.test.y.max())) + 1


@register_metric("marginals_2way", needs=("samples", "data"), options=Marginals2WayOptions,
                 description="average total-variation distance of all 2-way marginals (5 bins), synthetic vs real train")
def marginals_2way(ctx: EvalContext) -> Rows:
    """`tvd2` with the configured binning, and the value under each binning (`tvd2_clipped`, `tvd2_notebook`)."""
    options, classes = ctx.options, n_label_classes(ctx)
    real = data_matrix(ctx.data.train.x, ctx.data.train.y, classes, options.label_columns)
    synthetic = data_matrix(ctx.samples["x"], ctx.samples["y"], classes, options.label_columns)
    values = {b: tvd_2way(real, synthetic, options.edges, b) for b in BINNINGS}
    return [{"metric": "tvd2", "value": values[options.binning]},
            *({"metric": f"tvd2_{b}", "value": v} for b, v in values.items())]
