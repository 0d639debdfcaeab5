"""Hoyer sparsity of standardised test posterior means (Mathieu et al.'s `compute_sparsity`, PriVAE eq. 17).

Every test record is encoded to its posterior mean z̄ [D]; each dimension is divided by its standard
deviation over the test set; Hoyer(z̄) = (√D − ‖z̄‖₁/‖z̄‖₂)/(√D − 1) (0 dense, 1 one-hot); the metric
is the mean over records.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpvae.eval.base import EvalContext, Rows
from dpvae.eval.latent import load_model, posterior, test_images
from dpvae.eval.registry import register_metric
from dpvae.params import MetricOptions, param


@dataclass(frozen=True)
class HoyerOptions(MetricOptions):
    max_test: int | None = param(None, "use the first n test records (null = all)", minimum=2)


def hoyer_sparsity_of(means: np.ndarray) -> float:
    """Mean Hoyer sparsity of the rows of `means [N, D]` after dividing each column by its std (ddof 1)."""
    if means.ndim != 2 or means.shape[1] < 2 or means.shape[0] < 2:
        raise ValueError(f"means must be [N >= 2, D >= 2], got {means.shape}")
    d = means.shape[1]
    scaled = np.asarray(means, dtype=np.float64) / means.std(axis=0, ddof=1)
    ratio = np.abs(scaled).sum(1) / np.sqrt(np.square(scaled).sum(1))
    return float((np.sqrt(d) - ratio.mean()) / (np.sqrt(d) - 1))


@register_metric(
    "hoyer_sparsity",
    needs=("model", "data"),
    options=HoyerOptions,
    description="Hoyer sparsity of standardised posterior means on the test set",
)
def hoyer_sparsity(ctx: EvalContext) -> Rows:
    x, _ = test_images(ctx, ctx.options.max_test)
    means, _ = posterior(load_model(ctx), x)
    return [{"metric": "hoyer_sparsity", "value": hoyer_sparsity_of(means)}]
