"""`python -m dpvae plan`: Snakemake's DAG at smoke scale in a temporary directory, one run faked as built
with a benchmark file (nothing real is built): the right jobs are counted, the built ones marked built, the
run with the same settings takes the measured estimate and says so, the others that of similar jobs. A GPU
job's GPU estimate never comes from a CPU (declared or measured); device logs price DP²-VAE on a GPU; a
smoke build is estimated from smoke measurements, a paper-scale one not."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from dpvae.cli import main
from dpvae.config import load, load_config
from dpvae.dag import DagJob
from dpvae.errors import DpvaeError
from dpvae.paths import REPO_ROOT, ledger_file, model_path, prepared_dir, train_record
from dpvae.plan import (
    CPU_MACHINE,
    GPU_MACHINE,
    IMPRACTICAL_DAYS,
    CostPlan,
    Estimate,
    Measurement,
    Measurements,
    Record,
    Settings,
    cost_plan,
    describe,
    device_class,
)
from dpvae.runs import run_spec
from dpvae.runtimes import Declared, DeviceClass, read_device_logs
from dpvae.workflow import Rules

TARGET = "figures/privae/fig2.pdf"
SMOKE = REPO_ROOT / "tests" / "config" / "smoke.yaml"
OVERLAY = "experiments:\n  privae_clustering: {seeds: 2}\n"  # two seeds: one built, one to run
MEASURED_S = 720.0


def _plan(args: list[str], capsys) -> tuple[int, str, str]:
    code = main(["plan", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def _fake_built_run(root: Path, plan: Rules, run) -> None:
    """The prepared data and one run's train outputs, older first (Snakemake compares mtimes), with the
    train.json and benchmark file a real train job writes; no Snakemake metadata, as after a copy."""
    run_dir = root / run.path(plan.scale)
    prepared = prepared_dir(root / plan.config.data.root, run.dataset)
    model_path(run_dir).mkdir(parents=True)
    (run_dir / "benchmarks").mkdir()
    prepared.mkdir(parents=True)
    ledger_file(run_dir).write_text("{}")
    spec = run_spec(plan.config, run).to_dict()
    train_record(run_dir).write_text(
        json.dumps({"spec": spec, "seconds": MEASURED_S, "device": "cpu", "device_name": "cpu: test x2"})
    )
    (run_dir / "benchmarks" / "train.tsv").write_text(f"s\th:m:s\tmax_rss\n{MEASURED_S}\t0:12:00\t100.0\n")
    for age, path in enumerate([prepared, model_path(run_dir), ledger_file(run_dir), train_record(run_dir)]):
        os.utime(path, (1_700_000_000 + age, 1_700_000_000 + age))


@pytest.fixture(scope="module")
def faked(tmp_path_factory) -> tuple[Path, list[str], Rules, object]:
    """A working directory with one run of the target faked as built, the plan's arguments, the rules' plan
    and that run."""
    root = tmp_path_factory.mktemp("plan")
    overlay = root / "seeds.yaml"
    overlay.write_text(OVERLAY)
    plan = Rules(load_config([REPO_ROOT / "config.yaml", SMOKE, overlay]), REPO_ROOT)
    runs = plan.runs("privae_clustering", "pinwheel")
    assert len(runs) == 4  # 2 variants x 1 epsilon x 2 seeds
    built = next(r for r in runs if r.variant == "privae-pinwheel" and r.seed == 0)
    _fake_built_run(root, plan, built)
    return root, [f"--configfile={SMOKE}", f"--configfile={overlay}", f"--directory={root}"], plan, built


def test_plan_counts_built_jobs_and_takes_measured_estimates(faked):
    root, args, plan, built = faked
    plan = cost_plan([TARGET], [SMOKE, root / "seeds.yaml"], root, measured_dir=root / "no-records", timed=False)
    result = plan.to_dict()
    assert result["scale"] == "smoke" and result["targets"] == [TARGET]
    rows = {(r["rule"], r["group"]): r for r in result["rows"]}
    train, prepare = rows[("train", "privae · pinwheel")], rows[("prepare", "")]
    assert (train["jobs"], train["built"], train["to_run"]) == (4, 1, 3)
    assert (prepare["jobs"], prepare["built"]) == (1, 1)
    evaluate = rows[("evaluate", "pinwheel_scatter · pinwheel")]
    assert (evaluate["jobs"], evaluate["built"]) == (4, 0)  # its metrics are not there: to run
    assert result["total"]["built"] == 2 and result["total"]["jobs"] == sum(r["jobs"] for r in result["rows"])
    assert result["per_target"][0]["jobs"] == result["total"]["jobs"]

    # seed 1 of the same variant (same settings) is measured on the benchmark's device; the KL variant (same
    # method and dataset, other settings) takes the similar job's time at this (smoke) scale
    for machine in (GPU_MACHINE, CPU_MACHINE):
        assert train["estimate"][machine] == (
            "measured: 1 run on cpu: test x2 (1 jobs); similar jobs measured: 1 run on cpu: test x2 (2 jobs)"
        )
        assert {k: v for k, v in train["sources"][machine].items() if v} == {"measured": 1, "similar": 2}
    assert train[CPU_MACHINE]["hours"] == pytest.approx(3 * MEASURED_S / 3600, abs=1e-3)
    assert train[GPU_MACHINE]["gpu_hours"] == 0  # PriVAE asks for no GPU, and ran on none
    assert Path.cwd() != root  # Snakemake's working directory is given back


def test_cli_prints_the_table_and_markdown(faked, capsys):
    _, args, _, _ = faked
    code, text, err = _plan([*args, TARGET], capsys)
    assert code == 0, err
    # the faked run's benchmark is a measurement of seed 1 (the committed smoke record may add its own)
    assert re.search(r"^train +privae · pinwheel +4 +1 +3 .*measured: \d+ runs? on cpu: test x2", text, re.M)
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
    cpu_ref = Declared(10, DeviceClass.CPU_REFERENCE, "paper")
    assert describe([gpu, Estimate(600.0, "declared", declared=cpu_ref), Estimate(None, "none")]) == (
        "measured: 2 runs on cuda: NVIDIA H200 (1 jobs); declared 10 min for cpu-reference at paper scale (1 jobs); "
        "no runtime declared (1 jobs)"
    )
    assert describe([Estimate(None, "no GPU rate", True, declared=cpu_ref)]) == (
        "no GPU rate (declared 10 min for cpu-reference at paper scale)"
    )
    slow = Estimate(IMPRACTICAL_DAYS * 86400 + 1, "declared", declared=cpu_ref)
    assert slow.impractical and not Estimate(IMPRACTICAL_DAYS * 86400, "declared").impractical
    assert describe([slow]).endswith(f"(1 jobs); impractical: over {IMPRACTICAL_DAYS} days a job (1 jobs)")


def test_each_papers_recorded_run_keeps_its_own_measurement(tmp_path):
    """P3GM's and DP²-VAE's "real" baselines are both filed as dataset "mnist", variant "real", no ε, seed 0:
    two different runs (mnist-p3gm under p3gm-cpu.yaml, mnist under dp2vae-cpu-build0.yaml). The later row
    must not hide the other paper's: each run's training time measures its own train job. The P3GM row names its
    overlay where it was before the overlays moved into workflow/campaigns/overlays/ (the settings are read there)."""
    import pandas as pd

    from dpvae.plan import Measurements, Settings
    from dpvae.reproductions import COLUMNS
    from dpvae.runs import Run

    def row(paper: str, item: str, overlay: str, seconds: float, date: str) -> dict:
        values = {"paper": paper, "item": item, "dataset": "mnist", "method": "original", "metric": "accuracy"}
        values |= {"seed": 0, "value": 0.9, "scale": "paper", "variant": "real", "device": "cpu: test x2"}
        values |= {"command": f"snakemake --configfile={overlay} x", "wall_s": seconds, "date": date}
        return {c: values.get(c, "") for c in COLUMNS}

    pd.DataFrame([row("p3gm", "table7", "workflow/campaigns/p3gm-cpu.yaml", 11.0, "2026-11-01")]).to_csv(
        tmp_path / "p3gm.csv", index=False
    )
    pd.DataFrame(
        [row("dp2vae", "table1", "workflow/campaigns/overlays/dp2vae-cpu-build0.yaml", 22.0, "2026-11-20")]
    ).to_csv(tmp_path / "dp2vae.csv", index=False)
    plan = Rules(load_config([REPO_ROOT / "config.yaml"]), REPO_ROOT)
    measured = Measurements(Settings(plan), tmp_path)
    measured.add_recorded(tmp_path)
    p3gm_real = {"dataset": "mnist-p3gm", "variant": "real", "eps": "inf", "seed": "0"}
    assert Run("mnist-p3gm", "real", "inf", 0) in plan.all_runs()
    dp2vae_real = {**p3gm_real, "dataset": "mnist"}
    for wildcards, seconds in ((p3gm_real, 11.0), (dp2vae_real, 22.0)):
        found = measured.by_key.get(measured.settings.key("train", wildcards), {})
        assert [m.seconds for m in found.values()] == [seconds], wildcards["dataset"]


def test_a_recorded_overlay_is_read_where_it_lives_now(tmp_path):
    """A row recorded before the overlays moved into workflow/campaigns/overlays/ names the overlay directly under
    workflow/campaigns/; its settings are that overlay's, read where it lives now."""
    from dpvae.plan import Measurements, Settings

    plan = Rules(load_config([REPO_ROOT / "config.yaml"]), REPO_ROOT)
    measured = Measurements(Settings(plan), tmp_path)
    before = measured._overlay_rules("snakemake --configfile=workflow/campaigns/p3gm-cpu.yaml x")
    after = measured._overlay_rules("snakemake --configfile=workflow/campaigns/overlays/p3gm-cpu.yaml x")
    overlay = REPO_ROOT / "workflow" / "campaigns" / "overlays" / "p3gm-cpu.yaml"
    assert before.config == after.config == load([REPO_ROOT / "config.yaml", overlay]) != plan.config


