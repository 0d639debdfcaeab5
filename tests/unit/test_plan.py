"""`python -m dpvae plan`: Snakemake's DAG at smoke scale in a temporary directory, one run faked as built
with a benchmark file (nothing real is built): the right jobs are counted, the built ones marked built, the
run with the same settings takes the measured estimate and says so, the others the declared one."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from dpvae.cli import main
from dpvae.config import load_config
from dpvae.paths import REPO_ROOT
from dpvae.plan import CPU_MACHINE, GPU_MACHINE, Estimate, cost_plan, describe, device_class
from dpvae.runs import run_spec
from dpvae.workflow import Plan

TARGET = "figures/privae/fig2.pdf"
SMOKE = REPO_ROOT / "tests" / "config" / "smoke.yaml"
OVERLAY = "experiments:\n  privae_clustering: {seeds: 2}\n"  # two seeds: one built, one to run
MEASURED_S = 720.0


def _plan(args: list[str], capsys) -> tuple[int, str, str]:
    code = main(["plan", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def _fake_built_run(root: Path, plan: Plan, run) -> None:
    """The prepared data and one run's train outputs, older first (Snakemake compares mtimes), with the
    train.json and benchmark file a real train job writes; no Snakemake metadata, as after a copy."""
    run_dir = root / run.path(plan.scale)
    prepared = root / plan.config["data"]["root"] / "prepared" / run.dataset
    (run_dir / "model").mkdir(parents=True)
    (run_dir / "benchmarks").mkdir()
    prepared.mkdir(parents=True)
    (run_dir / "privacy.json").write_text("{}")
    (run_dir / "train.json").write_text(
        json.dumps(
            {"spec": run_spec(plan.config, run), "seconds": MEASURED_S, "device": "cpu", "device_name": "cpu: test x2"}
        )
    )
    (run_dir / "benchmarks" / "train.tsv").write_text(f"s\th:m:s\tmax_rss\n{MEASURED_S}\t0:12:00\t100.0\n")
    for age, path in enumerate([prepared, run_dir / "model", run_dir / "privacy.json", run_dir / "train.json"]):
        os.utime(path, (1_700_000_000 + age, 1_700_000_000 + age))


@pytest.fixture(scope="module")
def faked(tmp_path_factory) -> tuple[Path, list[str], Plan, object]:
    """A working directory with one run of the target faked as built, the plan's arguments, the rules' plan
    and that run."""
    root = tmp_path_factory.mktemp("plan")
    overlay = root / "seeds.yaml"
    overlay.write_text(OVERLAY)
    plan = Plan(load_config([REPO_ROOT / "config.yaml", SMOKE, overlay]), REPO_ROOT)
    runs = plan.runs("privae_clustering", "pinwheel")
    assert len(runs) == 4  # 2 variants x 1 epsilon x 2 seeds
    built = next(r for r in runs if r.variant == "privae-pinwheel" and r.seed == 0)
    _fake_built_run(root, plan, built)
    return root, [f"--configfile={SMOKE}", f"--configfile={overlay}", f"--directory={root}"], plan, built


def test_plan_counts_built_jobs_and_takes_measured_estimates(faked):
    root, args, plan, built = faked
    result = cost_plan([TARGET], [SMOKE, root / "seeds.yaml"], root).to_dict()
    assert result["scale"] == "smoke" and result["targets"] == [TARGET]
    rows = {(r["rule"], r["group"]): r for r in result["rows"]}
    train, prepare = rows[("train", "privae · pinwheel")], rows[("prepare", "")]
    assert (train["jobs"], train["built"], train["to_run"]) == (4, 1, 3)
    assert (prepare["jobs"], prepare["built"]) == (1, 1)
    evaluate = rows[("evaluate", "pinwheel_scatter · pinwheel")]
    assert (evaluate["jobs"], evaluate["built"]) == (4, 0)  # its metrics are not there: to run
    assert result["total"]["built"] == 2 and result["total"]["jobs"] == sum(r["jobs"] for r in result["rows"])
    assert result["per_target"][0]["jobs"] == result["total"]["jobs"]

    # seed 1 of the same variant (same settings) is measured on the benchmark's device; the KL variant is declared
    declared_min = plan.train_resources(built.dataset, "privae-kl-pinwheel", built.eps, 0).runtime
    for machine in (GPU_MACHINE, CPU_MACHINE):
        assert train["estimate"][machine] == (
            f"measured: 1 run on cpu: test x2 (1 jobs); declared {declared_min} min (2 jobs)"
        )
        assert train["sources"][machine] == {"measured": 1, "declared": 2, "none": 0}
    assert train[CPU_MACHINE]["hours"] == pytest.approx((MEASURED_S + 2 * declared_min * 60) / 3600, abs=1e-3)
    assert train[GPU_MACHINE]["gpu_hours"] == 0  # PriVAE asks for no GPU, and ran on none
    assert Path.cwd() != root  # Snakemake's working directory is given back


def test_cli_prints_the_table_and_markdown(faked, capsys):
    _, args, _, _ = faked
    code, text, err = _plan([*args, TARGET], capsys)
    assert code == 0, err
    assert re.search(r"^train +privae · pinwheel +4 +1 +3 .*measured: 1 run on cpu: test x2", text, re.M)
    assert re.search(r"^total +\d+ +2 ", text, re.M)
    code, markdown, _ = _plan([*args, "--markdown", TARGET], capsys)
    assert code == 0 and markdown.splitlines()[2].startswith(f"| `{TARGET}` | ")


@pytest.mark.parametrize(
    "args, says",
    [
        (["figures/privae/fgi2.pdf"], "no item 'fgi2' in paper 'privae'"),
        (["results/nothing.txt"], "results/nothing.txt: no rule makes it"),
        (["--configfile=missing.yaml", TARGET], "config file not found: missing.yaml"),
    ],
)
def test_bad_input_is_one_error_line(args, says, tmp_path, capsys):
    code, out, err = _plan([f"--directory={tmp_path}", *args], capsys)
    assert code == 2 and out == ""
    assert err.startswith("dpvae: error: ") and says in err and err.count("dpvae: error:") == 1


def test_bad_config_names_the_key(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("experiments:\n  privae_clustering: {seeds: -1}\n")
    code, _, err = _plan([f"--configfile={bad}", f"--directory={tmp_path}", TARGET], capsys)
    assert code == 2 and err.startswith("dpvae: error: ") and "privae_clustering.seeds" in err


def test_estimate_preferences_and_descriptions():
    assert [device_class(d) for d in ("cuda: NVIDIA H200", "cpu: x86_64 x2", "cpu: x86_64 x16", "")] == [
        "cuda",
        "cpu2",
        "cpu",
        "",
    ]
    gpu = Estimate(100.0, "measured", True, ("cuda: NVIDIA H200",), frozenset({"a", "b"}))
    assert describe([gpu, gpu]) == "measured: 2 runs on cuda: NVIDIA H200"
    assert (
        describe([gpu, Estimate(600.0, "declared"), Estimate(None, "none")])
        == "measured: 2 runs on cuda: NVIDIA H200 (1 jobs); declared 10 min (1 jobs); no runtime declared (1 jobs)"
    )


def test_each_papers_recorded_run_keeps_its_own_measurement(tmp_path):
    """P3GM's and DP²-VAE's "real" baselines are both filed as dataset "mnist", variant "real", no ε, seed 0:
    two different runs (mnist-p3gm under p3gm-cpu.yaml, mnist under dp2vae-cpu-build0.yaml). The later row
    must not hide the other paper's: each run's training time measures its own train job."""
    import pandas as pd

    from dpvae.plan import Measurements, Settings
    from dpvae.reproductions import COLUMNS
    from dpvae.runs import Run

    def row(paper: str, item: str, overlay: str, seconds: float, date: str) -> dict:
        values = {"paper": paper, "item": item, "dataset": "mnist", "method": "original", "metric": "accuracy"}
        values |= {"seed": 0, "value": 0.9, "scale": "paper", "variant": "real", "device": "cpu: test x2"}
        values |= {"command": f"snakemake --configfile=workflow/campaigns/{overlay} x", "wall_s": seconds, "date": date}
        return {c: values.get(c, "") for c in COLUMNS}

    pd.DataFrame([row("p3gm", "table7", "p3gm-cpu.yaml", 11.0, "2026-11-01")]).to_csv(
        tmp_path / "p3gm.csv", index=False
    )
    pd.DataFrame([row("dp2vae", "table1", "dp2vae-cpu-build0.yaml", 22.0, "2026-11-20")]).to_csv(
        tmp_path / "dp2vae.csv", index=False
    )
    plan = Plan(load_config([REPO_ROOT / "config.yaml"]), REPO_ROOT)
    measured = Measurements(Settings(plan), tmp_path)
    measured.add_recorded(tmp_path)
    p3gm_real = {"dataset": "mnist-p3gm", "variant": "real", "eps": "inf", "seed": "0"}
    assert Run("mnist-p3gm", "real", "inf", 0) in plan.all_runs()
    dp2vae_real = {**p3gm_real, "dataset": "mnist"}
    for wildcards, seconds in ((p3gm_real, 11.0), (dp2vae_real, 22.0)):
        found = measured.by_key.get(measured.settings.key("train", wildcards), {})
        assert [m.seconds for m in found.values()] == [seconds], wildcards["dataset"]
