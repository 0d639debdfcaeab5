"""The validated configuration as frozen, typed values: `Config` and its parts (`Data`, `Dataset`, `Variant`,
`PerSetting`, `Sweep`, `PaperSetting`, `Experiment`, `Evaluation`).

`dpvae.config.load` validates the YAML (schema and cross-references) and returns a `Config`; everything after it
reads attributes, never the mapping. `to_json` gives back the validated mapping, key for key and in the configured
order, so that the specs the rules write from it stay byte-identical; `from_json` reads it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from dpvae.runspec import FrozenDict, frozen

#: a `per_setting` entry's dataset that matches every dataset
EVERY_DATASET = "*"


def as_config(config: Any) -> Config:
    """`config` as a `Config`: a validated mapping (a test's, a renderer's context) is typed, nothing validated."""
    return config if isinstance(config, Config) else Config.from_json(config)


@dataclass(frozen=True)
class _Node:
    """A configuration entry as a frozen value: `from_json` takes the validated mapping, `to_json` gives it back
    (the same keys in the same order: the specs the rules write from it stay byte-identical). A key left out of
    the configuration is None here and left out of `to_json` again; `_keys` remembers the configured order."""

    _nested: ClassVar[dict[str, Any]] = {}  # field -> a _Node type (or (tuple, type) / (dict, type) of them)
    _named: ClassVar[bool] = False  # an entry of a mapping by name: `name` is its key there, not one of its keys
    _keys: tuple[str, ...] | None = field(default=None, repr=False, compare=False, kw_only=True)

    def __post_init__(self) -> None:
        if self._keys is None:  # built in code: every key that is set, in declaration order
            keys = tuple(n for n in self._names() if getattr(self, n) is not None)
            object.__setattr__(self, "_keys", keys)

    @classmethod
    def _names(cls) -> tuple[str, ...]:
        skip = {"_keys", "name"} if cls._named else {"_keys"}
        return tuple(f.name for f in dataclasses.fields(cls) if f.name not in skip)

    @classmethod
    def from_json(cls, mapping: Mapping[str, Any], **extra: Any) -> Any:
        names = set(cls._names())
        values = {k: _decode(cls._nested.get(k), v) for k, v in mapping.items() if k in names}
        return cls(**values, **extra, _keys=tuple(mapping))

    def to_json(self) -> dict[str, Any]:
        """The configured mapping (plain dicts and lists, in the configured order)."""
        return {k: _encode(getattr(self, k)) for k in self._keys or ()}


def _decode(kind: Any, value: Any) -> Any:
    if kind is None:
        return frozen(value) if isinstance(value, Mapping) else _tupled(value)
    if isinstance(kind, tuple) and kind[0] is tuple:
        return tuple(kind[1].from_json(v) for v in value)
    if isinstance(kind, tuple) and kind[0] is dict:
        return FrozenDict({k: kind[1].from_json(v, name=k) for k, v in value.items()})
    return kind.from_json(value)


def _tupled(value: Any) -> Any:
    return tuple(_tupled(v) for v in value) if isinstance(value, list) else value


def _encode(value: Any) -> Any:
    if isinstance(value, _Node):
        return value.to_json()
    if isinstance(value, Mapping):
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_encode(v) for v in value]
    return value


@dataclass(frozen=True)
class Data(_Node):
    """`data`: where data lives and how it is obtained."""

    root: str = "data"
    mirror: str | None = None
    allow_unverified: tuple[str, ...] = ()
    unreachable: tuple[str, ...] = ()
    split_seed: int = 0


@dataclass(frozen=True)
class Dataset(_Node):
    """`datasets.<id>`: a dataset of your own (`dpvae.data.declared` reads its `to_json()`)."""

    _named: ClassVar[bool] = True
    name: str = field(default="", kw_only=True)
    path: str | None = None
    description: str | None = None
    label: str | None = None
    domain: str | None = None
    domain_epsilon: float | None = None
    columns: Mapping[str, Any] | None = None
    labels: Any = None
    layout: str | None = None
    categorical: tuple[str, ...] | None = None
    positive: Any = None
    drop: tuple[str, ...] | None = None
    test_fraction: float | None = None
    test_path: str | None = None
    randomness: str | None = None


@dataclass(frozen=True)
class PerSetting(_Node):
    """One `per_setting` entry of a variant: parameters for its runs on `dataset` ("*": any) at `epsilon`."""

    dataset: str = ""
    epsilon: float | str = ""
    params: Mapping[str, Any] = field(default_factory=FrozenDict)

    def matches(self, dataset: str, eps: str) -> bool:
        """Whether it applies to a run on `dataset` at epsilon label `eps`."""
        return self.epsilon == eps and self.dataset in (dataset, EVERY_DATASET)


@dataclass(frozen=True)
class Variant(_Node):
    """`variants.<name>`: a named method configuration."""

    _nested: ClassVar[dict[str, Any]] = {"per_setting": (tuple, PerSetting)}
    _named: ClassVar[bool] = True
    name: str = field(default="", kw_only=True)
    method: str = ""
    private: bool | None = None
    published_as: Mapping[str, str] | None = None
    params: Mapping[str, Any] = field(default_factory=FrozenDict)
    calibrate: str | None = None
    audit: Mapping[str, Any] | None = None
    per_dataset: Mapping[str, Mapping[str, Any]] = field(default_factory=FrozenDict)
    per_setting: tuple[PerSetting, ...] = ()


@dataclass(frozen=True)
class Sweep(_Node):
    """An experiment's swept setting: point label -> parameter overrides (`only`: the points run)."""

    name: str = ""
    points: Mapping[str, Mapping[str, Any]] = field(default_factory=FrozenDict)
    only: tuple[str, ...] | None = None

    def labels(self) -> list[str]:
        """The points run, in the configured order."""
        return [p for p in self.points if self.only is None or p in self.only]


