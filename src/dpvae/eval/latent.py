"""Shared pieces of PriVAE's model-only metrics: the trained VAE and its test-set posteriors.

(Not a metric module: the registry skips it.)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpvae.eval.base import EvalContext


def load_model(ctx: EvalContext) -> Any:
    """The run's trained `LatentVAE` (CPU, eval mode)."""
    from dpvae.models.latent_vae import load_vae

    return load_vae(ctx.model_dir)[0]


def test_images(ctx: EvalContext, limit: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The test split's records and labels, the first `limit` of them if set (a fixed subset)."""
    test = ctx.data.test
    n = len(test.y) if limit is None else min(int(limit), len(test.y))
    return np.asarray(test.x[:n], dtype=np.float32), np.asarray(test.y[:n])


def posterior(model: Any, x: np.ndarray, batch_size: int = 500) -> tuple[np.ndarray, np.ndarray]:
    """Posterior means and standard deviations [N, D] of records `x`."""
    import torch

    means, stds = [], []
    with torch.no_grad():
        for start in range(0, len(x), batch_size):
            mu, std = model.encode(torch.as_tensor(x[start:start + batch_size]))
            means.append(mu.numpy())
            stds.append(std.numpy())
    return np.concatenate(means), np.concatenate(stds)
