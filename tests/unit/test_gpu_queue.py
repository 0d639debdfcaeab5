"""The GPU queue (workflow/campaigns/gpu-queue.yaml) names runs the configuration has, under overlays that exist."""

from __future__ import annotations

import importlib.util
import itertools
import os
import random
import re
import shlex
import subprocess
import sys
import tarfile
import time
from dataclasses import replace
from pathlib import Path

import pytest

from dpvae.paths import REPO_ROOT, metric_file, metric_fits_file, model_path, partial_file
from dpvae.reproductions import COLUMNS
from dpvae.runs import Run
from dpvae.workflow import Rules

SCRIPT = REPO_ROOT / "workflow" / "campaigns" / "gpu_queue.py"


def _queue():
    spec = importlib.util.spec_from_file_location("gpu_queue", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_every_entry_names_configured_runs_and_metrics():
    queue = _queue()
    entries = queue.load_queue()
    assert entries and len({e.name for e in entries}) == len(entries)
    for entry in entries:
        needed = Rules(queue._config(entry.overlay)).all_runs()
        for variant, eps, seed in itertools.product(entry.variants, entry.epsilons, entry.seeds):
            assert Run(entry.dataset, variant, eps, seed) in needed, f"{entry.name}: its overlay has no such run"
        assert all(target.endswith(".json") and f"/{entry.dataset}/" in target for target in entry.targets())
        assert entry.blocked or entry.minutes <= 10, f"{entry.name}: a ready entry fits one 10-minute call"


def test_a_row_of_another_campaign_does_not_count_as_the_entry_recorded():
    """DP²-VAE's narrow CPU rows (overlay dp2vae-cpu.yaml) share variant, ε, seed and dataset with the paper-width
    entries (config.yaml): only a row made under the entry's own overlay marks the entry recorded."""
    queue = _queue()
    paper_width = next(e for e in queue.load_queue() if e.paper == "dp2vae")
    cpu = "snakemake --cores 1 --configfile=workflow/campaigns/overlays/dp2vae-cpu.yaml figures/dp2vae/table1.pdf"
    assert not paper_width.made_here(cpu)
    assert paper_width.made_here(f"gpu_queue.py run ({paper_width.name}): snakemake --configfile={paper_width.overlay}")
    privae = next(e for e in queue.load_queue() if e.paper == "privae")
    assert privae.made_here(f"snakemake --configfile={privae.overlay} x") and not privae.made_here(cpu)
    # rows recorded before the overlays moved into workflow/campaigns/overlays/ name them where they were then
    assert privae.made_here("snakemake --configfile=workflow/campaigns/privae-cpu.yaml x")
    assert not paper_width.made_here(cpu.replace("campaigns/overlays/", "campaigns/"))


def test_an_entry_past_its_budget_is_stopped_with_everything_it_started(tmp_path):
    """A call must come back before the device's own limit: `build` kills the entry's whole process group (Snakemake
    and the jobs it spawned) when its seconds run out, and says so; a command that ends in time is 'ok' / 'failed'."""
    queue = _queue()
    child = tmp_path / "child.pid"
    script = (
        "import subprocess, sys, time; "
        f"p = subprocess.Popen(['sleep', '120']); open({str(child)!r}, 'w').write(str(p.pid)); time.sleep(120)"
    )
    assert queue.build([sys.executable, "-c", script], seconds=2) == "stopped"
    pid = int(child.read_text())
    status = Path(f"/proc/{pid}/status")
    for _ in range(50):  # the orphaned child is reaped by init shortly after the kill
        if not status.exists() or "State:\tZ" in status.read_text():
            break
        time.sleep(0.1)
    assert not status.exists() or "State:\tZ" in status.read_text(), "the entry's child process survived"
    assert queue.build([sys.executable, "-c", "pass"], seconds=5) == "ok"
    assert queue.build([sys.executable, "-c", "raise SystemExit(1)"], seconds=5) == "failed"


def test_without_the_inception_weights_an_entry_builds_every_metric_but_fid():
    queue = _queue()
    entry = next(e for e in queue.load_queue() if "fid" in e.metrics)
    assert any(t.endswith("/fid.json") for t in entry.targets())
    rest = entry.targets(("fid",))
    assert rest and not any(t.endswith("/fid.json") for t in rest)


def test_an_entry_builds_every_metric_the_tables_of_its_runs_need():
    """What comes back must let Snakemake here build the per-variant tables holding the entry's runs without
    evaluating anything (FID on this CPU: hours): every metric those tables' experiments list is an entry target."""
    queue = _queue()
    for entry in queue.load_queue():
        found = queue.tables(entry)
        assert found, f"{entry.name}: no table holds its runs"
        targets = set(entry.targets())
        own = tuple(f"{run}/" for run in entry.runs())
        for table, needs in found.items():
            assert any(n.startswith(own) for n in needs), table
            metrics = {n for n in needs if n.startswith(own) and "/metrics/" in n}
            assert metrics <= targets, f"{entry.name}: {table} also needs {sorted(metrics - targets)}"


def test_entries_of_one_overlay_run_side_by_side_while_they_fit(tmp_path, monkeypatch):
    """A wave packs the queue's entries by their declared GPU share and memory: three DP²-VAE seeds fit one
    9-minute call together; a fourth does not; another overlay never joins; memory and cores bound a wave."""
    queue = _queue()
    monkeypatch.setattr(queue, "ROOT", tmp_path)  # no run of any entry started on this "machine"
    dp2vae = [e for e in queue.load_queue() if e.paper == "dp2vae" and not e.blocked]
    room = queue.Room(cores=16, memory_gib=70.0)
    wave = queue.next_wave(dp2vae, 9.0, room)
    assert [e.name for e in wave.entries] == [e.name for e in dp2vae[:3]]
    assert wave.minutes <= 9.0 < queue.Wave((*wave.entries, dp2vae[3])).minutes
    assert len(queue.next_wave(dp2vae, 9.0, queue.Room(cores=16, memory_gib=13.0)).entries) == 2
    assert len(queue.next_wave(dp2vae, 9.0, queue.Room(cores=2)).entries) == 2
    assert queue.next_wave(dp2vae, 7.0, room) is None  # not even one fits
    privae = next(e for e in queue.load_queue() if e.paper == "privae")
    mixed = queue.next_wave([dp2vae[0], privae], 20.0, room)
    assert mixed.entries == (dp2vae[0],)  # another overlay waits for its own wave
    alone = replace(dp2vae[0], gpu_share=1.0)  # a share not measured predicts as if run one after another
    assert queue.Wave((alone, replace(dp2vae[1], gpu_share=1.0))).minutes == 2 * alone.minutes


def test_an_entry_an_earlier_call_stopped_resumes_first_whatever_its_prediction(tmp_path, monkeypatch):
    """An entry longer than a call (its runs trained, a metric missing on this warm machine) runs first in the next
    call while a minute is left, though its minutes exceed what is left; untouched or finished, it waits as before."""
    queue = _queue()
    monkeypatch.setattr(queue, "ROOT", tmp_path)
    entries = [e for e in queue.load_queue() if e.name in ("real-mnist-table1", "dp-merf-mnist-table1")]
    stopped = entries[1]
    room = queue.Room(cores=16, memory_gib=70.0)
    assert queue.next_wave(entries, 3.0, room) is None  # nothing started: 9 minutes do not fit 3
    (tmp_path / queue.train_record(stopped.runs()[0])).parent.mkdir(parents=True)
    (tmp_path / queue.train_record(stopped.runs()[0])).write_text("{}")
    assert queue.next_wave(entries, 3.0, room).entries == (stopped,)  # resumes alone, ahead of the queue's order
    assert queue.next_wave(entries, 0.5, room) is None  # less than a minute left
    for target in stopped.targets():
        (tmp_path / target).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / target).write_text("{}")
    assert not stopped.started() and queue.next_wave(entries, 3.0, room) is None  # finished: nothing to resume


