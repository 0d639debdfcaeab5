"""End to end at smoke scale: a three-point epsilon grid on Adult rendered with epsilon as an axis, both as the
experiment's own table (figures/experiments/<experiment>) and as P3GM Table VI outside the paper's setting."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

from dpvae.paths import REPO_ROOT
from support.workflow_runs import SMOKE_FILE, snakemake

pytestmark = pytest.mark.workflow
GRID = [0.5, 1, 2]


def overlay(tmp_path) -> str:
    """The smoke configuration with P3GM's tabular experiment on Adult at three epsilons (one file, as a user
    would write it: `--configfile=FILE`)."""
    config = yaml.safe_load(SMOKE_FILE.read_text())
    config["local_worker"] = 5  # every job forks from one warm worker: seconds, not minutes, on 2 cores
    config["experiments"]["p3gm_tabular"] = {
        "seeds": 1,
        "datasets": ["adult"],
        "epsilons": GRID,
        "variants": ["privbayes"],
        "metrics": ["tabular_classifiers"],
    }
    path = tmp_path / "adult-grid.yaml"
    path.write_text(yaml.safe_dump(config))
    return f"--configfile={path}"


def test_an_epsilon_grid_on_adult_renders_with_epsilon_as_an_axis(tmp_path, mirror):
    targets = ["figures/experiments/p3gm_tabular.pdf", "figures/p3gm/table6.pdf"]
    result = snakemake("--cores", "2", overlay(tmp_path), *targets, cwd=tmp_path, mirror=mirror, repo=REPO_ROOT)
    assert result.returncode == 0, result.stderr[-4000:]
    table = pd.read_csv(tmp_path / "figures/experiments/p3gm_tabular.csv")
    auroc = table[(table["metric"] == "auroc") & (table["classifier"] == "mean4")].set_index("eps target")
    assert list(auroc.index) == GRID and (auroc["n"] == 1).all()
    assert (auroc["eps spent"] <= auroc.index + 1e-9).all() and (auroc["train s/run"] > 0).all()
    assert {p.suffix for p in (tmp_path / "figures/experiments").iterdir()} == {".pdf", ".csv", ".tex"}
    table6 = pd.read_csv(tmp_path / "figures/p3gm/table6.csv")
    assert list(table6["epsilon"]) == GRID  # one row per epsilon: nothing pooled
    assert table6.set_index("epsilon")["AUROC (paper)"].drop(1.0).isna().all()
    assert "NOT THE PAPER'S SETTING" in (tmp_path / "figures/p3gm/table6.tex").read_text()


def test_an_unknown_or_analysis_experiment_stops_before_any_job(tmp_path):
    for name, expected in (("p3gm_tabulr", "did you mean 'p3gm_tabular'"), ("p3gm_table3", "is an analysis")):
        result = snakemake("-n", f"--configfile={SMOKE_FILE}", f"figures/experiments/{name}.pdf", cwd=tmp_path)
        output = result.stdout + result.stderr
        assert result.returncode != 0 and expected in output, output[-2000:]
