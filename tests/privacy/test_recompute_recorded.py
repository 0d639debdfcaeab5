"""`benchmarks/recompute_ledgers.py --recorded` on a tiny reproductions CSV whose commits live in a temporary git
repository: the run is rebuilt from the config at the recorded commit (`-dirty` read as the commit), its ledger
planned with this checkout's code; a paper ε that moves above the recorded target fails the run (exit status 1),
and a commit whose config no longer validates falls back to this checkout's, saying so."""

from __future__ import annotations

import csv
import importlib.util
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from dpvae.methods.p3gm import P3GM
from dpvae.paths import REPO_ROOT

HEADER = (
    "paper,item,dataset,method,epsilon,metric,classifier,setting,seed,value,scale,variant,device,commit,command,"
    "wall_s,date"
)
OVERLAY = "experiments:\n  p3gm_dimension: {seeds: 1, datasets: [twogauss-d5]}\n"


@pytest.fixture(scope="module")
def recompute():
    """The benchmark script as a module."""
    spec = importlib.util.spec_from_file_location(
        "recompute_ledgers", REPO_ROOT / "benchmarks" / "recompute_ledgers.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _commit(repo: Path, files: dict[str, str]) -> str:
    for name, text in files.items():
        (repo / name).write_text(text)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "add", "-A"], check=True, capture_output=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True, capture_output=True)
    return subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> tuple[Path, Path, str, str]:
    """(a git repository, a reproductions folder, the commit of the paper's config, one that fails to validate)."""
    root = tmp_path_factory.mktemp("recorded")
    repo = root / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    config = (REPO_ROOT / "config.yaml").read_text()
    good = _commit(repo, {"config.yaml": config, "overlay.yaml": OVERLAY})
    bad = _commit(repo, {"config.yaml": config + "\nno_such_key: 1\n"})
    reproductions = root / "reproductions"
    reproductions.mkdir()
    command = "snakemake --configfile=overlay.yaml t"
    rows = [
        f"p3gm,fig6,twogauss,p3gm,1,auroc,,d=5,0,0.5,paper,p3gm,,{good}-dirty,{command},1,d",
        f"p3gm,fig6,twogauss,p3gm,1,auroc,,d=5,1,0.5,paper,p3gm,,{good},{command},1,d",
        f"p3gm,fig6,twogauss,privbayes,1,auroc,,d=5,0,0.5,paper,privbayes,,{bad},snakemake t,1,d",
        f"p3gm,fig6,twogauss,original,,auroc,,d=5,0,0.5,paper,real,,{good},{command},1,d",
    ]
    (reproductions / "p3gm.csv").write_text("\n".join([HEADER, *rows]) + "\n")
    return repo, reproductions, good, bad


def _rows(recompute, recorded, data: Path) -> tuple[list[dict], int]:
    repo, reproductions, _, _ = recorded
    return recompute.recompute_recorded(reproductions, repo, recompute.Facts(data, None))


def test_recorded_ledgers_are_recomputed_from_the_recorded_config(recompute, recorded, tmp_path):
    rows, analyses = _rows(recompute, recorded, tmp_path / "data")
    _, _, good, bad = recorded
    assert analyses == 0 and [(r["variant"], r["rows"]) for r in rows] == [("p3gm", 2), ("privbayes", 1)]
    p3gm, privbayes = rows
    assert p3gm["dataset_id"] == "twogauss-d5" and p3gm["commits"] == good[:7] and p3gm["facts"] == "prepared"
    assert p3gm["config"] == f"{good[:7]}:config.yaml+overlay.yaml" and not p3gm["error"]
    assert p3gm["paper_equals_target"] == "true" == p3gm["paper_within_target"]
    assert 1 < float(p3gm["sound_epsilon"]) < 2 and p3gm["not_dp"] == ""
    assert privbayes["config"].startswith(f"this checkout's config.yaml ({bad[:7]}:config.yaml fails: ")
    assert "no_such_key" in privbayes["config"] and float(privbayes["sound_epsilon"]) == pytest.approx(1.5)
    text, status = recompute.summary(rows, analyses)
    assert status == 0 and "2 distinct private configurations recorded (3 rows" in text
    out = tmp_path / "out.csv"
    assert recompute.write_csv(rows, out) == out.read_text()
    assert list(csv.DictReader(out.open()))[0]["spec_sha"] == p3gm["spec_sha"]


def test_a_paper_epsilon_that_moves_above_the_target_fails(recompute, recorded, tmp_path, monkeypatch):
    """A planted overspend (P3GM's plan calibrated to 1.1 times the target) is caught: exit status 1, named."""
    planned = P3GM.planned_ledger

    def overspending(self, params, spec, facts):
        return planned(self, params, replace(spec, epsilon=1.1 * spec.epsilon), facts)

    monkeypatch.setattr(P3GM, "planned_ledger", overspending)
    rows, analyses = _rows(recompute, recorded, tmp_path / "data")
    p3gm = rows[0]
    assert p3gm["paper_within_target"] == "false" and float(p3gm["paper_epsilon"]) > 1
    text, status = recompute.summary(rows, analyses)
    assert status == 1 and "OVER TARGET: p3gm twogauss p3gm" in text
