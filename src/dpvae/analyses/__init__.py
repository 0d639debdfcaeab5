"""Analyses: experiments computed without training runs (dataset statistics, hyper-parameter tables,
privacy-accounting curves, PriVAE's sensitivity table). Each module registers its analyses with
`@register_analysis`; each returns a tidy table (`tidy.TIDY_COLUMNS`)."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from dpvae.analyses.tidy import TIDY_COLUMNS, tidy
from dpvae.config_types import Experiment
from dpvae.registry import Registry, discover
from dpvae.specs import AnalysisContext

AnalysisFn = Callable[[str, Experiment, AnalysisContext], pd.DataFrame]
ANALYSES: Registry[AnalysisFn] = Registry("analysis")

__all__ = ["ANALYSES", "TIDY_COLUMNS", "register_analysis", "run_analysis", "tidy"]


def register_analysis(name: str) -> Callable[[AnalysisFn], AnalysisFn]:
    def decorate(fn: AnalysisFn) -> AnalysisFn:
        ANALYSES.add(name, fn)
        return fn

    return decorate


def run_analysis(context: AnalysisContext) -> pd.DataFrame:
    """The tidy table of the analysis experiment of `context` (the configuration subset it reads)."""
    experiment = context.experiment
    return ANALYSES.get(experiment.analysis)(experiment.name, experiment, context)


discover("dpvae.analyses", skip=("tidy", "privae_table1"))
