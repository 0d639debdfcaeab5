"""P3GM Fig. 7 (learning efficiency): reconstruction loss per iteration and utility per epoch.

Reads what a method trained with `record_every_epoch` kept (P3GM, P3GM(AE), DP-VAE, VAE): its model after
every epoch and at 16 iterations spaced evenly in log scale. The reconstruction curve is the mean over the
test split (`max_test`) of Σ(decoder(μ(x)) − x)² of each kept model, μ the encoder mean (P3GM: the frozen
PCA) — post-processing of the released iterates and held-out data, like every metric; it is not the loss of
the training batches the paper plots, which a private run does not release. For every epoch it draws a
synthetic set from that epoch's decoder and scores it like the final model: MNIST-like images with P3GM's CNN
(accuracy), tabular data with the four classifiers (AUROC / AUPRC, their mean `mean4`).
Rows: `recon_loss` with `step` = iteration (1-based, the kept ones); the utility rows with `step` = epoch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from dpvae.eval.base import EvalContext, Rows
from dpvae.eval.registry import register_metric
from dpvae.params import MetricOptions, param


@dataclass(frozen=True)
class LearningCurveOptions(MetricOptions):
    n_samples: int | None = param(
        None, "synthetic records per epoch (null = the training-set size, as the code)", minimum=1
    )
    utility: Literal["auto", "none"] = param(
        "auto", "per-epoch utility: CNN accuracy for images, 4-classifier AUROC for tabular; none = losses only"
    )
    cnn_max_epochs: int = param(20, "CNN epochs at most (images)", minimum=1)
    cnn_early_stopping: Literal["synthetic", "test"] = param(
        "synthetic", "CNN early stopping on held-out synthetic data, or on the real test set (the reference)"
    )
    adult_positive: Literal[">50K", "<=50K"] = param(">50K", "Adult's positive class (tabular)")
    max_test: int | None = param(None, "score on the first n real test records (null = all)", minimum=1)


def is_image(x: np.ndarray) -> bool:
    """28 x 28 grey images, flattened or not (the CNN's input)."""
    return int(np.prod(x.shape[1:])) == 784


def epoch_utility(samples: dict[str, np.ndarray], ctx: EvalContext, epoch: int) -> Rows:
    options = ctx.options
    if is_image(ctx.data.train.x):
        from dpvae.eval.p3gm_cnn import P3GMCNNOptions, cnn_rows

        cnn = P3GMCNNOptions(
            max_epochs=options.cnn_max_epochs, early_stopping=options.cnn_early_stopping, max_test=options.max_test
        )
        rows = cnn_rows(samples["x"], samples["y"], ctx, cnn, stream=f"learning-curve-cnn-{epoch}")
    else:
        from dpvae.eval.tabular_classifiers import classifier_rows, positive_labels

        names = ctx.data.meta.get("label_names")
        test = ctx.data.test
        keep = slice(None) if options.max_test is None else slice(options.max_test)
        rows = classifier_rows(
            samples["x"],
            positive_labels(samples["y"], names, options.adult_positive),
            test.x[keep],
            positive_labels(test.y[keep], names, options.adult_positive),
            ctx.run.seed_for(f"learning-curve-classifiers-{epoch}"),
        )
    return [{**row, "step": epoch} for row in rows]


@register_metric(
    "learning_curve",
    needs=("model", "data"),
    options=LearningCurveOptions,
    runtime=240,
    gpu=True,
    description="reconstruction loss per iteration and utility per epoch (P3GM Fig. 7)",
)
def learning_curve(ctx: EvalContext) -> Rows:
    from dpvae.methods.registry import get_method

    method = get_method(ctx.run.spec.method)
    if not hasattr(method, "recon_curve"):
        raise TypeError(f"method '{method.name}' keeps no training curve (learning_curve needs an MLP-VAE method)")
    epochs = method.snapshot_count(ctx.run)
    if epochs == 0:
        raise ValueError(f"run {ctx.run.spec.run_id} kept no snapshots; train it with record_every_epoch: true")
    test = ctx.data.test
    keep = slice(None) if ctx.options.max_test is None else slice(ctx.options.max_test)
    curve = method.recon_curve(ctx.run, test.x[keep], test.y[keep])
    rows: Rows = [{"metric": "recon_loss", "step": step, "value": value} for step, value in curve]
    if ctx.options.utility == "none":
        return rows
    for index in range(epochs):
        samples = method.sample_snapshot(ctx.run, index, ctx.options.n_samples)
        rows += epoch_utility(samples, ctx, index + 1)
    return rows
