"""The GPU window rehearsed on the CPU: workflow/campaigns/gpu-window.sh, called twice on a copy of the working tree
as the device tool lays it out (tracked and untracked-not-ignored files, the carried folders made as the real
scripts make them), runs a toy queue (tests/config/gpu-rehearsal-queue.yaml) with a budget stop and its resume,
within the limits of what a call carries and brings back; here, `gpu_queue.py unpack`, the suggested table build
and `dpvae record` fill a copy of reproductions/ that the scorecard reads. What only a device can check is listed
in gpu-window.sh's header."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from dpvae.eval.fid import WEIGHTS_NAME
from dpvae.paths import REPO_ROOT, run_dir, run_id, train_record
from dpvae.scorecard import scorecard

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

WINDOW = "workflow/campaigns/gpu-window.sh"
QUEUE = "tests/config/gpu-rehearsal-queue.yaml"
TABLE = "results/paper/tables/dp2vae_eps10/mnist/dp2vae.csv"
COMMIT = "0123456789abcdef-rehearsal"
MIB = 2**20
STOP_AFTER_SETUP = 0.1  # minutes: under the first entry's estimate, and under what the second entry takes


def working_tree(destination: Path) -> Path:
    """What a device call sends of this checkout: its tracked and untracked-not-ignored files."""
    listed = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        text=True,
    )
    if listed.returncode != 0:
        pytest.skip(f"not a git checkout: {listed.stderr.strip()}")
    for name in filter(None, listed.stdout.split("\0")):
        if (REPO_ROOT / name).is_file():  # a tracked file deleted in the working tree does not travel
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO_ROOT / name, destination / name)
    return destination


def size(path: Path) -> int:
    return sum(p.stat().st_size for p in [path, *path.rglob("*")] if p.is_file())


def carry(here: Path, device: Path, *names: str) -> int:
    """Copy the carried paths from `here` into the device's copy; bytes of the call (working tree + carried)."""
    for name in names:
        shutil.copytree(here / name, device / name, copy_function=os.link, dirs_exist_ok=True)
    return size(here) - sum(size(p) for p in here.glob(".dev*")) + sum(size(here / n) for n in names)


def came_back(out: Path) -> list[Path]:
    """The files under $OUT, asserting that the device tool brings every one back."""
    files = [p for p in out.rglob("*") if p.is_file()]
    assert len(files) <= 8, f"{len(files)} files under $OUT: the call brings back 8"
    assert sum(p.stat().st_size for p in files) <= 64 * MIB
    for path in files:
        parts = path.relative_to(out).parts
        assert path.stat().st_size <= 16 * MIB and len(parts) <= 3, path
        assert all(re.fullmatch(r"[A-Za-z0-9._-]+", part) for part in parts), path
    return files


def window(device: Path, keep: Path, out: Path, budget: float) -> tuple[subprocess.CompletedProcess, float]:
    """One device call: gpu-window.sh BUDGET on the toy queue, on the CPU; (the call, its seconds)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DPVAE_", "PYTHONPATH"))}
    env.update(OUT=str(out), GPU_WINDOW_KEEP=str(keep), PY=sys.executable, DPVAE_COMMIT=COMMIT)
    started = time.monotonic()
    call = subprocess.run(
        [str(device / WINDOW), str(budget), "--queue", QUEUE, "--cores", "2", "--device", "cpu"],
        capture_output=True,
        text=True,
        env=env,
        cwd=device,
        timeout=600,
    )
    return call, time.monotonic() - started


def here_run(here: Path, mirror: Path, command: str) -> subprocess.CompletedProcess:
    """A shell command in the local checkout's copy, with this environment's `python` and `snakemake`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DPVAE_")}
    env.update(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}",
        PYTHONPATH=str(here / "src"),
        DPVAE_DATA_MIRROR=str(mirror),
    )
    return subprocess.run(command, shell=True, capture_output=True, text=True, env=env, cwd=here, timeout=600)


