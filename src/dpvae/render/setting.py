"""The paper's setting of an experiment against its configuration, and the check that keeps a paper item
from mislabelling.

A paper's experiment states the setting its paper used (`paper_setting` in config.yaml: the papers' names of
its datasets and its epsilon grid). Rendered on other data or another grid (a config overlay), a renderer
either handles it (epsilon and dataset stay axes, the paper's title and published numbers are dropped for data
the paper did not use, the page says "not the paper's setting"), and declares so at registration
(`register_renderer(key, handles=("datasets", "epsilons"))`), or the item is refused with one line naming
what it cannot show. The check runs once, while planning (`dpvae.workflow.Rules`); the render job reads its
outcome, each experiment's `Setting`, from the item's spec.
"""

from __future__ import annotations

from dataclasses import dataclass

from dpvae.errors import ConfigError
from dpvae.paths import experiment_prefix
from dpvae.reproductions import published_dataset

NOT_PAPER = "not the paper's setting"
HANDLES = frozenset({"datasets", "epsilons"})


@dataclass(frozen=True)
class Setting:
    """How an experiment's configured datasets and epsilons compare with its paper's."""

    experiment: str
    foreign_datasets: tuple[str, ...] = ()  # our ids of data the paper did not use (stand-ins count as theirs)
    foreign_epsilons: tuple[float, ...] = ()  # configured target epsilons outside the paper's grid
    paper_datasets: frozenset[str] = frozenset()
    paper_epsilons: tuple[float, ...] = ()

    def to_json(self) -> dict:
        """The form an item's spec carries it in (`from_json` reads it back)."""
        return {
            "experiment": self.experiment,
            "foreign_datasets": list(self.foreign_datasets),
            "foreign_epsilons": list(self.foreign_epsilons),
            "paper_datasets": sorted(self.paper_datasets),
            "paper_epsilons": list(self.paper_epsilons),
        }

    @classmethod
    def from_json(cls, data: dict) -> Setting:
        return cls(
            data["experiment"],
            tuple(data["foreign_datasets"]),
            tuple(data["foreign_epsilons"]),
            frozenset(data["paper_datasets"]),
            tuple(data["paper_epsilons"]),
        )

    @property
    def is_paper(self) -> bool:
        return not self.foreign_datasets and not self.foreign_epsilons

    def paper_dataset(self, dataset: str) -> bool:
        """Whether the paper used `dataset` (one of our ids; unknown experiments: every dataset)."""
        return not self.paper_datasets or published_dataset(dataset)[0] in self.paper_datasets

    def paper_epsilon(self, epsilon: float) -> bool:
        return not self.paper_epsilons or any(abs(float(epsilon) - e) < 1e-9 for e in self.paper_epsilons)

    def notes(self) -> list[str]:
        """The on-page line saying how this differs from the paper (none in the paper's setting)."""
        if self.is_paper:
            return []
        parts = []
        if self.foreign_datasets:
            parts.append(
                f"data the paper did not use ({', '.join(self.foreign_datasets)}: no title or published number "
                "of the paper applies to it)"
            )
        if self.foreign_epsilons:
            parts.append(
                f"epsilons {_eps(self.foreign_epsilons)} outside the paper's grid ({_eps(self.paper_epsilons)}); "
                "epsilon is shown per row / on the axis"
            )
        return [f"{NOT_PAPER.upper()}: experiment '{self.experiment}' runs " + " and ".join(parts) + "."]


def _eps(values) -> str:
    return ", ".join(f"{float(v):g}" for v in values)


def experiment_setting(experiment: str, exp: dict) -> Setting:
    """The Setting of one configured experiment (the paper's setting where it states no `paper_setting`)."""
    paper = exp.get("paper_setting")
    if not paper or "analysis" in exp:
        return Setting(experiment)
    datasets, epsilons = frozenset(paper["datasets"]), tuple(float(e) for e in paper["epsilons"])
    foreign = tuple(d for d in exp.get("datasets", ()) if published_dataset(d)[0] not in datasets)
    grid = tuple(float(e) for e in exp.get("epsilons", ()))
    outside = tuple(e for e in grid if not any(abs(e - p) < 1e-9 for p in epsilons))
    return Setting(experiment, foreign, outside, datasets, epsilons)


def setting_problem(key: str, experiments: dict[str, dict], handles: frozenset[str] | tuple[str, ...]) -> str | None:
    """One line naming what item `key` cannot show of its experiments' configuration, or None."""
    for name, exp in experiments.items():
        setting = experiment_setting(name, exp)
        if setting.foreign_datasets and "datasets" not in handles:
            return (
                f"{key} cannot show experiments.{name}.datasets {', '.join(setting.foreign_datasets)}: it is drawn "
                f"for the paper's data ({', '.join(sorted(setting.paper_datasets))}) only; "
                f"{experiment_prefix(name)}.pdf tables any data"
            )
        if setting.foreign_epsilons and "epsilons" not in handles:
            return (
                f"{key} cannot show experiments.{name}.epsilons {_eps(setting.foreign_epsilons)}: it is drawn at the "
                f"paper's epsilon {_eps(setting.paper_epsilons)} only; {experiment_prefix(name)}.pdf tables any grid"
            )
    return None


def checked_settings(
    key: str, experiments: dict[str, dict], handles: frozenset[str] | tuple[str, ...]
) -> dict[str, Setting]:
    """Each experiment's Setting for item `key`; a ConfigError (one line) if its renderer cannot show one."""
    if problem := setting_problem(key, experiments, handles):
        raise ConfigError(problem)
    return {name: experiment_setting(name, exp) for name, exp in experiments.items()}
