"""Analyses: experiments computed without training runs (dataset statistics, hyper-parameter tables,
privacy-accounting curves, PriVAE's sensitivity table). Each returns a tidy table (`tidy.TIDY_COLUMNS`)."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from dpvae.analyses.p3gm import dataset_statistics, p3gm_composition, p3gm_hyperparameters
from dpvae.analyses.tidy import TIDY_COLUMNS, tidy

AnalysisFn = Callable[[str, dict, dict], pd.DataFrame]


def privae_table1(name: str, experiment: dict, context: dict) -> pd.DataFrame:
    """PriVAE Table 1 (imported on use: it needs torch, which config validation should not load)."""
    from dpvae.analyses.privae_table1 import privae_table1 as analysis

    return analysis(name, experiment, context)

__all__ = ["ANALYSES", "TIDY_COLUMNS", "run_analysis", "tidy"]

ANALYSES: dict[str, AnalysisFn | None] = {
    "dataset_statistics": dataset_statistics,
    "p3gm_hyperparameters": p3gm_hyperparameters,
    "privae_table1": privae_table1,
    "p3gm_composition": p3gm_composition,
}


def run_analysis(name: str, experiment: dict, context: dict) -> pd.DataFrame:
    """The tidy table of analysis experiment `name` (`context`: the configuration subset it reads)."""
    fn = ANALYSES[experiment["analysis"]]
    if fn is None:
        raise NotImplementedError(f"analysis '{experiment['analysis']}' is not implemented yet")
    return fn(name, experiment, context)