def test_two_calls_of_the_window_round_trip_into_the_scorecard(tmp_path, mirror):
    weights = mirror / "inception" / WEIGHTS_NAME
    assert weights.is_file(), f"the mirror lacks the FID weights {weights}"
    real_reproductions = (REPO_ROOT / "reproductions" / "dp2vae.csv").read_bytes()
    here = working_tree(tmp_path / "here")  # the local checkout (its reproductions/ a copy)
    device, keep, out1, out2 = (tmp_path / name for name in ("device", "keep", "out1", "out2"))
    for folder in (device, keep, tmp_path / "out0", out1, out2):
        folder.mkdir()

    # here: the carried folders, made as the real scripts make them
    split = here_run(here, mirror, f"DPVAE_INCEPTION_WEIGHTS={weights} workflow/campaigns/gpu-inception.sh split")
    assert split.returncode == 0, split.stderr
    assert sorted(p.name for p in here.glob(".devinc*")) == [".devinc1", ".devinc2"]
    (here / ".devdata").mkdir()
    shutil.copy2(mirror / "MANIFEST.tsv", here / ".devdata" / "MANIFEST.tsv")
    shutil.copytree(mirror / "mnist", here / ".devdata" / "mnist", copy_function=os.link)
    carried = [".devdata/MANIFEST.tsv", ".devinc1/x", ".devinc2/x", ".whl/x.whl"]
    ignored = subprocess.run(["git", "-C", str(REPO_ROOT), "check-ignore", *carried], capture_output=True, text=True)
    assert ignored.stdout.split() == carried, "a carried folder must be ignored by git, or it travels with every call"

    # call 0: no budget: the set-up alone (the budget counts from the call's start), which call 1's budget adds to
    working_tree(device)
    assert carry(here, device, ".devdata", ".devinc1") <= 64 * MIB
    call, setup = window(device, keep, tmp_path / "out0", 0)
    later = re.findall(r"^toy-mnist-seed\d: left for a later call", call.stdout, re.M)
    assert call.returncode == 0 and len(later) == 2, call.stdout + call.stderr

    # call 1: the first weights part and the data; the budget stops the second entry, the first is left
    budget = setup / 60 + STOP_AFTER_SETUP
    call, seconds = window(device, keep, out1, budget)
    assert call.returncode == 0, call.stdout[-3000:] + call.stderr[-3000:]
    assert "gpu-window: packages already importable" in call.stdout
    assert "gpu-window: FID left for a later call (a part missing)" in call.stdout
    assert seconds < budget * 60 + 60, f"the stopped call took {seconds:.0f} s"
    # the stopped entry comes back with what it finished so far (a window's next call may never come)
    assert sorted(p.name for p in came_back(out1)) == ["queue.txt", "toy-mnist-seed1.tar.gz"]
    report = (out1 / "queue" / "queue.txt").read_text().splitlines()
    assert report[0].startswith("device: cpu") and "10 DP-SGD steps" in report[0], report
    assert report[1].startswith("toy-mnist-seed0: left for a later call"), report
    assert report[2].startswith("toy-mnist-seed1: stopped"), report
    assert "(the runs finished so far); resumes from its checkpoints" in report[2] and "FID left" in report[2], report
    # where the budget caught it decides call 2's order: stopped after its training, it leads the wave (next_wave)
    stopped = device / run_dir("paper", run_id("mnist", "dp2vae", "10", 1))
    trained = train_record(stopped).is_file()
    order = "toy-mnist-seed1 \\+ toy-mnist-seed0" if trained else "toy-mnist-seed0 \\+ toy-mnist-seed1"

    # call 2 on the same warm machine: the second part joins the weights, the stopped entry resumes, both finish
    assert carry(here, device, ".devinc2") <= 64 * MIB
    call, _ = window(device, keep, out2, 5)
    assert call.returncode == 0, call.stdout[-3000:] + call.stderr[-3000:]
    assert f"gpu-window: joined {keep / WEIGHTS_NAME}" in call.stdout
    assert sorted(p.name for p in came_back(out2)) == ["queue.txt", "toy-mnist-seed0.tar.gz", "toy-mnist-seed1.tar.gz"]
    report = (out2 / "queue" / "queue.txt").read_text()
    assert re.search(r"^toy-mnist-seed0: ok in .*toy-mnist-seed0\.tar\.gz: [\d.]+ MiB$", report, re.M), report
    assert re.search(r"^toy-mnist-seed1: ok in .*toy-mnist-seed1\.tar\.gz: [\d.]+ MiB$", report, re.M), report
    # both in one wave, side by side on the (here: CPU) device, its prediction beside what it took
    assert "side by side with 1 other entry" in report, report
    assert re.search(rf"^wave 1 \({order}\): predicted [\d.]+ min, took [\d.]+ min, ok$", report, re.M), report
    assert train_record(stopped).is_file(), f"{stopped}: not where the queue trains the stopped entry"

    # here: unpack, then the build-and-record line it suggests for the table holding both seeds
    unpacked = here_run(
        here, mirror, f"{sys.executable} workflow/campaigns/gpu_queue.py unpack {out2 / 'queue'} --queue {QUEUE}"
    )
    assert unpacked.returncode == 0, unpacked.stderr
    line = next((x for x in unpacked.stdout.splitlines() if x.strip().startswith(f"{TABLE}: every run here; ")), None)
    assert line, unpacked.stdout
    recorded = here_run(here, mirror, line.split("every run here; ", 1)[1])
    assert recorded.returncode == 0, recorded.stdout[-3000:] + recorded.stderr[-3000:]
    ran = set(re.findall(r"^rule (\w+):", recorded.stdout, re.M))
    assert ran.isdisjoint({"fetch", "prepare", "stage1", "train", "sample", "evaluate", "reference"}), ran
    rows = pd.read_csv(here / "reproductions" / "dp2vae.csv", dtype={"commit": str})
    ours = rows[rows["command"].str.contains("gpu_queue.py run (toy-mnist-seed1)", regex=False, na=False)]
    assert sorted(ours.loc[(ours["item"] == "table1") & (ours["metric"] == "fid"), "seed"]) == [0, 1], ours
    assert set(ours["commit"]) == {COMMIT} and ours["device"].str.startswith("cpu").all(), ours
    status = here_run(here, mirror, f"{sys.executable} workflow/campaigns/gpu_queue.py status --queue {QUEUE}")
    assert status.stdout.count("recorded") == 2, status.stdout  # the next window skips both

    # the scorecard reads the copy: Table 1's MNIST FID of DP²-VAE has our two seeds, which replace the rows of
    # the same key and seed that another campaign recorded (`record` keys rows by their key, seed and variant)
    before = scorecard("dp2vae", REPO_ROOT / "reproductions")
    after = scorecard("dp2vae", here / "reproductions")
    cell = (after["item"] == "table1") & (after["dataset"] == "mnist") & (after["method"] == "dp2vae")
    cell &= (after["metric"] == "fid") & (after["epsilon"] == 10)
    assert cell.sum() == 1, after[cell]
    old = pd.read_csv(REPO_ROOT / "reproductions" / "dp2vae.csv")
    old = old[(old["item"] == "table1") & (old["dataset"] == "mnist") & (old["method"] == "dp2vae")]
    replaced = old[(old["metric"] == "fid") & (old["epsilon"] == 10) & old["seed"].isin([0, 1])]
    assert int(after.loc[cell, "n"].iloc[0]) == int(before.loc[cell, "n"].iloc[0]) + 2 - len(replaced)
    assert (REPO_ROOT / "reproductions" / "dp2vae.csv").read_bytes() == real_reproductions
