"""A training job killed with SIGKILL resumes from its checkpoint where it stopped and releases the bytes of an
uninterrupted run: the same ledger, and on CPU the same model and samples.

The job is `python -m dpvae train` of a checkpointing DP-SGD method (`support.ckpt_method`, the paper
methods' loop in small: Poisson batches, the project's DP-SGD engine, every random stream in the checkpoint),
checkpointing every 4 steps (`DPVAE_CHECKPOINT_EVERY_STEPS`), killed once a checkpoint exists.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from dpvae.data.registry import prepare_dataset
from dpvae.files import temporaries
from dpvae.methods.checkpoint import EVERY_STEPS_VARIABLE
from dpvae.paths import REPO_ROOT, checkpoint_file, ledger_file, model_path
from dpvae.runspec import RunSpec

STEPS = 60
#: run the CLI with the test method registered (the registry only discovers the package's own modules)
CLI = "import sys, support.ckpt_method; from dpvae.cli import main; sys.exit(main(sys.argv[1:]))"


def spec(root: Path, run: str, **params) -> RunSpec:
    return RunSpec.standalone(
        "twogauss-d5/ckpt-test/eps10/seed0",
        root / run,
        scale="test",
        dataset="twogauss-d5",
        method="ckpt-test",
        params={"steps": STEPS, "max_train": 2000, **params},
        epsilon=10.0,
        delta=1e-5,
        device="cpu",
        data_root=root / "data",
    )


def cli(*args: str, log: Path) -> subprocess.Popen:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "src"), str(REPO_ROOT / "tests")]),
        EVERY_STEPS_VARIABLE: "4",
        "OMP_NUM_THREADS": "1",
    }
    with open(log, "ab") as stream:
        return subprocess.Popen([sys.executable, "-c", CLI, *args], stdout=stream, stderr=subprocess.STDOUT, env=env)


def finished(process: subprocess.Popen, log: Path) -> None:
    assert process.wait(timeout=600) == 0, log.read_text()[-3000:]


def outputs(run: Path) -> dict[str, bytes]:
    names = ["model/model.pt", "privacy.json", "samples.npz"]
    return {name: (run / name).read_bytes() for name in names}


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("resume")
    prepare_dataset("twogauss-d5", root / "data")
    return root


def test_a_killed_train_resumes_where_it_stopped_with_the_same_bytes(root):
    whole, killed = spec(root, "whole", step_seconds=0.05), spec(root, "killed", step_seconds=0.05)
    log = root / "whole.log"
    finished(cli("train", "--spec", whole.to_json(), log=log), log)
    finished(cli("sample", "--run", whole.run, "--n", "256", log=log), log)
    assert "trained steps 1..60" in log.read_text() and not checkpoint_file(Path(whole.run)).exists()

    run = Path(killed.run)
    log = root / "killed.log"
    slow_spec = killed.to_json()
    first = cli("train", "--spec", slow_spec, log=log)
    deadline = time.monotonic() + 300
    while not checkpoint_file(run).exists():
        assert first.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.02)
    time.sleep(0.3)  # a few steps past the checkpoint
    first.send_signal(signal.SIGKILL)
    first.wait()
    assert not model_path(run).exists() and not ledger_file(run).exists(), "nothing half-released"
    assert temporaries(model_path(run)), "the killed job's partial model is still there"

    again = cli("train", "--spec", slow_spec, log=log)
    finished(again, log)
    text = log.read_text()
    resumed = re.search(r"resuming from checkpoint \S+ at step (\d+)", text)
    assert resumed and 0 < int(resumed[1]) < STEPS, text[-3000:]
    assert f"trained steps {int(resumed[1]) + 1}..{STEPS}" in text, "the resumed job ran only the remaining steps"
    assert not temporaries(model_path(run)) and not checkpoint_file(run).exists(), "no temporary, no checkpoint"
    finished(cli("sample", "--run", str(run), "--n", "256", log=log), log)

    expected, got = outputs(Path(whole.run)), outputs(run)
    ledger = json.loads(got["privacy.json"])
    assert ledger == json.loads(expected["privacy.json"]) and ledger["mechanisms"][0]["steps"] == STEPS
    assert got["model/model.pt"] == expected["model/model.pt"], "the resumed model differs"
    assert got["samples.npz"] == expected["samples.npz"], "the resumed model's samples differ"


def test_a_checkpoint_of_another_spec_or_a_damaged_one_is_not_resumed(root):
    run_spec = spec(root, "other")
    run = Path(run_spec.run)
    run.mkdir(parents=True)
    log = root / "other.log"
    checkpoint_file(run).write_bytes(b"not a checkpoint")
    finished(cli("train", "--spec", run_spec.to_json(), log=log), log)
    assert "ignoring unreadable checkpoint" in log.read_text() and "trained steps 1..60" in log.read_text()

    import torch

    torch.save({"key": "another spec", "state": {"step": 30}}, checkpoint_file(run))
    finished(cli("train", "--spec", run_spec.to_json(), log=log), log)
    text = log.read_text()
    assert "belongs to another spec" in text and text.count("trained steps 1..60") == 2


def test_a_run_past_its_budget_says_so_in_one_line(root):
    run_spec = replace(spec(root, "overspent"), epsilon=0.01)
    log = root / "overspent.log"
    process = cli("train", "--spec", run_spec.to_json(), log=log)
    assert process.wait(timeout=600) == 2
    last = log.read_text().strip().splitlines()[-1]
    assert re.fullmatch(
        r"dpvae: error: privacy budget exceeded for this run: accounted epsilon [0-9.]+ > target "
        r"epsilon 0\.01; raise the noise or lower the steps",
        last,
    ), last
    assert "Traceback" not in log.read_text()
    assert not model_path(Path(run_spec.run)).exists() and not ledger_file(Path(run_spec.run)).exists()