def test_an_entry_too_big_for_one_file_comes_back_in_parts_and_unpacks_whole(tmp_path, monkeypatch):
    """Models are what a table's build needs most (without them Snakemake here trains again): an archive over one
    file's limit is split into parts within the files a call brings back, else packed without models, saying so;
    `unpack` joins the parts into the same files."""
    queue = _queue()
    device, here = tmp_path / "device", tmp_path / "here"
    entry = next(e for e in queue.load_queue() if e.paper == "privae" and not e.blocked)
    monkeypatch.setattr(queue, "LIMIT", 40_000)
    monkeypatch.setattr(queue, "ROOT", device)
    rng = random.Random(0)
    for run in entry.runs():
        for name, size in (("train.json", 100), ("model/model.pt", 30_000), ("metrics/m.json", 50)):
            (device / run / name).parent.mkdir(parents=True, exist_ok=True)
            (device / run / name).write_bytes(rng.randbytes(size))  # incompressible, as weights are
    out = tmp_path / "out"
    out.mkdir()
    line = queue.pack(entry, out)
    parts = sorted(p.name for p in out.iterdir())
    assert f"in {len(parts)} parts" in line and len(parts) > 1 and len(parts) < queue.FILES_BACK, line
    assert parts[0] == f"{entry.name}.tar.gz.1" and all(p.stat().st_size <= 40_000 for p in out.iterdir())
    monkeypatch.setattr(queue, "ROOT", here)
    queue.unpack(out, [])  # (no entries: the tables it names come from the checkout's configuration)
    for run in entry.runs():
        for name in ("train.json", "model/model.pt", "metrics/m.json"):
            assert (here / run / name).read_bytes() == (device / run / name).read_bytes(), run / name
    # no room for the parts among the files a call brings back: no models, and queue.txt says where they are
    monkeypatch.setattr(queue, "ROOT", device)
    line = queue.pack(entry, out, files_back=2)
    assert "without models" in line and f"pack OUTDIR {entry.name}" in line, line
    assert [p.name for p in out.iterdir()] == [f"{entry.name}.tar.gz"]


