"""Average total-variation distance of all 2-way marginals (P3GM Table VIII; docs/papers.md §3.3).

The reference notebook (`show.ipynb`) bins every column with 5 linearly spaced *edges* on the real
training data's [min, max] and compares 5×5 joint histograms of **all ordered pairs of columns,
including a column with itself**; TV = ½·L1 between the normalised real and synthetic histograms,
averaged over the pairs. Its binning is `digitize(x, edges) − 1`: four intervals [min, max) get 0..3,
values ≥ max get 4, and synthetic values below min get −1, which indexes (wraps to) the last cell.

Two binnings, one switch:

* ``clipped`` (default, the evident intent): the four equal-width intervals between the five edges, the
  maximum in the last one, synthetic values outside [min, max] clipped into the first/last interval.
* ``notebook``: the notebook's cells exactly, with the −1 wrap (values below min share the ≥ max cell).

The data matrix is the features plus the label as one-hot columns (the layout of P3GM's data arrays), unless
`label_columns` says otherwise. The notebook binned the code's CSV files, where the label is one column (`single`):
on Adult that adds 0.01–0.02 (docs/p3gm.md, "PrivBayes on Adult"). `tvd_2way` is the public function the
P3GM reconstruction variant (`marginals_2way_public`) reuses.
"""

from __future__ import annotations

from dpvae.eval.base import EvalContext, Rows

# defined there (no registry import) so that any metric module can import them; re-exported here
from dpvae.eval.marginals import (  # noqa: F401
    BINNINGS,
    Binning,
    Marginals2WayOptions,
    bin_codes,
    data_matrix,
    n_label_classes,
    tvd_2way,
)
from dpvae.eval.registry import register_metric


@register_metric(
    "marginals_2way",
    needs=("samples", "data"),
    options=Marginals2WayOptions,
    description="average total-variation distance of all 2-way marginals (5 bins), synthetic vs real train",
)
def marginals_2way(ctx: EvalContext) -> Rows:
    """`tvd2` with the configured binning, and the value under each binning (`tvd2_clipped`, `tvd2_notebook`)."""
    options, classes = ctx.options, n_label_classes(ctx)
    real = data_matrix(ctx.data.train.x, ctx.data.train.y, classes, options.label_columns)
    synthetic = data_matrix(ctx.samples["x"], ctx.samples["y"], classes, options.label_columns)
    values = {b: tvd_2way(real, synthetic, options.edges, b) for b in BINNINGS}
    return [
        {"metric": "tvd2", "value": values[options.binning]},
        *({"metric": f"tvd2_{b}", "value": v} for b, v in values.items()),
    ]
