"""The metric registry: every metric an experiment can ask for, each in its module `eval/<name>.py`.

@register_metric("hoyer_sparsity", needs=("model", "data"), options=HoyerOptions,
                 description="Hoyer sparsity of standardised posterior means on the test set")
def hoyer_sparsity(ctx: EvalContext) -> list[dict]: ...
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dpvae.eval.base import Metric, MetricFn
from dpvae.params import MetricOptions
from dpvae.registry import Registry, discover

METRICS: Registry[Metric] = Registry("metric")


def register_metric(
    name: str, *, needs: tuple[str, ...], description: str, options: type[MetricOptions] = MetricOptions, **extra: Any
) -> Callable[[MetricFn], MetricFn]:
    """Function decorator: register `fn` as metric `name` (duplicates refused). `extra`: see `Metric`."""

    def decorate(fn: MetricFn) -> MetricFn:
        METRICS.add(name, Metric(name, description, tuple(needs), options, fn, **extra))
        return fn

    return decorate


discover("dpvae.eval")
