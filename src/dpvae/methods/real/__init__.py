"""The real training split as a 'method': P3GM's "original" and DP2-VAE's "Real data" rows."""

from __future__ import annotations

import json

import numpy as np

from dpvae.methods.base import Method, Resources, RunContext
from dpvae.methods.registry import register_method


@register_method
class RealData(Method):
    """Releases the (possibly subsampled) real training split itself; not private."""

    name = "real"
    paper = "p3gm, dp2vae"
    private = False
    description = "the real training split (upper reference for utility metrics)"
    RESOURCES = Resources(threads=1, mem_mb=2000, runtime=5)

    def train(self, ctx: RunContext) -> None:
        ctx.model_dir.mkdir(parents=True, exist_ok=True)
        (ctx.model_dir / "model.json").write_text(json.dumps({"n_train": int(len(ctx.data.train.y))}))
        return None

    def sample(self, ctx: RunContext, n: int | None) -> dict[str, np.ndarray]:
        train = ctx.data.train
        if n is None or n >= len(train.y):
            return {"x": train.x, "y": train.y}
        keep = np.sort(ctx.rng("real-sample").choice(len(train.y), size=n, replace=False))
        return {"x": train.x[keep], "y": train.y[keep]}
