"""Analyses: experiments computed without training runs (dataset statistics, hyper-parameter tables,
privacy-accounting curves). Each returns a tidy table with the columns of `TIDY_COLUMNS`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

TIDY_COLUMNS = ["experiment", "dataset", "variant", "method", "epsilon", "seed", "sweep", "point",
                "metric", "classifier", "step", "value"]

AnalysisFn = Callable[[str, dict, dict], pd.DataFrame]


def tidy(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Rows -> a DataFrame with exactly TIDY_COLUMNS (missing ones empty)."""
    frame = pd.DataFrame(rows)
    for column in TIDY_COLUMNS:
        if column not in frame:
            frame[column] = None
    return frame[TIDY_COLUMNS]


def dataset_statistics(name: str, experiment: dict, context: dict) -> pd.DataFrame:
    """P3GM Table III from the prepared data: records, features, classes, % positive."""
    from dpvae.data.stats import dataset_statistics as statistics
    from dpvae.data.store import load_prepared

    names = {"N": "n_records", "n_train": "n_train", "n_test": "n_test", "n_features": "n_features",
             "n_classes": "n_classes", "pct_positive": "pct_positive"}   # -> the published metric names
    rows = []
    for dataset in experiment["datasets"]:
        stats = statistics(load_prepared(Path(context["data_root"]) / "prepared" / dataset))
        rows += [{"experiment": name, "dataset": dataset, "metric": names[k], "value": stats[k]} for k in names]
    return tidy(rows)


def p3gm_hyperparameters(name: str, experiment: dict, context: dict) -> pd.DataFrame:
    """P3GM Table IV from this configuration: DP-SGD sigma_s, lr, epochs and batch size per dataset."""
    from dpvae.runs import resolve_params

    params = experiment["params"]
    columns = {"sigma_s": "sigma_sgd", "lr": "lr", "epochs": "epochs", "batch_size": "batch_size"}
    rows = []
    for dataset in params["datasets"]:
        resolved = resolve_params(context, params["variant"], dataset, "1")
        rows += [{"experiment": name, "dataset": dataset, "variant": params["variant"], "metric": metric,
                  "value": resolved.get(key)} for metric, key in columns.items()]
    return tidy(rows)


ANALYSES: dict[str, AnalysisFn | None] = {
    "dataset_statistics": dataset_statistics,
    "p3gm_hyperparameters": p3gm_hyperparameters,
    "privae_table1": None,
    "p3gm_composition": None,
}


def run_analysis(name: str, experiment: dict, context: dict) -> pd.DataFrame:
    fn = ANALYSES[experiment["analysis"]]
    if fn is None:
        raise NotImplementedError(f"analysis '{experiment['analysis']}' is not implemented yet")
    return fn(name, experiment, context)
