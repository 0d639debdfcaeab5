"""Faults and resume through Snakemake, as a user meets them: `kill -9` of the whole run (its process group) while a
prepare job writes and while a train job writes, then `kill -9` of Snakemake alone while the train job runs. After
each, the same command again (after Snakemake's own `--unlock`; `rerun-incomplete` comes from the default profile,
which the command does not name: Snakemake finds it) carries on: what a killed job wrote is absent or complete,
never half; no job that Snakemake reported finished is redone; the train job resumes from its checkpoint; the end
result has the bytes of an uninterrupted run and no temporary file is left. A train job that overspends its budget
fails with the one-line message in its log and on the terminal.

The target is one run of `ckpt-test` (tests/support/ckpt_method.py, a small checkpointing DP-SGD method,
copied into a repository copy) on MNIST as P3GM prepares it: fetch -> prepare -> train -> sample.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from dpvae.files import temporaries
from dpvae.paths import REPO_ROOT
from dpvae.schema import deep_update
from support.workflow_runs import (
    copy_repository,
    files,
    leftover_temporaries,
    snakemake,
    snakemake_command,
    snakemake_env,
)

pytestmark = [pytest.mark.workflow, pytest.mark.slow]
RUN = "results/smoke/runs/mnist-p3gm/ckpt-test/eps10/seed0"
TARGET = f"{RUN}/samples.npz"
OVERSPENT = "results/smoke/runs/mnist-p3gm/ckpt-test/eps0.01/seed0/train.json"
FAULTS = """
variants:
  ckpt-test: {method: ckpt-test, params: {steps: 40, max_train: 2000, step_seconds: 0.1}}
experiments:
  faults:
    paper: p3gm
    description: fault and resume tests only
    datasets: [mnist-p3gm]
    variants: [ckpt-test]
    epsilons: [10, 0.01]
    seeds: 1
    metrics: []
"""
#: compared with the uninterrupted build (train.json holds timings: its spec is compared instead)
OUTPUTS = (
    "data/raw/mnist/*",
    "data/prepared/mnist-p3gm/*",
    f"{RUN}/model/*",
    f"{RUN}/privacy.json",
    f"{RUN}/samples.npz",
)


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    """A repository copy with the test method registered and an overlay (smoke + the faults experiment)."""
    repo = copy_repository(tmp_path_factory.mktemp("faults-repo"))
    (repo / "src" / "dpvae" / "methods" / "ckpt_test").mkdir()  # a method family: its own package
    shutil.copy2(
        REPO_ROOT / "tests" / "support" / "ckpt_method.py",
        repo / "src" / "dpvae" / "methods" / "ckpt_test" / "__init__.py",
    )
    overlay = deep_update(
        yaml.safe_load((repo / "tests" / "config" / "smoke.yaml").read_text()), yaml.safe_load(FAULTS)
    )
    (repo / "overlay.yaml").write_text(yaml.safe_dump(overlay))
    return repo


def args(repo: Path, *targets: str) -> list[str]:
    """The user's command: no profile named (Snakemake finds profiles/default beside the Snakefile)."""
    return [f"--configfile={repo / 'overlay.yaml'}", *(targets or (TARGET,))]


