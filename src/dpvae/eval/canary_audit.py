"""The one-run canary audit of a run trained with canaries (its variant has `audit:`; docs/audit.md).

Reads the run's audit.json (written by the train stage beside privacy.json) and returns ε̂ beside the
claims: `eps_lower` (95 % lower bound), `eps_point` (the same at confidence ½), `eps_max_certifiable` (the
most these canaries could show), `eps_claimed` (the ledger's headline), `engine_eps_paper` /
`engine_eps_sound` (the canary-carrying engine alone), `noise_multiplier`, `canaries`, `audit_seconds`.
"""

from __future__ import annotations

import json

from dpvae.errors import DataError
from dpvae.eval.base import EvalContext, Rows
from dpvae.eval.registry import register_metric
from dpvae.paths import audit_file


@register_metric(
    "canary_audit",
    needs=("model",),
    threads=1,
    mem_mb=1000,
    runtime=5,
    description="one-run canary audit: empirical epsilon lower bound beside the claimed epsilon",
)
def canary_audit(ctx: EvalContext) -> Rows:
    from dpvae.privacy.canaries import audit_rows

    path = audit_file(ctx.run.run_dir)
    if not path.is_file():
        raise DataError(
            f"{path}: missing; the run's variant '{ctx.run.spec.variant}' needs "
            "`audit: {canaries: N}` so that its training carries canaries (docs/audit.md)"
        )
    return audit_rows(json.loads(path.read_text()))