def test_a_metrics_resume_file_stays_on_the_machine(tmp_path, monkeypatch):
    """A stopped entry's runs are packed with their finished metrics, never a metric's resume point (its fits or its
    running sums so far serve the job on the machine that resumes it); other hidden files (a directory's timestamp)
    go along."""
    queue = _queue()
    entry = next(e for e in queue.load_queue() if e.paper == "privae" and not e.blocked)
    monkeypatch.setattr(queue, "ROOT", tmp_path / "device")
    run = entry.runs()[0]
    kept = [metric_file(run, "m"), model_path(run) / ".snakemake_timestamp"]
    resume_points = (metric_fits_file(metric_file(run, "m").parent, "m"), partial_file(Path(metric_file(run, "m"))))
    for path in (*kept, *resume_points):
        (tmp_path / "device" / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "device" / path).write_text("{}")
    out = tmp_path / "out"
    out.mkdir()
    queue.pack(entry, out)
    with tarfile.open(out / f"{entry.name}.tar.gz") as tar:
        assert sorted(m.name for m in tar.getmembers() if m.isfile()) == sorted(str(p) for p in kept)


def test_the_calls_limit_stops_the_wave_and_the_report_still_comes_back(tmp_path):
    """`timeout`'s SIGTERM reaches the queue process but not Snakemake (a session of its own): under
    `stopped_by_signals` the wave's process group is killed and what follows (packing, queue.txt) still runs, so a
    call whose output goes through a pipe ends at its `timeout` instead of when Snakemake would (an H100 call of
    27 Nov 2026 brought nothing back). Without the handler this waits for the 120-second child and fails."""
    child = tmp_path / "child.pid"
    spawn = (
        "import subprocess, time; "
        f"p = subprocess.Popen(['sleep', '120']); open({str(child)!r}, 'w').write(str(p.pid)); time.sleep(120)"
    )
    script = (
        "import importlib.util, sys; "
        f"spec = importlib.util.spec_from_file_location('gpu_queue', {str(SCRIPT)!r}); "
        "q = importlib.util.module_from_spec(spec); sys.modules['gpu_queue'] = q; spec.loader.exec_module(q)\n"
        "with q.stopped_by_signals():\n"
        f"    print(q.build([sys.executable, '-c', {spawn!r}], seconds=120), flush=True)\n"
        "print('reported', flush=True)\n"
    )
    started = time.monotonic()
    call = subprocess.run(
        ["bash", "-c", f"timeout -k 60 3 {sys.executable} -c {shlex.quote(script)} | cat"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert call.stdout.split() == ["stopped", "reported"], call.stderr
    assert time.monotonic() - started < 30
    status = Path(f"/proc/{int(child.read_text())}/status")
    assert not status.exists() or "State:\tZ" in status.read_text(), "the wave's child process survived"


def test_the_budget_counts_from_the_calls_start(tmp_path, monkeypatch):
    """gpu-window.sh passes its start (`--since`): the set-up before the queue (install, join, device check) is
    spent from the budget, so a call whose set-up took 8 of its 9 minutes starts no 8-minute entry."""
    queue = _queue()
    monkeypatch.setattr(queue, "ROOT", tmp_path)  # no run of any entry started on this "machine"
    ready = [e for e in queue.load_queue() if not e.blocked and not e.recorded()]
    assert ready and max(e.minutes for e in ready) <= 9
    out = tmp_path / "out"
    assert queue.run(ready, out, budget=9.5, cores=16, dry_run=True, device="cpu", since=time.time() - 480) == 0
    report = (out / "queue.txt").read_text()
    assert "wave" not in report and report.count("left for a later call") == len(ready), report


def test_a_window_without_its_commit_stops_before_any_work(tmp_path):
    """Rows recorded from a call without DPVAE_COMMIT would name no code: gpu-window.sh refuses in one line, before
    installing or running anything (a --dry-run may go without it)."""
    env = {k: v for k, v in os.environ.items() if k != "DPVAE_COMMIT"}
    env.update(OUT=str(tmp_path / "out"), GPU_WINDOW_KEEP=str(tmp_path / "keep"), PY=sys.executable)
    window = REPO_ROOT / "workflow" / "campaigns" / "gpu-window.sh"
    call = subprocess.run([str(window), "1", "--device", "cpu"], capture_output=True, text=True, env=env, timeout=60)
    assert call.returncode == 2 and "set DPVAE_COMMIT" in call.stderr and not call.stdout, call.stdout + call.stderr
    assert not (tmp_path / "out").exists() and not (tmp_path / "keep").exists()


def test_a_failed_job_loses_nothing_its_wave_finished(tmp_path, monkeypatch):
    """One failed job (a metric's CUDA path, say) must not cost a window the rest: Snakemake keeps going past it and
    prints its log, and the wave's entries are packed with what finished, the report saying so."""
    queue = _queue()
    monkeypatch.setattr(queue, "ROOT", tmp_path)  # no run of any entry started on this "machine"
    commands, packed = [], []
    monkeypatch.setattr(queue, "build", lambda command, seconds: commands.append(command) or "failed")
    monkeypatch.setattr(queue, "pack", lambda entry, out: packed.append(entry.name) or f"{entry.name}.tar.gz: 0.1 MiB")
    ready = [e for e in queue.load_queue() if not e.blocked and not e.recorded()]
    out = tmp_path / "out"
    assert queue.run(ready, out, budget=9.5, cores=16, dry_run=False, device="cpu") == 1
    assert commands and all({"--keep-going", "--show-failed-logs"} <= set(command) for command in commands)
    report = (out / "queue.txt").read_text()
    first = ready[0].name
    assert first in packed and f"{first}: failed in" in report and f"{first}.tar.gz: 0.1 MiB" in report, report


def test_the_cpu_protocol_campaign_builds_one_seed_per_seed_overlay():
    """workflow/campaigns/dp2vae-protocol-queue.sh builds and records one seed at a time: the protocol overlay with
    dp2vae-cpu-protocol-seed<k>.yaml layered on it has seed k alone of every protocol cell, FID still on 10,000."""
    from dpvae.config import load_config
    from dpvae.runs import experiment_runs

    overlays = REPO_ROOT / "workflow" / "campaigns" / "overlays"
    for seed in range(5):
        config = load_config(
            [
                REPO_ROOT / "config.yaml",
                overlays / "dp2vae-cpu-protocol.yaml",
                overlays / f"dp2vae-cpu-protocol-seed{seed}.yaml",
            ]
        )
        assert config["evaluation"]["fid"]["n_samples"] == 10000
        for experiment in ("dp2vae_eps10", "dp2vae_eps1"):
            runs = experiment_runs(config, experiment)
            assert runs and {r.seed for r in runs} == {seed}
            assert {r.variant for r in runs} == ({"real", "dp-merf"} if experiment == "dp2vae_eps10" else {"dp-merf"})
    script = (REPO_ROOT / "workflow" / "campaigns" / "dp2vae-protocol-queue.sh").read_text()
    assert "-seed$seed.yaml" in script and "--replaces" in script


def test_the_cpu_protocol_campaign_takes_the_same_preregistered_seeds_in_every_cell(tmp_path):
    """dp2vae-protocol-queue.sh, its Python and Snakemake stubbed (nothing recorded yet): every cell is built and
    recorded seed by seed, 0-4, and nothing is asked about a verdict on the way (no seed count chosen from one: the
    `close` rule that added seeds 3-4 to a near miss only is gone, issue 63 Build 2)."""
    stub = tmp_path / "stub"
    stub.write_text('#!/usr/bin/env bash\necho "$*" >> "$LOG"\ncase "$*" in *" recorded "*) exit 1;; esac\n')
    stub.chmod(0o755)
    script = REPO_ROOT / "workflow" / "campaigns" / "dp2vae-protocol-queue.sh"
    log = tmp_path / "log"
    env = {**os.environ, "PY": str(stub), "SNAKEMAKE": "true", "ONLY_CELLS": "1", "LOG": str(log)}
    subprocess.run(["bash", str(script), str(tmp_path / "study")], cwd=tmp_path, env=env, check=True)
    by_table = {}
    for line in log.read_text().splitlines():
        if line.startswith("-m dpvae record"):
            seed = re.search(r"dp2vae-cpu-protocol-seed(\d)\.yaml", line)
            by_table.setdefault(line.split()[3], []).append(int(seed[1]))
    assert len(by_table) == 6, by_table  # Table 1's four cells, Table 2's two
    assert list(by_table.values()) == [[0, 1, 2, 3, 4]] * 6
    assert not [line for line in log.read_text().splitlines() if "gpu_queue.py" in line and " recorded " not in line]
    with pytest.raises(SystemExit):  # the verb is gone
        _queue().main(["close", "dp2vae", "mnist", "dp-merf", "10"])


def test_recorded_says_whether_one_run_has_rows_made_under_the_overlay(tmp_path, monkeypatch):
    queue = _queue()
    overlay = "workflow/campaigns/overlays/dp2vae-cpu-protocol.yaml"
    (tmp_path / "reproductions").mkdir()
    row = "dp2vae,table1,mnist,real,,fid,,,{seed},1.6,,paper,real,cpu,abc,snakemake --configfiles {overlay} s.yaml,1,d"
    header = ",".join(COLUMNS)
    lines = [header, row.format(seed=0, overlay=overlay), row.format(seed=1, overlay="workflow/campaigns/other.yaml")]
    (tmp_path / "reproductions" / "dp2vae.csv").write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(queue, "ROOT", tmp_path)
    ask = ["recorded", "dp2vae", overlay, "mnist", "real", "inf"]
    assert queue.main([*ask, "0"]) == 0
    assert queue.main([*ask, "1"]) == 1  # its row was made under another overlay
    assert queue.main([*ask, "2"]) == 1
    assert queue.main(["recorded", "dp2vae", overlay, "fashion-mnist", "real", "inf", "0"]) == 1


def test_the_cpu_protocol_studies_read_the_fid_jobs_kept_statistics(tmp_path):
    """dp2vae-protocol-queue.sh's Real-data FID study of a dataset gets the FID jobs' memo, and their test-split
    statistics where the cells left them (MNIST's here, Fashion-MNIST's not), and is recorded as it ends."""
    stub = tmp_path / "stub"
    stub.write_text('#!/usr/bin/env bash\necho "$*" >> "$LOG"\n')
    stub.chmod(0o755)
    kept = tmp_path / "results" / "paper" / "references"
    (kept / "mnist").mkdir(parents=True)
    (kept / "mnist" / "fid.npz").write_bytes(b"")
    log = tmp_path / "log"
    env = {**os.environ, "PY": str(stub), "SNAKEMAKE": "true", "LOG": str(log)}
    script = REPO_ROOT / "workflow" / "campaigns" / "dp2vae-protocol-queue.sh"
    subprocess.run(["bash", str(script), str(tmp_path / "study")], cwd=tmp_path, env=env, check=True)
    studies = {line.split()[2]: line for line in log.read_text().splitlines() if "dp2vae_real_fid.py" in line}
    assert set(studies) == {"mnist", "fashion-mnist"}
    for dataset, line in studies.items():
        assert f"--memo results/paper/references/{dataset}/generated" in line
    assert "--reference results/paper/references/mnist/fid.npz" in studies["mnist"]
    assert "--reference" not in studies["fashion-mnist"]
    records = [line for line in log.read_text().splitlines() if "--study" in line]
    assert records == [
        f"-m dpvae record --study dp2vae_real_fid {tmp_path}/study/dp2vae_real_fid_{d}.csv" for d in studies
    ]
