"""What the paper renderers share: the "mean ± sd (n)" cell, dataset labels, stand-ins and run paths.

The numbers over seeds come from `dpvae.seeds` (`seed_summary`, `SeedStats`); this module only shows them.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from dpvae.data.standins import STANDIN_SUFFIX, is_standin
from dpvae.paths import run_dir_parts
from dpvae.reproductions import published_dataset
from dpvae.runs import Run
from dpvae.seeds import SeedStats

__all__ = [
    "DATASET_NAMES",
    "STANDIN_LABEL",
    "dataset_label",
    "is_standin",
    "mean_sd",
    "real_dataset",
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


def summary_cell(summary: pd.DataFrame) -> str:
    """`mean_sd` of the first row of a (filtered) `seed_summary`, '--' if it has none."""
    return mean_sd(SeedStats.of_row(summary.iloc[0])) if len(summary) else "--"
