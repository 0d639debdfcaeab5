"""PriVAE analyses (registration only: the computation, which needs torch, is imported on use)."""

from __future__ import annotations

import pandas as pd

from dpvae.analyses import register_analysis
from dpvae.config_types import Experiment
from dpvae.specs import AnalysisContext


@register_analysis("privae_table1")
def privae_table1(name: str, experiment: Experiment, context: AnalysisContext) -> pd.DataFrame:
    """PriVAE Table 1: sensitivity and noise scale, analytic and measured (analyses.privae_table1)."""
    from dpvae.analyses.privae_table1 import privae_table1 as analysis

    return analysis(name, experiment, context)
