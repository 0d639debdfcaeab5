"""Tidy tables: the one long format every aggregated, analysed and rendered table uses."""

from __future__ import annotations

from typing import Any

import pandas as pd

TIDY_COLUMNS = [
    "experiment",
    "dataset",
    "variant",
    "method",
    "epsilon",
    "seed",
    "sweep",
    "point",
    "metric",
    "classifier",
    "step",
    "value",
]
#: the metric of a run whose ledger is marked not DP (`not_dp`, value 1; `tables.aggregate`): its rows show a dagger
#: and the run's privacy.json says why
NOT_DP_METRIC = "not_dp"


def tidy(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Rows -> a DataFrame with exactly TIDY_COLUMNS (missing ones empty)."""
    frame = pd.DataFrame(rows)
    for column in TIDY_COLUMNS:
        if column not in frame:
            frame[column] = None
    return frame[TIDY_COLUMNS]
