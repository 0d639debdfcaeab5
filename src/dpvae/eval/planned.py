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


@dataclass(frozen=True)
class MCAttackOptions(MetricOptions):
    n_synthetic: int = param(100000, "generated samples the attack counts neighbours in", minimum=1)
    n_members: int = param(1000, "attacked members drawn from the training set", minimum=1)
    n_nonmembers: int = param(1000, "attacked non-members drawn from the test set", minimum=1)
    distance: Literal["euclidean", "pca"] = param("euclidean", "distance between images")
    radius: Literal["median"] = param("median", "neighbourhood radius heuristic")


PLANNED: tuple[Metric, ...] = (
    Metric("tabular_classifiers", "P3GM's LR / AdaBoost / GBM / XGBoost trained on synthetic, AUROC and AUPRC on real test",
           ("samples", "data"), TabularClassifierOptions),
    Metric("marginals_2way", "average total-variation distance of all 2-way marginals (5 bins), synthetic vs real train",
           ("samples", "data")),
    Metric("marginals_2way_public", "the same on P3GM's reconstructions of real test records (Table VIII as computed)",
           ("model", "data")),
    Metric("p3gm_cnn", "P3GM's one-layer CNN trained on synthetic images, accuracy on real test images",
           ("samples", "data"), P3GMCNNOptions),
    Metric("hoyer_sparsity", "Hoyer sparsity of standardised posterior means on the test set", ("model", "data")),
    Metric("iwae_loglik", "importance-weighted test log-likelihood", ("model", "data"), IWAEOptions, runtime=240),
    Metric("latent_mmd", "dimension-wise Cauchy MMD between aggregate posterior and prior samples", ("model", "data"),
           LatentMMDOptions),
    Metric("pinwheel_scatter", "reconstructions and latent samples of the pinwheel data (artifact)", ("model", "data")),
    Metric("mc_attack", "Monte-Carlo membership-inference attack: type-I / type-II error curve", ("model", "data"),
           MCAttackOptions),
    Metric("learning_curve", "reconstruction loss per iteration and utility per epoch", ("model", "data")),
)
