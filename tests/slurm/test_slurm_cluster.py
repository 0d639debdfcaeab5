"""Opt-in (`pytest -m slurm`): bring up a one-node SLURM with accounting (local-cluster.sh) and run the SLURM
profile on the smoke items; every submitted job must be COMPLETED in sacct and the targets built.

Needs root and apt-get (or the packages already installed); it installs and starts system daemons, so it
never runs by default. The cluster is left running afterwards (`local-cluster.sh down` stops it).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dpvae.paths import REPO_ROOT

SCRIPT = REPO_ROOT / "workflow" / "profiles" / "slurm" / "local-cluster.sh"
COMMAND = [
    "--workflow-profile",
    "workflow/profiles/slurm",
    "--configfile=tests/config/smoke.yaml",
    "figures/p3gm/table3.pdf",
    "figures/p3gm/fig9.pdf",
]
TARGETS = ("figures/p3gm/table3.pdf", "figures/p3gm/table3.csv", "figures/p3gm/table3.tex", "figures/p3gm/fig9.pdf")
SLURM_RULES = {"fetch": 3, "prepare": 3}  # the rest (analyze, render_*) are localrules
GENERATED = {".venv", ".git", "data", "results", "figures", "logs", ".snakemake", ".pytest_cache"}


def generated(directory: str, names: list[str]) -> set[str]:
    """What a fresh checkout does not have: the top level's generated directories, caches anywhere."""
    top = GENERATED if Path(directory) == REPO_ROOT else set()
    return {n for n in names if n in top or n == "__pycache__" or n.endswith(".egg-info")}


pytestmark = pytest.mark.slurm


@pytest.fixture(scope="module")
def cluster(request: pytest.FixtureRequest) -> None:
    if "slurm" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("opt-in: run with `pytest -m slurm` (installs and starts munge, MariaDB and SLURM daemons)")
    if os.geteuid() != 0:
        pytest.skip("needs root: local-cluster.sh installs packages and starts system daemons")
    if shutil.which("slurmctld") is None and shutil.which("apt-get") is None:
        pytest.skip("SLURM is not installed and there is no apt-get to install it (Debian slurm-wlm, slurmdbd)")
    up = subprocess.run([str(SCRIPT), "up"], capture_output=True, text=True, timeout=1200)
    assert up.returncode == 0, up.stderr[-3000:]
    check = subprocess.run([str(SCRIPT), "check"], capture_output=True, text=True, timeout=300)
    assert check.returncode == 0 and "COMPLETED" in check.stdout, check.stdout + check.stderr


def sacct_states(run_id: str) -> dict[str, str]:
    """{job id: state} of the jobs Snakemake submitted under this run id (its sbatch --job-name)."""
    result = subprocess.run(
        ["sacct", "-X", "-n", "-P", "-S", "now-1days", "--name", run_id, "-o", "JobID,State"],
        capture_output=True,
        text=True,
        check=True,
    )
    return {line.split("|")[0]: line.split("|")[1] for line in result.stdout.splitlines() if line}


def test_hostname_job_is_completed_in_sacct(cluster: None) -> None:
    job = subprocess.run(
        ["sbatch", "--parsable", "--wait", "--output=/dev/null", "--wrap", "hostname"],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout.strip()
    for _ in range(60):
        state = subprocess.run(
            ["sacct", "-n", "-X", "-P", "-j", job, "-o", "State"], capture_output=True, text=True
        ).stdout.strip()
        if state == "COMPLETED":
            break
        time.sleep(1)
    assert state == "COMPLETED"


def test_the_slurm_profile_builds_the_smoke_items_with_every_job_completed(
    cluster: None, tmp_path: Path, mirror: Path
) -> None:
    checkout = tmp_path / "dpvae"
    shutil.copytree(REPO_ROOT, checkout, ignore=generated)
    env = {**os.environ, "DPVAE_DATA_MIRROR": str(mirror)}
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", *COMMAND],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    wall = time.monotonic() - started
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-5000:]
    for target in TARGETS:
        assert (checkout / target).is_file(), target
    run_id = re.search(r"SLURM run ID: (\S+)", output).group(1)
    submitted = re.findall(r"Job \d+ has been submitted with SLURM jobid (\d+)", output)
    assert len(submitted) == sum(SLURM_RULES.values()), output[-5000:]
    states = sacct_states(run_id)
    assert set(states) == set(submitted) and set(states.values()) == {"COMPLETED"}, states
    print(f"\nSLURM profile: {len(states)} jobs, all COMPLETED in sacct; wall time {wall:.0f} s")