# -- GPU estimates, device logs, scale ----------------------------------------------------------------------

CPU_REF_MIN = 240


@pytest.fixture(scope="module")
def smoke_settings() -> Settings:
    return Settings(Rules(load_config([REPO_ROOT / "config.yaml", SMOKE]), REPO_ROOT))


def _reference_job(gpu: bool = True) -> DagJob:
    """FID's reference job: it asks for a GPU, and declares CPU-reference minutes only."""
    return DagJob(
        "reference", {"dataset": "mnist", "metric": "fid"}, False,
        Declared(CPU_REF_MIN, DeviceClass.CPU_REFERENCE, "paper"), gpu, frozenset(),
    )  # fmt: skip


def _measured(settings: Settings, tmp_path: Path, *devices: str) -> Measurements:
    measured = Measurements(settings, tmp_path)
    job = _reference_job()
    for i, device in enumerate(devices):
        key = settings.key(job.rule, job.wildcards)
        measured.add(job.rule, settings.group(job.wildcards), f"m{i}", key, Measurement(50.0 + i, device))
    return measured


def test_a_gpu_row_never_takes_a_cpu_declaration_or_measurement(smoke_settings, tmp_path):
    job = _reference_job()
    for measured in (_measured(smoke_settings, tmp_path), _measured(smoke_settings, tmp_path, "cpu: test x2")):
        on_gpu = measured.estimate(job, GPU_MACHINE, "auto")
        assert (on_gpu.seconds, on_gpu.source, on_gpu.on_gpu) == (None, "no GPU rate", True)
        assert on_gpu.declared == Declared(CPU_REF_MIN, DeviceClass.CPU_REFERENCE, "paper")
    assert _measured(smoke_settings, tmp_path).estimate(job, CPU_MACHINE, "auto").seconds == CPU_REF_MIN * 60
    cpu_measured = _measured(smoke_settings, tmp_path, "cpu: test x2")
    assert cpu_measured.estimate(job, CPU_MACHINE, "auto").seconds == 50.0
    # under `device: cpu` the GPU machine runs it on its CPU: CPU-hours from the CPU's measurement
    assert cpu_measured.estimate(job, GPU_MACHINE, "cpu") == Estimate(
        50.0, "measured", False, ("cpu: test x2",), frozenset({"m0"})
    )
    both = _measured(smoke_settings, tmp_path, "cpu: test x2", "cuda: NVIDIA H200").estimate(job, GPU_MACHINE, "auto")
    assert (both.seconds, both.on_gpu, both.devices) == (51.0, True, ("cuda: NVIDIA H200",))
    # a job that asks for no GPU runs on the GPU machine's CPU: its declaration is CPU-hours there
    cpu_job = _measured(smoke_settings, tmp_path).estimate(_reference_job(gpu=False), GPU_MACHINE, "auto")
    assert (cpu_job.seconds, cpu_job.source, cpu_job.on_gpu) == (CPU_REF_MIN * 60, "declared", False)


