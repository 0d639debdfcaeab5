"""Analyses: experiments computed without training runs (dataset statistics, hyper-parameter tables,
privacy-accounting curves, PriVAE's sensitivity table). Each module registers its analyses with
`@register_analysis`; each returns a tidy table (`tidy.TIDY_COLUMNS`)."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from dpvae.analyses.tidy import TIDY_COLUMNS, tidy
from dpvae.registry import Registry, discover

AnalysisFn = Callable[[str, dict, dict], pd.DataFrame]
ANALYSES: Registry[AnalysisFn] = Registry("analysis")

__all__ = ["ANALYSES", "TIDY_COLUMNS", "register_analysis", "run_analysis", "tidy"]


def register_analysis(name: str) -> Callable[[AnalysisFn], AnalysisFn]:
    def decorate(fn: AnalysisFn) -> AnalysisFn:
        ANALYSES.add(name, fn)
        return fn

    return decorate


def run_analysis(name: str, experiment: dict, context: dict) -> pd.DataFrame:
    """The tidy table of analysis experiment `name` (`context`: the configuration subset it reads)."""
    return ANALYSES.get(experiment["analysis"])(name, experiment, context)


discover("dpvae.analyses", skip=("tidy", "privae_table1"))
