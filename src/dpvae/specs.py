"""The JSON contracts between the rules and the jobs they start, as frozen values: `AggregateSpec` (what
`dpvae aggregate` reads), `ExperimentSpec` (`dpvae render-experiment`) and `AnalysisContext` (`dpvae analyze`);
an item's `ItemSpec` is in `dpvae.render.spec` (it carries render settings).

`Rules` builds them; a rule passes `to_json()` (the value Snakemake tracks and the spec rule writes), a job reads
its file back with `from_json`. `from_json(x).to_json() == x`, key for key and in order, so the files and the
hashes stamped from them stay byte-identical.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dpvae.config_types import Config, Experiment, Variant
from dpvae.errors import DataError
from dpvae.runspec import FrozenDict


def spec_field(data: Mapping[str, Any], key: str, what: str) -> Any:
    """`data[key]`; a missing key is one DataError line naming it and the spec."""
    if not isinstance(data, Mapping) or key not in data:
        raise DataError(f"{what}: no key '{key}' (rebuild the spec: delete it and rerun)")
    return data[key]


@dataclass(frozen=True)
class AggregateSpec:
    """One variant's runs of an experiment on one dataset (each run's directory), and the experiment."""

    experiment: str
    dataset: str
    variant: str
    config: Experiment
    runs: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "experiment": self.experiment,
            "dataset": self.dataset,
            "variant": self.variant,
            "config": self.config.to_json(),
            "runs": list(self.runs),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], what: str = "aggregate spec") -> AggregateSpec:
        experiment = spec_field(data, "experiment", what)
        return cls(
            experiment,
            spec_field(data, "dataset", what),
            spec_field(data, "variant", what),
            Experiment.from_json(spec_field(data, "config", what), name=experiment),
            tuple(spec_field(data, "runs", what)),
        )


@dataclass(frozen=True)
class RunFiles:
    """A run directory and the benchmark files of its jobs."""

    dir: str
    benchmarks: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"dir": self.dir, "benchmarks": list(self.benchmarks)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], what: str = "run files") -> RunFiles:
        return cls(spec_field(data, "dir", what), tuple(spec_field(data, "benchmarks", what)))


@dataclass(frozen=True)
class ExperimentSpec:
    """What an experiment's render job reads: its tidy tables, each run's benchmark files, scale and delta."""

    experiment: str
    description: str
    scale: str
    delta: float
    tables: tuple[str, ...] = ()
    runs: tuple[RunFiles, ...] = ()
    left_out: tuple[str, ...] = ()  # datasets configured but unreachable (config data.unreachable)
    items: tuple[str, ...] = ()  # the paper items rendering this experiment

    def to_json(self) -> dict[str, Any]:
        return {
            "experiment": self.experiment,
            "description": self.description,
            "scale": self.scale,
            "delta": self.delta,
            "tables": list(self.tables),
            "runs": [r.to_json() for r in self.runs],
            "left_out": list(self.left_out),
            "items": list(self.items),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], what: str = "experiment spec") -> ExperimentSpec:
        return cls(
            spec_field(data, "experiment", what),
            spec_field(data, "description", what),
            spec_field(data, "scale", what),
            spec_field(data, "delta", what),
            tuple(spec_field(data, "tables", what)),
            tuple(RunFiles.from_json(r, what) for r in spec_field(data, "runs", what)),
            tuple(spec_field(data, "left_out", what)),
            tuple(spec_field(data, "items", what)),
        )


@dataclass(frozen=True)
class AnalysisContext:
    """The configuration subset an analysis reads: its experiment, the variant it names, data root, delta."""

    experiment: Experiment
    variants: Mapping[str, Variant] = field(default_factory=FrozenDict)
    data_root: str = "data"
    delta: float = 1e-5
    out: str | None = None  # where the job writes the table (the job's, not part of the contract)

    def config(self) -> Config:
        """The subset as a `Config` (what `dpvae.runs.resolve_params` reads)."""
        experiments = FrozenDict({self.experiment.name: self.experiment})
        return Config(delta=self.delta, variants=self.variants, experiments=experiments)

    def to_json(self) -> dict[str, Any]:
        return {
            "experiments": {self.experiment.name: self.experiment.to_json()},
            "variants": {n: v.to_json() for n, v in self.variants.items()},
            "data_root": self.data_root,
            "delta": self.delta,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], what: str = "analysis context") -> AnalysisContext:
        experiments = spec_field(data, "experiments", what)
        if not isinstance(experiments, Mapping) or len(experiments) != 1:
            raise DataError(f"{what}: 'experiments' must hold exactly one experiment, not {experiments!r}")
        ((name, experiment),) = experiments.items()
        variants = spec_field(data, "variants", what)
        return cls(
            Experiment.from_json(experiment, name=name),
            FrozenDict({n: Variant.from_json(v, name=n) for n, v in variants.items()}),
            spec_field(data, "data_root", what),
            spec_field(data, "delta", what),
        )
