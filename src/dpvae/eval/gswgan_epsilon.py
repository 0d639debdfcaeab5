"""GS-WGAN's ε computed the way its authors compute it (autodp), beside the ledger's project-accountant ε.

The ledger (`privacy.json`, tidy metric `epsilon_spent`) holds the project's accounting of GS-WGAN's
composition; this metric recomputes, from the trained run's recorded settings (σ, K, iterations, B, δ),
the number GS-WGAN's `evaluation/privacy_analysis.py` prints, so items can show both (docs/papers.md A-D10).
"""

from __future__ import annotations

import json

from dpvae.eval.base import EvalContext, Rows
from dpvae.eval.registry import register_metric


@register_metric(
    "gswgan_epsilon",
    needs=("model",),
    runtime=5,
    threads=1,
    mem_mb=1000,
    description="GS-WGAN's epsilon the authors' way (autodp: q = 1/K, iterations x batch-size "
    "compositions), recomputed from the trained run",
)
def gswgan_epsilon(ctx: EvalContext) -> Rows:
    from dpvae.methods.gs_wgan.accounting import authors_epsilon

    meta = json.loads((ctx.model_dir / "model.json").read_text())
    value = authors_epsilon(
        meta["noise_multiplier"], meta["discriminators"], meta["iters"], meta["batch_size"], meta["delta"]
    )
    return [{"metric": "epsilon_authors", "value": value}, {"metric": "gswgan_iters", "value": float(meta["iters"])}]
