"""What an item's render job reads (`ItemSpec`, written by the rule `item_spec`): its tidy tables and
artifacts, the configuration subset its renderer uses (a `Config` holding its experiments, their variants, delta
and scale) and how each experiment's setting compares with the paper's. `from_json(x).to_json() == x`, key for
key and in order (the spec file and the hash stamped from it stay byte-identical).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dpvae.config_types import Config, Experiment, Variant
from dpvae.render.setting import Setting
from dpvae.runspec import FrozenDict
from dpvae.specs import spec_field

#: the keys of an item's configuration subset, in the order its spec writes them
CONTEXT_KEYS = ("experiments", "delta", "scale", "variants")


def render_config(
    experiments: Mapping[str, Experiment], variants: Mapping[str, Variant], delta: float, scale: str
) -> Config:
    """The configuration subset a renderer reads: the item's experiments, their variants, delta and scale."""
    return Config(
        scale=scale,
        delta=delta,
        variants=FrozenDict(variants),
        experiments=FrozenDict(experiments),
        _keys=CONTEXT_KEYS,
    )


@dataclass(frozen=True)
class ItemSpec:
    """One item's render inputs."""

    item: str  # <paper>/<item id>
    scale: str
    tables: Mapping[str, tuple[str, ...]] = field(default_factory=FrozenDict)  # experiment -> tidy tables
    artifacts: tuple[str, ...] = ()
    context: Config = field(default_factory=Config)
    settings: Mapping[str, Setting] = field(default_factory=FrozenDict)

    def to_json(self) -> dict[str, Any]:
        return {
            "item": self.item,
            "scale": self.scale,
            "tables": {e: list(paths) for e, paths in self.tables.items()},
            "artifacts": list(self.artifacts),
            "context": self.context.to_json(),
            "settings": {name: s.to_json() for name, s in self.settings.items()},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], what: str = "item spec") -> ItemSpec:
        return cls(
            spec_field(data, "item", what),
            spec_field(data, "scale", what),
            FrozenDict({e: tuple(p) for e, p in spec_field(data, "tables", what).items()}),
            tuple(spec_field(data, "artifacts", what)),
            Config.from_json(spec_field(data, "context", what)),
            FrozenDict({n: Setting.from_json(s) for n, s in spec_field(data, "settings", what).items()}),
        )