GPU_OVERLAY = """
variants:
  ckpt-test-gpu: {method: ckpt-test-gpu, params: {steps: 20, max_train: 2000}}
experiments:
  slurm_gpu: {paper: p3gm, description: SLURM GPU request test, datasets: [twogauss-d5],
              variants: [ckpt-test-gpu], epsilons: [10], seeds: 1, metrics: []}
"""
GPU_TRAIN = "results/smoke/runs/twogauss-d5/ckpt-test-gpu/eps10/seed0/train.json"


@pytest.fixture()
def gpu_checkout(tmp_path: Path) -> Path:
    """A checkout with `ckpt-test-gpu` (a small DP-SGD method declaring a GPU) and an overlay that trains it."""
    import yaml

    from dpvae.schema import deep_update

    checkout = tmp_path / "dpvae"
    shutil.copytree(REPO_ROOT, checkout, ignore=generated)
    (checkout / "src" / "dpvae" / "methods" / "ckpt_test").mkdir()  # a method family: its own package
    shutil.copy2(
        REPO_ROOT / "tests" / "support" / "ckpt_method.py",
        checkout / "src" / "dpvae" / "methods" / "ckpt_test" / "__init__.py",
    )
    overlay = deep_update(
        yaml.safe_load((checkout / "tests" / "config" / "smoke.yaml").read_text()), yaml.safe_load(GPU_OVERLAY)
    )
    (checkout / "overlay.yaml").write_text(yaml.safe_dump(overlay))
    return checkout


def test_a_gpu_method_asks_slurm_for_a_gpu_unless_device_is_cpu(cluster: None, gpu_checkout: Path) -> None:
    """With `device: cpu` its train job runs without a GPU (none in sacct's TRES); otherwise it is submitted
    with --gpus=1 (which this GPU-less cluster refuses)."""
    command = [
        sys.executable,
        "-m",
        "snakemake",
        "--workflow-profile",
        "workflow/profiles/slurm",
        "--configfile=overlay.yaml",
        GPU_TRAIN,
    ]
    on_cpu = subprocess.run(
        [*command, "--config", "device=cpu"], cwd=gpu_checkout, capture_output=True, text=True, timeout=1800
    )
    output = on_cpu.stdout + on_cpu.stderr
    assert on_cpu.returncode == 0, output[-5000:]
    train_job = re.search(r"submitted with SLURM jobid (\d+) \(log: \S+rule_train", output).group(1)
    tres = subprocess.run(
        ["sacct", "-X", "-n", "-P", "-j", train_job, "-o", "State,ReqTRES,AllocTRES"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    state, requested, allocated = tres.split("|")
    assert state == "COMPLETED" and "gpu" not in requested + allocated and "cpu=1," in requested, tres
    print(f"\nGPU method with device=cpu: SLURM job {train_job} {state}, TRES {requested}")

    shutil.rmtree(gpu_checkout / "results")
    on_gpu = subprocess.run(command, cwd=gpu_checkout, capture_output=True, text=True, timeout=1800)
    output = on_gpu.stdout + on_gpu.stderr
    assert on_gpu.returncode != 0 and re.search(r"sbatch .* --gpus=1 ", output), output[-5000:]
