"""Importance-weighted test log-likelihood (Mathieu et al.'s `iwae_objective`, `analyse.py --logp`).

log p(x) ≈ log (1/K) Σ_k p(z_k) p(x|z_k) / q(z_k|x), z_k ~ q(z|x), averaged over test records; K = 1000
at paper scale. `max_test` evaluates a fixed subset (the first n test records), reported beside the value.
The model runs on the run's device; the importance noise is drawn on the CPU from the seeded stream in one
fixed order and moved there, so CUDA gives the CPU's estimate up to float rounding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dpvae.eval.base import EvalContext, Rows
from dpvae.eval.latent import load_model, model_device, test_images
from dpvae.eval.registry import register_metric
from dpvae.params import MetricOptions, param
from dpvae.progress import Progress

#: importance samples decoded at once (bounds memory: K × one decoded record)
CHUNK = 250


@dataclass(frozen=True)
class IWAEOptions(MetricOptions):
    k: int = param(1000, "importance samples per test record", minimum=1)
    batch_size: int = param(64, "test records per batch", minimum=1)
    max_test: int | None = param(None, "evaluate on the first n test records (null = all)", minimum=1)


def iwae_bound(model, x, k: int, generator, chunk: int = CHUNK):
    """Per-record IWAE estimates [N] for records `x` (a tensor on the model's device) with `k` importance
    samples; the noise comes from `generator` (a CPU stream, see the module docstring)."""
    import torch

    parts = []
    with torch.no_grad():
        for start in range(0, k, chunk):
            size = min(chunk, k - start)
            noise = torch.randn(len(x), size, model.latent_dim, generator=generator).to(x.device)
            parts.append(model.log_weights(x, noise))
    return torch.logsumexp(torch.cat(parts, 1), 1) - math.log(k)


@register_metric(
    "iwae_loglik",
    needs=("model", "data"),
    options=IWAEOptions,
    runtime=240,
    gpu=True,
    description="importance-weighted test log-likelihood",
)
def iwae_loglik(ctx: EvalContext) -> Rows:
    import torch

    model = load_model(ctx)
    x, _ = test_images(ctx, ctx.options.max_test)
    records = torch.as_tensor(x).to(model_device(model))
    generator = ctx.run.torch_generator("iwae", "cpu")
    total = 0.0
    per_batch, progress = max(1, ctx.options.batch_size), Progress("iwae bound", len(x), "records")
    for start in range(0, len(x), per_batch):
        total += float(iwae_bound(model, records[start : start + per_batch], ctx.options.k, generator).sum())
        progress.advance(len(records[start : start + per_batch]))
    return [
        {"metric": "iwae_loglik", "value": total / len(x)},
        {"metric": "iwae_test_records", "value": float(len(x))},
        {"metric": "iwae_k", "value": float(ctx.options.k)},
    ]