@dataclass(frozen=True)
class PaperSetting(_Node):
    """The datasets (the papers' names) and epsilon grid a paper ran an experiment in."""

    datasets: tuple[str, ...] = ()
    epsilons: tuple[float, ...] = ()


@dataclass(frozen=True)
class Experiment(_Node):
    """`experiments.<name>`: datasets x variants x epsilons x seeds and their metrics, or an analysis."""

    _nested: ClassVar[dict[str, Any]] = {"sweep": Sweep, "paper_setting": PaperSetting}
    _named: ClassVar[bool] = True
    name: str = field(default="", kw_only=True)
    paper: str | None = None
    description: str = ""
    paper_setting: PaperSetting | None = None
    datasets: tuple[str, ...] = ()
    variants: tuple[str, ...] = ()
    epsilons: tuple[float, ...] = ()
    seeds: int | tuple[int, ...] = 1
    metrics: tuple[str, ...] = ()
    sweep: Sweep | None = None
    analysis: str | None = None
    params: Mapping[str, Any] | None = None

    @property
    def trains(self) -> bool:
        """Whether it has runs (an analysis experiment trains nothing)."""
        return self.analysis is None

    def seed_list(self) -> list[int]:
        """`seeds: n` is 0..n-1; a list names them (e.g. [3, 4] beside recorded seeds 0-2)."""
        return list(range(self.seeds)) if isinstance(self.seeds, int) else sorted(self.seeds)


@dataclass(frozen=True)
class Evaluation(_Node):
    """`evaluation`: n_samples and each metric's configured options (what differs from its `Options`)."""

    n_samples: int | None = None
    options: Mapping[str, Mapping[str, Any]] = field(default_factory=FrozenDict)

    @classmethod
    def from_json(cls, mapping: Mapping[str, Any], **extra: Any) -> Evaluation:
        options = FrozenDict({k: frozen(v) for k, v in mapping.items() if k != "n_samples"})
        return cls(n_samples=mapping.get("n_samples"), options=options, _keys=tuple(mapping))

    def to_json(self) -> dict[str, Any]:
        keys = self._keys if "options" not in self._keys else ("n_samples", *self.options)
        return {k: self.n_samples if k == "n_samples" else _encode(self.options[k]) for k in keys}

    def configured(self, metric: str) -> dict[str, Any]:
        """The options configured for `metric` (its `Options` defaults apply to the rest)."""
        return dict(_encode(self.options.get(metric) or {}))


@dataclass(frozen=True)
class Config(_Node):
    """The validated configuration (`load`, `typed`): every key a typed, frozen value."""

    _nested: ClassVar[dict[str, Any]] = {
        "data": Data,
        "datasets": (dict, Dataset),
        "evaluation": Evaluation,
        "variants": (dict, Variant),
        "experiments": (dict, Experiment),
    }
    scale: str = "paper"
    delta: float = 1e-5
    device: str = "auto"
    precision: str = "fp32"
    local_worker: int = 0
    data: Data = field(default_factory=Data)
    datasets: Mapping[str, Dataset] = field(default_factory=FrozenDict)
    evaluation: Evaluation = field(default_factory=Evaluation)
    variants: Mapping[str, Variant] = field(default_factory=FrozenDict)
    experiments: Mapping[str, Experiment] = field(default_factory=FrozenDict)

    def trained(self) -> dict[str, Experiment]:
        """The experiments with runs (not analyses), in configured order."""
        return {n: e for n, e in self.experiments.items() if e.trains}

    def dataset_entry(self, dataset: str) -> dict[str, Any] | None:
        """A declared dataset's configured mapping (`dpvae.data.declared` reads it), or None for a built-in one."""
        entry = self.datasets.get(dataset)
        return None if entry is None else entry.to_json()
