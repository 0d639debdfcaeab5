"""Shared pieces of PriVAE's model-only metrics: the trained VAE and its test-set posteriors.

(Not a metric module: the registry skips it.)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpvae.eval.base import EvalContext


def load_model(ctx: EvalContext) -> Any:
    """The run's trained `LatentVAE` (eval mode) on the run's device."""
    from dpvae.models.vae_files import load_vae

    return load_vae(ctx.model_dir)[0].to(ctx.run.device)


def model_device(model: Any) -> Any:
    """The device a model's parameters live on."""
    return next(model.parameters()).device


def test_images(ctx: EvalContext, limit: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The test split's records and labels, the first `limit` of them if set (a fixed subset)."""
    test = ctx.data.test
    n = len(test.y) if limit is None else min(int(limit), len(test.y))
    return np.asarray(test.x[:n], dtype=np.float32), np.asarray(test.y[:n])


def posterior(model: Any, x: np.ndarray, batch_size: int = 500) -> tuple[np.ndarray, np.ndarray]:
    """Posterior means and standard deviations [N, D] of records `x`, encoded on the model's device."""
    import torch

    device = model_device(model)
    means, stds = [], []
    with torch.no_grad():
        for start in range(0, len(x), batch_size):
            mu, std = model.encode(torch.as_tensor(x[start : start + batch_size]).to(device))
            means.append(mu)
            stds.append(std)
    return torch.cat(means).cpu().numpy(), torch.cat(stds).cpu().numpy()
