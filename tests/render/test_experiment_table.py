"""figures/experiments/<experiment>: one table for any experiment, from its tidy tables and benchmark files."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from dpvae.analyses.tidy import tidy
from dpvae.errors import DataError
from dpvae.render.experiment import render_experiment
from dpvae.specs import ExperimentSpec


def write_run(root, dataset: str, variant: str, eps: str, seed: int, seconds: dict[str, float]) -> dict:
    run = root / "runs" / dataset / variant / f"eps{eps}" / f"seed{seed}"
    (run / "benchmarks").mkdir(parents=True)
    paths = []
    for name, s in seconds.items():
        path = run / "benchmarks" / f"{name}.tsv"
        path.write_text(f"s\th:m:s\tmax_rss\n{s}\t0:00:01\t10.0\n")
        paths.append(str(path))
    return {"dir": str(run), "benchmarks": paths}


def test_a_users_experiment_renders_every_dataset_epsilon_and_metric(tmp_path):
    rows, runs = [], []
    for eps in (0.5, 1.0, 2.0):
        for seed in (0, 1, 2):
            base = {"experiment": "mine", "dataset": "breast-cancer", "variant": "p3gm", "method": "p3gm"}
            base |= {"epsilon": eps, "seed": seed}
            rows += [
                {**base, "metric": "auroc", "classifier": "mean4", "value": eps + seed},
                {**base, "metric": "epsilon_spent", "value": eps},
                {**base, "metric": "epsilon_spent_paper", "value": eps},
                {**base, "metric": "epsilon_spent_sound", "value": 2 * eps},
                {**base, "metric": "recon_loss", "step": 1, "value": 9.0},  # a curve: left to its items
                {**base, "metric": "classifier_repeats", "value": 5.0},  # one protocol for every run: a note
                {**base, "metric": "fid_n_samples", "value": 100.0 * (1 + seed)},  # protocol that varies: rows
            ]
            runs.append(
                write_run(tmp_path, "breast-cancer", "p3gm", f"{eps:g}", seed, {"train": 2.0, "evaluate-x": 1.0})
            )
    ryan = {"experiment": "mine", "dataset": "breast-cancer", "variant": "ryan", "method": "ryan", "epsilon": 1.0}
    rows += [{**ryan, "seed": 0, "metric": "auroc", "classifier": "mean4", "value": 0.7}]
    rows += [{**ryan, "seed": 0, "metric": "not_dp", "value": 1.0}]  # its ledger is marked not DP
    runs.append(write_run(tmp_path, "breast-cancer", "ryan", "1", 0, {"train": 1.0}))
    base = {"experiment": "mine", "dataset": "breast-cancer", "variant": "real", "method": "real", "seed": 0}
    rows.append({**base, "metric": "auroc", "classifier": "mean4", "value": 0.9})
    runs.append(write_run(tmp_path, "breast-cancer", "real", "inf", 0, {"train": 0.5}))
    table = tmp_path / "mine.csv"
    tidy(rows).to_csv(table, index=False)
    spec = {"experiment": "mine", "description": "my data", "scale": "smoke", "delta": 1e-5, "tables": [str(table)]}
    spec |= {"runs": runs, "left_out": [], "items": []}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    render_experiment(tmp_path / "spec.json", tmp_path / "out")
    out = pd.read_csv(tmp_path / "out.csv")
    assert {"pdf", "tex"} <= {p.suffix[1:] for p in tmp_path.glob("out.*")}
    assert set(out["metric"]) == {"auroc", "fid_n_samples"}  # ledger rows become columns; curves are left out
    out = out[out["metric"] == "auroc"]
    p3gm = out[out["variant"] == "p3gm"].set_index("eps target")
    assert list(p3gm.index) == [0.5, 1.0, 2.0]
    assert p3gm.loc[2.0, "mean"] == pytest.approx(3.0) and p3gm.loc[2.0, "sd"] == pytest.approx(1.0)
    assert (p3gm["n"] == 3).all() and p3gm.loc[0.5, "eps spent (sound)"] == pytest.approx(1.0)
    assert (p3gm["eps spent (paper)"] == p3gm.index).all()
    assert (p3gm["train s/run"] == 2.0).all() and (p3gm["total s/run"] == 3.0).all()
    real = out[out["variant"] == "real"].iloc[0]
    assert pd.isna(real["eps spent"]) and real["n"] == 1 and real["total s/run"] == 0.5
    tex = (tmp_path / "out.tex").read_text()
    assert "Experiment 'mine': my data" in tex and r"the same for every run: classifier\_repeats = 5." in tex
    flat = " ".join(tex.split())
    assert "Not a DP release: mean, sd and n are computed without noise on the dataset's test split" in flat
    assert "the rows of real (the real training split itself, no model) read the training split" in flat
    assert "\\dag{} not DP: the run's privacy ledger (privacy.json, field not" in flat
    marks = pd.read_csv(tmp_path / "out.csv", keep_default_na=False).set_index("variant")["not DP"]
    assert marks.loc["ryan"] == "\u2020" and set(marks.drop("ryan")) == {""}  # the dagger only where the ledger says


def test_an_experiment_without_rows_is_refused_naming_its_tables(tmp_path):
    table = tmp_path / "empty.csv"
    tidy([]).to_csv(table, index=False)
    spec = ExperimentSpec("mine", "", "smoke", 1e-5, tables=(str(table),))
    (tmp_path / "spec.json").write_text(json.dumps(spec.to_json()))
    with pytest.raises(DataError, match="experiment 'mine': its tidy tables hold no rows .*empty.csv"):
        render_experiment(tmp_path / "spec.json", tmp_path / "out")
