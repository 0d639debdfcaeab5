"""The contract every metric implements: what it reads, its typed options, and the rows it returns.

A metric lives in `eval/<name>.py` and registers a function with `@register_metric`, declaring what it
needs — `samples` (the run's synthetic records), `model` (the trained model directory), `data` (the
prepared dataset) and optionally a cached per-dataset `reference` (e.g. FID's real-image statistics,
built once by the `reference` rule) — so that the evaluate rule asks for exactly those inputs: a
model-only metric never forces a sampling job. It returns tidy rows
`{"metric": ..., "value": ..., "classifier": ..., "step": ...}`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from dpvae.data.declared import Facts
from dpvae.methods.base import RunContext
from dpvae.params import MetricOptions
from dpvae.paths import model_path

NEEDS: tuple[str, ...] = ("samples", "model", "data", "reference")


@dataclass
class EvalContext:
    """What a metric gets: the run (spec, typed method params, data), its options and input paths."""

    run: RunContext
    options: Any  # the metric's MetricOptions instance
    out_dir: Path  # where artifacts (images, arrays) go, beside the metric's JSON
    reference_path: Path | None = None

    @cached_property
    def samples(self) -> dict[str, np.ndarray]:
        with np.load(self.run.samples_path) as loaded:
            return dict(loaded)

    @property
    def data(self) -> Any:
        return self.run.data

    @property
    def model_dir(self) -> Path:
        return model_path(self.run.run_dir)

    def reference(self) -> dict[str, np.ndarray]:
        if self.reference_path is None:
            raise RuntimeError("this metric declared no reference")
        with np.load(self.reference_path) as loaded:
            return dict(loaded)


Rows = list[dict[str, Any]]
MetricFn = Callable[[EvalContext], Rows]
#: (options, the data's facts with n_train = the run's training records, synthetic records per run) ->
#: [(option name, why it does not fit)]: sizes larger than a split, checked at validation
SizeCheck = Callable[[Any, Facts, int], list[tuple[str, str]]]
KINDS = ("table", "image")
KIND_NAMES = {"table": "tables ([d] records)", "image": "images ([C, H, W] records)"}
#: (prepared dataset dir, options, device, the file for a killed job's partial result) -> arrays
ReferenceFn = Callable[[Path, Any, str, Path], dict[str, np.ndarray]]


@dataclass(frozen=True)
class Metric:
    """A registered metric: `fn(ctx)` computes its rows.

    A metric that needs "reference" has `reference(prepared_dir, options, device, partial) -> arrays`, cached once per
    dataset by the reference rule; `reference_keys` are the option names it reads (other options never rebuild
    it). `gpu`: its jobs ask the cluster for a GPU (they run on the CPU when none is there, or `device: cpu`).
    """

    name: str
    description: str
    needs: tuple[str, ...]
    Options: type[MetricOptions]
    fn: MetricFn
    reference: ReferenceFn | None = None
    reference_keys: tuple[str, ...] = ()
    threads: int = 2
    mem_mb: int = 4000
    runtime: int = 30
    gpu: bool = False
    kinds: tuple[str, ...] = KINDS
    check: SizeCheck | None = None

    def data_errors(self, options: Any, facts: Facts, n_synthetic: int) -> list[tuple[str, str]]:
        """[(option or '', why)] where this metric cannot take data with these facts (empty: it can)."""
        if facts.kind not in self.kinds:
            return [("", f"it takes {' or '.join(KIND_NAMES[k] for k in self.kinds)}")]
        return self.check(options, facts, n_synthetic) if self.check else []

    def __post_init__(self) -> None:
        unknown = [n for n in self.needs if n not in NEEDS]
        if unknown:
            raise ValueError(f"metric '{self.name}': unknown needs {unknown} (known: {', '.join(NEEDS)})")
        if ("reference" in self.needs) != (self.reference is not None):
            raise ValueError(f"metric '{self.name}': a 'reference' need and a reference builder go together")

    def __call__(self, ctx: EvalContext) -> Rows:
        return self.fn(ctx)
