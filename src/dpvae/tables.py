"""Tidy tables from run artifacts: one per (experiment, dataset, variant), joined per (experiment, dataset).

Bookkeeping only — JSON in, CSV out, with pandas — so that the hundreds of aggregation jobs of a workflow
start in a fraction of a second (no torch, no method registry).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from dpvae.analyses.tidy import NOT_DP_METRIC, TIDY_COLUMNS, tidy
from dpvae.errors import DataError
from dpvae.files import atomic_write
from dpvae.paths import ledger_file, metric_file, train_record
from dpvae.runs import split_variant
from dpvae.runspec import RunSpec
from dpvae.specs import AggregateSpec


def read_spec(run_dir: str | Path) -> RunSpec:
    """The spec a run was trained with (from its train.json)."""
    path = train_record(Path(run_dir))
    if not path.is_file():
        raise DataError(f"{path}: missing; train the run first (snakemake builds it)")
    return RunSpec.from_dict(json.loads(path.read_text())["spec"], f"{path}: spec")


def aggregate(spec_path: str | Path, out: str | Path) -> pd.DataFrame:
    """One tidy table of every metric of every run of an experiment on one dataset (+ the spent epsilons, and
    `NOT_DP_METRIC` = 1 for a run whose ledger is marked not DP)."""
    spec = AggregateSpec.from_json(json.loads(Path(spec_path).read_text()), str(spec_path))
    experiment, exp = spec.experiment, spec.config
    sweep_name = exp.sweep.name if exp.sweep else None
    rows = []
    for run_dir in map(Path, spec.runs):
        run = read_spec(run_dir)
        base = {
            "experiment": experiment,
            "dataset": run.dataset,
            "variant": run.variant,
            "method": run.method,
            "epsilon": run.epsilon,
            "seed": run.seed,
            "sweep": sweep_name,
            "point": (split_variant(run.variant)[1] or (None, None))[1],
        }
        ledger = json.loads(ledger_file(run_dir).read_text())
        if ledger.get("epsilon") is not None:
            rows.append({**base, "metric": "epsilon_spent", "value": ledger["epsilon"]})
            for kind in ("paper", "sound"):
                if ledger.get(kind):
                    rows.append({**base, "metric": f"epsilon_spent_{kind}", "value": ledger[kind]["epsilon"]})
        if ledger.get("not_dp"):
            rows.append({**base, "metric": NOT_DP_METRIC, "value": 1.0})
        for metric in exp.metrics:
            result = json.loads(metric_file(run_dir, metric).read_text())
            rows += [{**base, **row} for row in result["rows"]]
    table = tidy(rows)
    atomic_write(out, lambda tmp: table.to_csv(tmp, index=False))
    return table


def combine(tables: list[str | Path], out: str | Path) -> pd.DataFrame:
    """Concatenate tidy tables (one per variant) into one, in the given order."""
    table = tidy([]) if not tables else pd.concat([pd.read_csv(p) for p in tables], ignore_index=True)
    atomic_write(out, lambda tmp: table[TIDY_COLUMNS].to_csv(tmp, index=False))
    return table