def start(repo: Path, work: Path, mirror: Path, log: Path) -> subprocess.Popen:
    """The user's command in the background, in its own process group (as a terminal would start it)."""
    env = {**snakemake_env(mirror), "DPVAE_CHECKPOINT_EVERY_STEPS": "5"}
    with open(log, "w") as stream:
        return subprocess.Popen(
            [*snakemake_command(repo, work), *args(repo)],
            cwd=work,
            env=env,
            stdout=stream,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def wait_for(condition: Callable[[], object], process: subprocess.Popen, log: Path, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert process.poll() is None, f"the run ended before the fault: {log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"timed out: {log.read_text()[-3000:]}"
        time.sleep(0.02)


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def finished_outputs(work: Path, log: Path) -> dict[Path, int]:
    """The outputs of every job Snakemake reported finished in `log`, with their modification times."""
    text = log.read_text()
    outputs = {}
    for block in re.split(r"\n(?=\[)", text):
        jobid, output = re.search(r"jobid: (\d+)", block), re.search(r"output: (.+)", block)
        if jobid and output:
            outputs[jobid[1]] = [o.strip() for o in output[1].split(",")]
    done = set(re.findall(r"Finished jobid: (\d+)", text))
    return {work / p: (work / p).stat().st_mtime_ns for j in done for p in outputs.get(j, [])}


def unlock(repo: Path, work: Path, mirror: Path) -> None:
    result = snakemake("--unlock", *args(repo), cwd=work, mirror=mirror, repo=repo)
    assert result.returncode == 0, result.stderr[-3000:]


@pytest.fixture(scope="module")
def uninterrupted(repo, mirror, tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("uninterrupted")
    result = snakemake(*args(repo), cwd=work, mirror=mirror, repo=repo)
    assert result.returncode == 0, result.stderr[-5000:]
    return work


def test_killed_runs_resume_to_the_bytes_of_an_uninterrupted_run(repo, uninterrupted, mirror, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    prepared, run = work / "data" / "prepared" / "mnist-p3gm", work / RUN
    kept: dict[Path, int] = {}

    # 1. kill -9 of the whole run while the prepare job writes
    log = tmp_path / "1.log"
    first = start(repo, work, mirror, log)
    wait_for(lambda: temporaries(prepared), first, log)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    assert not prepared.exists(), "the killed prepare job left no prepared set (absent, never half)"
    kept |= finished_outputs(work, log)
    assert work / "data/raw/mnist/SHA256SUMS" in kept, "the fetch job had finished"

    # 2. the same command again, killed (whole run) while the train job writes, after a checkpoint
    unlock(repo, work, mirror)
    log = tmp_path / "2.log"
    second = start(repo, work, mirror, log)
    wait_for(lambda: (run / "checkpoint.pt").exists(), second, log)
    os.killpg(second.pid, signal.SIGKILL)
    second.wait()
    assert not (run / "model").exists() and not (run / "privacy.json").exists(), "no half-released model"
    assert files(work, ("data/prepared/mnist-p3gm/*",)) == files(uninterrupted, ("data/prepared/mnist-p3gm/*",))
    kept |= finished_outputs(work, log)
    assert prepared in kept, "the prepare job had finished"

    # 3. the same command again; kill -9 of Snakemake alone once the train job has resumed
    unlock(repo, work, mirror)
    log = tmp_path / "3.log"
    third = start(repo, work, mirror, log)
    train_log = work / "logs" / RUN / "train.log"
    wait_for(lambda: train_log.exists() and "resuming from checkpoint" in train_log.read_text(), third, log)
    assert re.search(r"resuming from checkpoint \S+ at step [1-9]\d*", train_log.read_text()), train_log.read_text()
    third.send_signal(signal.SIGKILL)  # the train job goes on, orphaned
    third.wait()
    assert "Using workflow specific profile" in log.read_text(), "the command ran without the default profile"

    # 4. the same command again finishes (while the orphan may still be writing the same run)
    unlock(repo, work, mirror)
    result = snakemake(*args(repo), cwd=work, mirror=mirror, repo=repo)
    assert result.returncode == 0, result.stderr[-5000:]
    deadline = time.monotonic() + 600
    while group_alive(third.pid):  # the orphan's output would land later: wait for it
        assert time.monotonic() < deadline
        time.sleep(0.1)

    assert files(work, OUTPUTS) == files(uninterrupted, OUTPUTS), "bytes differ from an uninterrupted run"
    assert files(work, (f"{RUN}/model/*",)), "the model was compared"
    for path, mtime in kept.items():
        assert path.stat().st_mtime_ns == mtime, f"{path.relative_to(work)}: a finished job was redone"
    assert leftover_temporaries(work) == [], "temporary files were left behind"
    assert not (run / "checkpoint.pt").exists()
    rerun = snakemake("-n", *args(repo), cwd=work, mirror=mirror, repo=repo)
    assert "Nothing to be done" in rerun.stdout + rerun.stderr, (rerun.stdout + rerun.stderr)[-3000:]


def test_a_train_job_past_its_budget_fails_with_the_message(repo, uninterrupted, mirror):
    result = snakemake(*args(repo, OVERSPENT), cwd=uninterrupted, mirror=mirror, repo=repo)
    assert result.returncode != 0
    message = re.compile(
        r"dpvae: error: privacy budget exceeded for this run: accounted epsilon [0-9.]+ > target "
        r"epsilon 0\.01( \(relative tolerance [0-9.]+\))?; raise the noise or lower the steps"
    )
    assert message.search(result.stderr), "the message reaches the terminal"
    assert "Error in rule train" in result.stderr
    log = uninterrupted / "logs" / Path(OVERSPENT).parent / "train.log"
    assert message.fullmatch(log.read_text().strip().splitlines()[-1]), "and ends the job's log"
    assert "Traceback" not in log.read_text() and "Traceback" not in result.stderr
    assert not (uninterrupted / Path(OVERSPENT).parent / "model").exists()
