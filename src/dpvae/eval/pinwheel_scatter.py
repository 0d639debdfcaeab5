"""Pinwheel reconstructions and latents (PriVAE Fig. 2) and two numbers that say what the scatter shows.

Artifact `pinwheel_scatter.npz` beside the metric's JSON: the test points `x` and classes `y`, their
reconstructions `recon` (the decoder's mean at one posterior sample, as Mathieu et al.'s `reconstruct`),
posterior means `latent_mean`, one posterior sample each `latent_sample`, and the prior's component
means `prior_means`. Numbers:

* `pinwheel_clustered`: the share of test points whose posterior mean is nearest the prior component
  their class is assigned to, under the best one-to-one assignment of classes to components
  (Hungarian algorithm on the class × component counts); 1 = every arm in its own cluster, about 0.25
  or a little above for latents that ignore the arms (all in one component gives exactly 0.25);
* `pinwheel_recon_error`: mean squared Euclidean distance between a test point and its reconstruction.

The model runs on the run's device; the posterior draws come from the seeded CPU stream and are moved there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from dpvae.eval.base import EvalContext, Rows
from dpvae.eval.latent import load_model, model_device, test_images
from dpvae.eval.registry import register_metric
from dpvae.files import atomic_write
from dpvae.params import MetricOptions, param

ARTIFACT = "pinwheel_scatter.npz"


@dataclass(frozen=True)
class PinwheelScatterOptions(MetricOptions):
    split: Literal["test", "train"] = param("test", "records shown and scored")


def clustered_share(components: np.ndarray, classes: np.ndarray, num_components: int) -> float:
    """Share of records whose component equals their class's component under the best one-to-one assignment."""
    from scipy.optimize import linear_sum_assignment

    labels = np.unique(classes)
    counts = np.zeros((len(labels), num_components))
    for row, label in enumerate(labels):
        counts[row] = np.bincount(components[classes == label], minlength=num_components)
    rows, cols = linear_sum_assignment(counts, maximize=True)
    return float(counts[rows, cols].sum() / len(classes))


@register_metric(
    "pinwheel_scatter",
    needs=("model", "data"),
    options=PinwheelScatterOptions,
    description="reconstructions and latents of the pinwheel data (artifact), clustered share and reconstruction error",
)
def pinwheel_scatter(ctx: EvalContext) -> Rows:
    import torch

    from dpvae.errors import ConfigError

    model = load_model(ctx)
    if not hasattr(model, "nearest_component"):
        raise ConfigError(
            f"pinwheel_scatter needs the pinwheel VAE (mixture prior); this run trained {type(model).__name__}"
        )
    if ctx.options.split == "test":
        x, y = test_images(ctx)
    else:
        x, y = np.asarray(ctx.data.train.x, dtype=np.float32), np.asarray(ctx.data.train.y)
    device = model_device(model)
    generator = ctx.run.torch_generator("pinwheel_scatter", "cpu")
    with torch.no_grad():
        mu, std = model.encode(torch.as_tensor(x).to(device))
        sample = mu + std * torch.randn(mu.shape, generator=generator).to(device)
        recon = model.reconstruction(sample)
        components = model.nearest_component(mu).cpu().numpy()
    arrays = {
        "x": x,
        "y": y,
        "recon": recon.cpu().numpy(),
        "latent_mean": mu.cpu().numpy(),
        "latent_sample": sample.cpu().numpy(),
        "prior_means": model.prior_means.cpu().numpy(),
    }
    atomic_write(ctx.out_dir / ARTIFACT, lambda tmp: np.savez_compressed(tmp, **arrays))
    error = float(np.square(arrays["recon"] - x).sum(1).mean())
    share = clustered_share(components, y, len(arrays["prior_means"]))
    return [{"metric": "pinwheel_clustered", "value": share}, {"metric": "pinwheel_recon_error", "value": error}]