def test_a_planted_cpu_minutes_as_gpu_estimate_fails():
    """The regression of issue 38: a CPU-reference declaration (or a CPU measurement) reused as GPU-hours."""
    cpu_ref = Declared(CPU_REF_MIN, DeviceClass.CPU_REFERENCE, "paper")
    with pytest.raises(ValueError, match="CUDA measurements or rates only"):
        Estimate(CPU_REF_MIN * 60, "declared", True, declared=cpu_ref)
    with pytest.raises(ValueError, match="CUDA measurements or rates only"):
        Estimate(50.0, "measured", True, ("cpu: test x2",))


def test_device_logs_price_dp2vae_on_a_gpu_only(tmp_path):
    """The committed H200 logs hold DP²-VAE's stage-1 and stage-2 step times; a paper-scale DP²-VAE run is
    priced from them on the GPU machine (no CUDA measurement of it exists), never on the 2-core machine."""
    logs = read_device_logs(REPO_ROOT / "benchmarks" / "measured")
    stage2 = [r for r in logs if r.kind == "dp2vae.stage2" and r.shape == (("width", "512,256"), ("batch", "32"))]
    assert sorted(r.seconds_per_step for r in stage2) == [0.0118, 0.01418]
    assert {r.device for r in stage2} == {"cuda: NVIDIA H200"}

    plan = Rules(load_config([REPO_ROOT / "config.yaml"]), REPO_ROOT)
    run = next(r for r in plan.all_runs() if r.variant == "dp2vae" and r.dataset == "mnist")
    wildcards = {"dataset": run.dataset, "variant": run.variant, "eps": run.eps, "seed": str(run.seed)}
    resources = plan.train_resources(run.dataset, run.variant, run.eps, run.seed)
    declared = Declared(resources.runtime, DeviceClass.CPU_REFERENCE, "paper")
    job = DagJob("train", wildcards, False, declared, True, frozenset())
    measured = Measurements(Settings(plan), tmp_path)
    measured.logged = logs
    gpu = measured.estimate(job, GPU_MACHINE, "auto")
    assert gpu.source == "logged" and gpu.on_gpu and gpu.devices == ("cuda: NVIDIA H200",)
    assert gpu.seconds == pytest.approx(resources.work.steps * (0.0118 + 0.01418) / 2)
    assert measured.estimate(job, CPU_MACHINE, "auto").source == "declared"

    log = tmp_path / "cpu-test" / "dp2vae.log"  # a CPU's log prices the CPU machine, not the GPU one
    log.parent.mkdir()
    log.write_text("device=cpu: test x2 torch=0\nstage2 width=512,256 batch=32 steps=3 private_s_per_step=2.5\n")
    measured.logged = read_device_logs(tmp_path)
    assert measured.estimate(job, CPU_MACHINE, "auto").seconds == pytest.approx(resources.work.steps * 2.5)
    assert measured.estimate(job, GPU_MACHINE, "auto").source == "no GPU rate"


