"""P3GM's image utility (Table VII, Fig. 5): its one-layer CNN trained on the synthetic images, accuracy on the
real test images (`dpvae.models.p3gm_cnn`, docs/papers.md §3.3)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from dpvae.data.declared import Facts
from dpvae.eval.base import EvalContext, Rows
from dpvae.eval.registry import register_metric
from dpvae.params import MetricOptions, param


@dataclass(frozen=True)
class P3GMCNNOptions(MetricOptions):
    max_epochs: int = param(20, "maximum epochs (the reference: 20)", minimum=1)
    early_stopping: Literal["synthetic", "test"] = param(
        "synthetic", "stop on a held-out part of the synthetic set, or on the real test set as the reference code does"
    )
    patience: int = param(
        1, "epochs without improvement before stopping (the reference: stop at the first decrease)", minimum=1
    )
    val_fraction: float = param(
        0.1,
        "share of the synthetic set held out for early stopping ('synthetic' only)",
        exclusive_minimum=0,
        maximum=0.5,
    )
    batch_size: int = param(32, "classifier batch size (Keras' default, which the reference uses)", minimum=1)
    max_test: int | None = param(None, "score on the first n real test images (null = all)", minimum=1)


def cnn_rows(x, y, ctx: EvalContext, options: P3GMCNNOptions, stream: str = "p3gm-cnn") -> Rows:
    """Train and score once; rows `accuracy` (classifier cnn) and `cnn_epochs` (epochs trained)."""
    from dpvae.models.p3gm_cnn import train_and_score

    test = ctx.data.test
    keep = slice(None) if options.max_test is None else slice(options.max_test)
    result = train_and_score(
        x,
        y,
        test.x[keep],
        test.y[keep],
        generator=ctx.run.torch_generator(stream, device="cpu"),
        early_stopping=options.early_stopping,
        max_epochs=options.max_epochs,
        patience=options.patience,
        val_fraction=options.val_fraction,
        batch_size=options.batch_size,
        device=ctx.run.device,
    )
    return [
        {"metric": "accuracy", "classifier": "cnn", "value": result.accuracy},
        {"metric": "cnn_epochs", "classifier": "cnn", "value": float(result.epochs)},
    ]


def square_grey(options: P3GMCNNOptions, facts: Facts, n_synthetic: int) -> list[tuple[str, str]]:
    """P3GM's CNN reads each record as one square grey image."""
    size = math.prod(facts.record_shape)
    if (facts.kind == "image" and facts.record_shape[0] != 1) or math.isqrt(size) ** 2 != size:
        return [("", f"it reads a record as one square grey image, the data's records are {list(facts.record_shape)}")]
    return []


@register_metric(
    "p3gm_cnn",
    needs=("samples", "data"),
    options=P3GMCNNOptions,
    check=square_grey,
    runtime=60,
    gpu=True,
    description="P3GM's one-layer CNN trained on synthetic images, accuracy on real test images",
)
def p3gm_cnn(ctx: EvalContext) -> Rows:
    return cnn_rows(ctx.samples["x"], ctx.samples["y"], ctx, ctx.options)
