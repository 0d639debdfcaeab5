"""The metric registry: every metric an experiment can ask for, implemented or planned.

A metric reads one run (its samples, and for some metrics its model) and returns tidy rows
`{"metric": ..., "value": ..., "classifier": ..., "step": ...}`; the evaluate stage writes them to
`results/runs/<run>/metrics/<name>.json` (plus optional artifacts such as sample grids).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MetricFn = Callable[..., list[dict[str, Any]]]


@dataclass(frozen=True)
class Metric:
    name: str
    description: str
    fn: MetricFn | None = None

    @property
    def implemented(self) -> bool:
        return self.fn is not None

    def __call__(self, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        if self.fn is None:
            raise NotImplementedError(
                f"metric '{self.name}' ({self.description}) is not implemented yet; "
                f"see the open issues and README.md's status table")
        return self.fn(*args, **kwargs)


METRICS: dict[str, Metric] = {m.name: m for m in (
    Metric("tabular_classifiers", "P3GM's LR / AdaBoost / GBM / XGBoost trained on synthetic, AUROC and AUPRC on real test"),
    Metric("marginals_2way", "average total-variation distance of all 2-way marginals (5 bins), synthetic vs real train"),
    Metric("marginals_2way_public", "the same on P3GM's reconstructions of real test records (Table VIII as computed)"),
    Metric("p3gm_cnn", "P3GM's one-layer CNN trained on synthetic images, accuracy on real test images"),
    Metric("image_classifiers", "DP2-VAE's LR / MLP / CNN trained on synthetic images, accuracy on real test images"),
    Metric("fid", "Frechet Inception Distance to real images (torch-fidelity)"),
    Metric("sample_grid", "a grid of generated samples (artifact for qualitative figures)"),
    Metric("hoyer_sparsity", "Hoyer sparsity of standardised posterior means on the test set"),
    Metric("iwae_loglik", "importance-weighted test log-likelihood"),
    Metric("latent_mmd", "dimension-wise Cauchy MMD between aggregate posterior and prior samples"),
    Metric("pinwheel_scatter", "reconstructions and latent samples of the pinwheel data (artifact)"),
    Metric("mc_attack", "Monte-Carlo membership-inference attack: type-I / type-II error curve"),
    Metric("learning_curve", "reconstruction loss per iteration and utility per epoch"),
)}
