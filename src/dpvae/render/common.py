"""What the paper renderers share: the "mean ± sd (n)" cell, rows and stats of a tidy table, dataset labels,
stand-ins, run paths and the files beside a run's artifacts.

The numbers over seeds come from `dpvae.seeds` (`seed_summary`, `SeedStats`); this module only shows them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from dpvae.analyses.tidy import NOT_DP_METRIC
from dpvae.config_types import Config, as_config
from dpvae.data.standins import STANDIN_SUFFIX, is_standin
from dpvae.paths import LEDGER, run_dir_parts
from dpvae.reproductions import NOT_DP_MARK, published_dataset
from dpvae.runs import Run, split_variant
from dpvae.seeds import SeedStats

__all__ = [
    "BUILT_NOT_DP_NOTE",
    "DATASET_NAMES",
    "STANDIN_LABEL",
    "dataset_label",
    "in_order",
    "is_real_data",
    "is_standin",
    "matching",
    "mean_sd",
    "not_dp_built",
    "metric_stats",
    "real_dataset",
    "run_files",
    "run_of",
    "summary_cell",
]

#: how the renderers name the papers' datasets (keyed by the published name: `base.paper_dataset`)
DATASET_NAMES = {
    "mnist": "MNIST",
    "fashion-mnist": "Fashion-MNIST",
    "celeba": "CelebA",
    "credit": "Kaggle Credit",
    "adult": "Adult",
    "esr": "UCI ESR",
    "isolet": "UCI ISOLET",
    "twogauss": "two Gaussians",
}
STANDIN_LABEL = "stand-in data"


def mean_sd(stats: SeedStats, digits: int = 4, missing: str = "--", with_n: bool = True) -> str:
    """'mean ± sd (n=k)' over seeds; one seed has no sd to show ('mean (n=1)'); `missing` if no number."""
    if not stats.shown:
        return missing
    text = f"{stats.mean:.{digits}f}" + (f" ± {stats.sd:.{digits}f}" if stats.n > 1 else "")
    return f"{text} (n={stats.n})" if with_n else text


def matching(frame: pd.DataFrame, **where) -> pd.DataFrame:
    """The rows of `frame` whose columns equal `where`'s values (a NaN value matches NaN: non-private epsilon)."""
    for column, value in where.items():
        frame = frame[frame[column].isna() if isinstance(value, float) and pd.isna(value) else frame[column] == value]
    return frame


def metric_stats(table: pd.DataFrame, metric: str, **where) -> SeedStats:
    """Mean, sd and n over seeds of `metric`'s values in the tidy rows matching `where` (e.g. variant=...)."""
    return SeedStats.of(matching(table, metric=metric, **where)["value"])


def in_order(names: Iterable[str], order: Iterable[str]) -> list[str]:
    """`names` in the order of `order` (a paper's presentation: its label table); names it lacks last, as given."""
    position = {name: i for i, name in enumerate(order)}
    return sorted(names, key=lambda name: position.get(name, len(position)))


def is_real_data(config: Config | Mapping[str, Any], variant: str) -> bool:
    """Whether `variant` (a sweep id counts as its base) releases the real training split itself: its configured
    method is the real-data pseudo-method (`methods.real.RealData`; P3GM's "original", DP2-VAE's "Real data")."""
    from dpvae.methods.real import RealData  # here: the renderers that never ask need no method registry

    return as_config(config).variants[split_variant(variant)[0]].method == RealData.name


def real_dataset(dataset: str) -> str:
    """The dataset a stand-in stands in for ('credit-standin' -> 'credit'); any other id unchanged."""
    return dataset.removesuffix(STANDIN_SUFFIX)


def dataset_label(dataset: str, names: dict[str, str] = DATASET_NAMES) -> str:
    """'MNIST', or 'Kaggle Credit (stand-in data)' for a generated stand-in; an unknown dataset prints its id."""
    name = names.get(published_dataset(real_dataset(dataset))[0], dataset)
    return f"{name} ({STANDIN_LABEL})" if is_standin(dataset) else name


def run_of(path: str | Path) -> Run:
    """The run a per-run artifact belongs to (results/<scale>/runs/<dataset>/<variant>/eps<e>/seed<s>/...)."""
    dataset, variant, eps, seed = run_dir_parts(path)[1].split("/")
    return Run(dataset, variant, eps.removeprefix("eps"), int(seed.removeprefix("seed")))


def run_files(artifacts: Iterable[str | Path], name: str) -> list[tuple[Run, Path]]:
    """(run, file) for the file `name` beside each per-run artifact (runs/<ds>/<variant>/eps<e>/seed<s>/metrics/
    <metric>.json) where the run wrote it, in the artifacts' order."""
    found = [(run_of(path), Path(path).parent / name) for path in artifacts]
    return [(run, file) for run, file in found if file.is_file()]


def summary_cell(summary: pd.DataFrame) -> str:
    """`mean_sd` of the first row of a (filtered) `seed_summary`, '--' if it has none."""
    return mean_sd(SeedStats.of_row(summary.iloc[0])) if len(summary) else "--"


#: the footnote of a dagger on a row of the build's own runs (`not_dp_built`)
BUILT_NOT_DP_NOTE = (
    f"{NOT_DP_MARK} not DP: the run's privacy ledger ({LEDGER}, field not_dp) is marked not differentially "
    "private and says why (e.g. Ryan's un-noised public slice, a -refcode dataset's whole-set scaling); its epsilon "
    "is an accounting of the noise only, no guarantee."
)


def not_dp_built(table: pd.DataFrame, **where) -> str:
    """A dagger where a run of `table` (a tidy table) matching `where` has a ledger marked not DP, else ''."""
    marked = table[table["metric"] == NOT_DP_METRIC]
    return NOT_DP_MARK if len(matching(marked, **where)) else ""
