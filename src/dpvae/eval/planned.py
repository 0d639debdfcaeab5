"""Metrics the experiments name whose modules do not exist yet: what they need and their typed options.

Implementing one = writing `eval/<name>.py` (move its Options class there, `@register_metric`) and deleting
its entry here; a test refuses a name that is both planned and registered.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from dpvae.eval.base import Metric
from dpvae.params import MetricOptions, param


@dataclass(frozen=True)
class FIDOptions(MetricOptions):
    n_samples: int = param(60000, "generated images used for FID (the first n of the run's samples)", minimum=2)
    batch_size: int = param(64, "Inception batch size", minimum=1)
    reference: Literal["train", "test"] = param("train", "real reference images: the training or the test split")
    reference_n: int | None = param(None, "real images in the reference statistics (null = the whole split)", minimum=2)


@dataclass(frozen=True)
class ImageClassifierOptions(MetricOptions):
    repeats: int = param(5, "classifier trainings averaged per run", minimum=1)
    batch_size: int = param(512, "classifier batch size", minimum=1)
    max_epochs: int = param(300, "maximum classifier epochs", minimum=1)
    patience: int = param(10, "early-stopping patience on the synthetic validation split", minimum=1)
    val_fraction: float = param(0.1, "share of the synthetic set held out for early stopping", exclusive_minimum=0, maximum=0.9)


PLANNED: tuple[Metric, ...] = (
    Metric("image_classifiers", "DP2-VAE's LR / MLP / CNN trained on synthetic images, accuracy on real test images",
           ("samples", "data"), ImageClassifierOptions, gpu=True),
    Metric("fid", "Frechet Inception Distance to real images (torch-fidelity)", ("samples", "reference"), FIDOptions,
           reference_keys=("reference", "reference_n", "batch_size"), gpu=True, runtime=240),
)
