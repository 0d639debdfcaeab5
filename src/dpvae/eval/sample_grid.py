"""A grid of generated samples for the qualitative figures: `sample_grid.npz` beside the metric's JSON.

Row r shows samples labelled with the r-th class present (class-conditional methods and P3GM's decoded
labels), so a grid reads like the papers' panels; unlabelled or too few samples fill rows in order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpvae.eval.base import EvalContext, Rows
from dpvae.eval.registry import register_metric
from dpvae.files import atomic_write
from dpvae.params import MetricOptions, param

ARTIFACT = "sample_grid.npz"


@dataclass(frozen=True)
class SampleGridOptions(MetricOptions):
    rows: int = param(10, "grid rows (one class each where labels allow)", minimum=1)
    cols: int = param(10, "grid columns", minimum=1)


def grid_indices(y: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """rows x cols indices into the samples: row r from the r-th label present, topped up in order."""
    chosen: list[int] = []
    for label in np.unique(y)[:rows]:
        chosen += list(np.flatnonzero(y == label)[:cols])
    taken = set(chosen)
    rest = [i for i in range(len(y)) if i not in taken]
    chosen = (chosen + rest)[: rows * cols]
    return np.asarray(chosen, dtype=np.int64)


@register_metric(
    "sample_grid",
    needs=("samples",),
    options=SampleGridOptions,
    description="a grid of generated samples (artifact for qualitative figures)",
)
def sample_grid(ctx: EvalContext) -> Rows:
    x, y = ctx.samples["x"], ctx.samples.get("y", np.zeros(len(ctx.samples["x"]), dtype=np.int64))
    keep = grid_indices(np.asarray(y), ctx.options.rows, ctx.options.cols)
    path = ctx.out_dir / ARTIFACT
    atomic_write(
        path,
        lambda tmp: np.savez_compressed(
            tmp, x=x[keep], y=np.asarray(y)[keep], rows=ctx.options.rows, cols=ctx.options.cols
        ),
    )
    return [{"metric": "sample_grid_shown", "value": float(len(keep))}]
