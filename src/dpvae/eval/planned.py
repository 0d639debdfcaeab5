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


@dataclass(frozen=True)
class P3GMCNNOptions(MetricOptions):
    max_epochs: int = param(20, "maximum epochs", minimum=1)
    early_stopping: Literal["synthetic", "test"] = param("synthetic", "stop on a held-out part of the synthetic set, or on the real test set as the reference code does")


@dataclass(frozen=True)
class TabularClassifierOptions(MetricOptions):
    adult_positive: Literal[">50K", "<=50K"] = param(">50K", "positive class of Adult (paper text vs the reference code's arg-min)")


@dataclass(frozen=True)
class IWAEOptions(MetricOptions):
    k: int = param(1000, "importance samples per test image", minimum=1)
    batch_size: int = param(64, "test images per batch", minimum=1)
    max_test: int | None = param(None, "evaluate on the first n test images (null = all)", minimum=1)


@dataclass(frozen=True)
class LatentMMDOptions(MetricOptions):
    batch_size: int = param(256, "batch size of the MMD estimate (PriVAE's B)", minimum=2)


PLANNED: tuple[Metric, ...] = (
    Metric("tabular_classifiers", "P3GM's LR / AdaBoost / GBM / XGBoost trained on synthetic, AUROC and AUPRC on real test",
           ("samples", "data"), TabularClassifierOptions),
    Metric("marginals_2way", "average total-variation distance of all 2-way marginals (5 bins), synthetic vs real train",
           ("samples", "data")),
    Metric("marginals_2way_public", "the same on P3GM's reconstructions of real test records (Table VIII as computed)",
           ("model", "data")),
    Metric("p3gm_cnn", "P3GM's one-layer CNN trained on synthetic images, accuracy on real test images",
           ("samples", "data"), P3GMCNNOptions),
    Metric("image_classifiers", "DP2-VAE's LR / MLP / CNN trained on synthetic images, accuracy on real test images",
           ("samples", "data"), ImageClassifierOptions, gpu=True),
    Metric("fid", "Frechet Inception Distance to real images (torch-fidelity)", ("samples", "reference"), FIDOptions,
           reference_keys=("reference", "reference_n", "batch_size"), gpu=True, runtime=240),
    Metric("hoyer_sparsity", "Hoyer sparsity of standardised posterior means on the test set", ("model", "data")),
    Metric("iwae_loglik", "importance-weighted test log-likelihood", ("model", "data"), IWAEOptions, runtime=240),
    Metric("latent_mmd", "dimension-wise Cauchy MMD between aggregate posterior and prior samples", ("model", "data"),
           LatentMMDOptions),
    Metric("pinwheel_scatter", "reconstructions and latent samples of the pinwheel data (artifact)", ("model", "data")),
    Metric("learning_curve", "reconstruction loss per iteration and utility per epoch", ("model", "data")),
)