def test_recorded_benchmarks_come_back_at_their_scale_only(smoke_settings, tmp_path):
    job = _reference_job(gpu=False)
    key = smoke_settings.key(job.rule, job.wildcards)
    record = Record("smoke", job.rule, "fid · mnist", "p", key, Measurement(42.0, "cpu: test x2"))
    plan = CostPlan((), (), "smoke", "auto", [], (), (record,))
    (tmp_path / "cpu-test").mkdir()
    (tmp_path / "cpu-test" / "smoke.tsv").write_text(plan.to_records())
    assert plan.to_records() == plan.to_records()  # sorted: same benchmark files, same bytes

    measured = Measurements(smoke_settings, tmp_path)
    measured.add_committed(tmp_path)
    assert measured.estimate(job, CPU_MACHINE, "auto") == Estimate(
        42.0, "measured", False, ("cpu: test x2",), frozenset({"p"})
    )
    paper = Measurements(Settings(Rules(load_config([REPO_ROOT / "config.yaml"]), REPO_ROOT)), tmp_path)
    paper.add_committed(tmp_path)
    assert paper.by_key == {}

    (tmp_path / "cpu-test" / "other.tsv").write_text("path\tmethod\nsynth\tmst\n")  # a campaign's lines, misplaced
    with pytest.raises(DpvaeError, match=r"other\.tsv: not a benchmark record .*no column scale, rule"):
        measured.add_committed(tmp_path)


