"""P3GM Table VIII as the reference notebook computed it: 2-way marginal TVD of *public reconstructions*.

`show.ipynb` ("to fairly compare P3GM with Ryan's algorithm, we use data synthesized from public data")
scores decoder(encoder mean(x)) of the real **test** records against the real training data, not samples
from the prior (docs/papers.md A-G10). Same binning and pairs as `marginals_2way` (its `tvd_2way`). Methods
with an encoder provide `reconstruct(ctx, x, y)`; for the others (PrivBayes, Ryan's, ...) there is no
public reconstruction and the metric returns no rows.
"""

from __future__ import annotations

from dpvae.eval.base import EvalContext, Rows
from dpvae.eval.marginals_2way import BINNINGS, Marginals2WayOptions, data_matrix, n_label_classes, tvd_2way
from dpvae.eval.registry import register_metric


@register_metric(
    "marginals_2way_public",
    needs=("model", "data"),
    options=Marginals2WayOptions,
    description="2-way marginal TVD of decoder(encoder mean) of the real test records vs real train "
    "(P3GM Table VIII as computed)",
)
def marginals_2way_public(ctx: EvalContext) -> Rows:
    from dpvae.methods.registry import get_method

    method = get_method(ctx.run.spec.method)
    if not hasattr(method, "reconstruct"):
        return []
    options, classes = ctx.options, n_label_classes(ctx)
    public = method.reconstruct(ctx.run, ctx.data.test.x, ctx.data.test.y)
    real = data_matrix(ctx.data.train.x, ctx.data.train.y, classes, options.label_columns)
    reconstructed = data_matrix(public["x"], public["y"], classes, options.label_columns)
    values = {b: tvd_2way(real, reconstructed, options.edges, b) for b in BINNINGS}
    return [
        {"metric": "tvd2_public", "value": values[options.binning]},
        *({"metric": f"tvd2_public_{b}", "value": v} for b, v in values.items()),
    ]
