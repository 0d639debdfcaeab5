"""What every renderer gets (`RenderContext`), the renderer registry, and helpers shared by the papers.

A renderer lives in a module of the paper's package `render/<paper>/` (the audit item's in `render/audit.py`)
and registers itself for one item key with `@register_renderer`; it reads only tidy tables, per-run artifacts
and the published numbers of its item's experiments (`ctx.experiment`, `ctx.experiment_for(role)`: never by
name), and writes through `render.output` (which labels every item that is not at paper scale).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pandas as pd

from dpvae.config_types import Config, as_config
from dpvae.items import Item
from dpvae.registry import Registry, discover
from dpvae.render.output import PAPER_LABEL
from dpvae.render.published import load_published
from dpvae.render.setting import HANDLES, Setting
from dpvae.reproductions import published_dataset, published_method, recorded
from dpvae.runs import split_variant

Renderer = Callable[["RenderContext"], None]
RENDERERS: Registry[Renderer] = Registry("renderer")


def register_renderer(key: str, handles: tuple[str, ...] = ()) -> Callable[[Renderer], Renderer]:
    """Function decorator: render item `key` ('<paper>/<item id>') with `fn` (duplicates refused).

    `handles`: what of a setting the paper did not use the renderer shows correctly ("datasets", "epsilons";
    `render.setting`); an item configured with anything else is refused with one line while planning.
    """
    unknown = set(handles) - HANDLES
    if unknown:
        raise ValueError(f"renderer {key}: unknown handles {sorted(unknown)}; known: {sorted(HANDLES)}")

    def decorate(fn: Renderer) -> Renderer:
        fn.handles = frozenset(handles)
        RENDERERS.add(key, fn)
        return fn

    return decorate


@dataclass
class RenderContext:
    item: Item
    prefix: str  # figures/<paper>/<item>
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)  # experiment -> tidy table
    artifacts: list[str] = field(default_factory=list)
    config: Config = field(default_factory=Config)  # the experiments, their variants, delta and scale (`ItemSpec`)
    # experiment -> how its configured setting compares with the paper's: checked while planning (`Rules`)
    settings: dict[str, Setting] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.config = as_config(self.config)  # a test's mapping is typed (nothing validated)

    @property
    def experiment(self) -> str:
        """The item's one experiment (`items.py` names it; its configuration is `ctx.config.experiments`)."""
        if len(self.item.experiments) != 1:
            raise ValueError(f"item {self.item.key} shows {len(self.item.experiments)} experiments, not one")
        return self.item.experiments[0]

    def experiment_for(self, role: str) -> str:
        """The experiment in `role` of an item with several experiments (`Item.roles` in `items.py`)."""
        return self.item.experiment_for(role)

    def variants(self, experiment: str | None = None) -> list[str]:
        """The variants the experiment's config entry runs (sweep points folded into their base), in its order;
        by default those of the item's one experiment."""
        configured = self.config.experiments[experiment or self.experiment].variants
        return list(dict.fromkeys(split_variant(v)[0] for v in configured))

    def published(self) -> pd.DataFrame:
        """The paper's numbers for this item (shown only as a column or marker labelled "paper")."""
        frame = load_published(self.item.paper)
        return frame[frame["item"] == self.item.id]

    def setting(self, experiment: str) -> Setting:
        """How the experiment's configured datasets and epsilons compare with the paper's (`render.setting`),
        as planning found it; a context built without planning (a test) is in the paper's setting."""
        return self.settings.get(experiment) or Setting(experiment)

    def published_method(self, variant: str) -> str:
        """The method id this item's paper publishes our `variant` under (the variant's `published_as`)."""
        variants = {name: entry.to_json() for name, entry in self.config.variants.items()}
        return published_method(self.item.paper, variant, variants)

    def published_methods(self) -> list[str]:
        """The methods this item's published numbers show, in the published file's order (the paper's)."""
        return list(dict.fromkeys(self.published()["method"]))

    def recorded(self) -> pd.DataFrame:
        """This item's recorded paper-scale reproductions (mean, sd, n per published key): the "ours (paper
        scale)" column, whatever scale the current build is at."""
        return recorded(self.item.paper, self.item.id)


def paper_dataset(dataset: str) -> str:
    """The dataset name the published CSVs use for one of our dataset ids."""
    return published_dataset(dataset)[0]


def side_by_side(
    reproduced: pd.DataFrame, published: pd.DataFrame, metrics: dict[str, str], index: str = "dataset"
) -> pd.DataFrame:
    """One row per `index` value; for each metric a reproduced column and a 'paper' column."""
    published = published.assign(key=published[index])
    table = pd.DataFrame({index: list(dict.fromkeys(reproduced[index]))})
    key = table[index].map(paper_dataset) if index == "dataset" else table[index]
    for metric, label in metrics.items():
        ours = reproduced[reproduced["metric"] == metric].set_index(index)["value"]
        theirs = published[published["metric"] == metric].set_index("key")["value"]
        table[label] = table[index].map(ours)
        table[f"{label} ({PAPER_LABEL})"] = key.map(theirs)
    return table


def load_renderers() -> Registry[Renderer]:
    """Import every `render/<paper>.py` and every module of each `render/<paper>/` package, so that their
    renderers are registered; return the registry."""
    discover("dpvae.render")
    for package in discover("dpvae.render", packages=True):
        discover(f"dpvae.render.{package}")
    return RENDERERS