def test_smoke_plan_from_smoke_measurements_paper_plan_not(tmp_path):
    """P3GM Table VI at smoke scale: every job (fetch and prepare to render) is estimated from the committed
    smoke record of this 2-core machine (benchmarks/measured/cpu-2026-12-02/smoke-all.tsv, every job of a smoke
    build: the same settings, or similar jobs where a method's parameters changed since), not from the
    paper-scale declarations (17.1 h before issue 38); at paper scale the smoke record counts for nothing."""
    smoke = cost_plan(["figures/p3gm/table6.pdf"], [SMOKE], tmp_path, timed=False)
    total = smoke.totals()
    found = total["sources"][CPU_MACHINE]
    assert (
        found["measured"] and found["measured"] + found["similar"] + found["rule"] == total["to_run"] == total["jobs"]
    )
    assert smoke.jobs[0].estimates[CPU_MACHINE].devices == ("cpu: x86_64 x2",)
    assert 10 / 3600 < total[CPU_MACHINE]["hours"] < 600 / 3600  # 58 s from the quiet record of 2 Dec 2026
    paper = cost_plan(["figures/p3gm/table6.pdf"], [], tmp_path, timed=False).totals()
    assert paper[CPU_MACHINE]["hours"] > 10
    assert not any(paper["sources"][m][s] for m in (GPU_MACHINE, CPU_MACHINE) for s in ("similar", "rule"))


def test_the_build_is_scheduled_on_its_cores():
    """A 5 s job, three 10 s jobs that need it, a 1 s job that needs those three: 36 s on one core, 26 s on two
    (the third 10 s job waits for a core), 16 s on three; a built job takes no time."""
    from dpvae.plan import JobCost

    def cost(seconds: float, needs: tuple[int, ...] = (), built: bool = False) -> JobCost:
        job = DagJob("r", {}, built, None, False, frozenset(), needs)
        estimate = Estimate(seconds, "rule", devices=("cpu: test x2",))
        return JobCost(job, "", {} if built else {GPU_MACHINE: estimate, CPU_MACHINE: estimate})

    jobs = [cost(5), cost(10, (0,)), cost(10, (0,)), cost(10, (0,)), cost(1, (1, 2, 3))]
    plan = CostPlan((), (), "smoke", "auto", jobs, ())
    assert [plan.build_seconds(cores) for cores in (1, 2, 3)] == [36, 26, 16]
    plan = CostPlan((), (), "smoke", "auto", [cost(5, built=True), *jobs[1:]], ())
    assert [plan.build_seconds(cores) for cores in (1, 2, 3)] == [31, 21, 11]


def test_update_fills_the_plan_block_and_records_name_a_device(tmp_path):
    """`plan --update FILE` replaces only the plan block (a file without one is one error line naming it);
    `plan --record` files a job whose outputs name no device under the given one, and keeps a named one."""
    from dpvae.errors import ConfigError
    from dpvae.plan import PLAN_BEGIN, PLAN_END, with_plan

    key = ("render_figure", ("item", "fig2"), ("paper", "privae"))
    unnamed = Record("smoke", "render_figure", "", "results/smoke/benchmarks/x.tsv", key, Measurement(3.0, ""))
    named = Record("smoke", "train", "", "train:x", ("train",), Measurement(4.0, "cuda: NVIDIA H200"))
    plan = CostPlan((), ("tests/config/smoke.yaml",), "smoke", "auto", [], (), (unnamed, named))
    rows = [line.split("\t") for line in plan.to_records("cpu: test x2").splitlines()[1:]]
    assert sorted(row[5] for row in rows) == ["cpu: test x2", "cuda: NVIDIA H200"]

    page = f"before\n{PLAN_BEGIN}\nold\n{PLAN_END}\nafter\n"
    updated = with_plan(page, plan, "README.md")
    assert updated.startswith(f"before\n{PLAN_BEGIN}\n`python -m dpvae plan --configfile=tests/config/smoke.yaml")
    assert updated.endswith(f"{PLAN_END}\nafter\n") and "old" not in updated and plan.to_markdown() in updated
    assert with_plan(updated, plan, "README.md") == updated
    with pytest.raises(ConfigError, match="^README.md: no <!-- plan:begin -->"):
        with_plan("no block\n", plan, "README.md")


def test_readme_smoke_cost_block_is_current(tmp_path, monkeypatch):
    """README.md's plan block is the plan of `make smoke` from an empty directory, priced from the committed
    records (regenerate: `python -m dpvae plan --configfile=tests/config/smoke.yaml --directory=$(mktemp -d)
    --update README.md`); a changed number is caught."""
    from dpvae.plan import with_plan

    monkeypatch.chdir(REPO_ROOT)
    readme = (REPO_ROOT / "README.md").read_text()
    plan = cost_plan([], ["tests/config/smoke.yaml"], tmp_path, timed=False)
    assert readme == with_plan(readme, plan, "README.md"), "run the command in this test's docstring"
    planted = readme.replace("| **all** | ", "| **all** | 1", 1)
    assert planted != readme and with_plan(planted, plan, "README.md") == readme
