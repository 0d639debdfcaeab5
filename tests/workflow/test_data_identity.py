"""The data's identity is its checksum, not where it came from: switching the mirror on, off or elsewhere
plans no job after a build; a mirror that does not exist stops Snakemake before any job, naming it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from support import workflow_runs

TARGET = "data/prepared/adult"
pytestmark = pytest.mark.workflow


def snakemake(*args: str, cwd: Path, mirror: Path | None) -> subprocess.CompletedProcess:
    return workflow_runs.snakemake(workflow_runs.smoke(), *args, cwd=cwd, mirror=mirror, timeout=900)


def planned_jobs(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, result.stderr[-3000:]
    output = result.stdout + result.stderr
    return "" if "Nothing to be done" in output else output


def test_toggling_the_mirror_plans_no_job_after_a_build(tmp_path: Path, mirror: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    built = snakemake("--cores", "1", TARGET, cwd=work, mirror=mirror)
    assert built.returncode == 0, built.stderr[-3000:]
    assert (work / TARGET / "train.npz").is_file()
    elsewhere = tmp_path / "other-mirror"
    shutil.copytree(mirror / "adult", elsewhere / "adult")
    in_config = tmp_path / "mirror-in-config.yaml"
    in_config.write_text(f"data:\n  mirror: {elsewhere}\n")

    assert planned_jobs(snakemake("-n", TARGET, cwd=work, mirror=mirror)) == "", "nothing changed"
    assert planned_jobs(snakemake("-n", TARGET, cwd=work, mirror=None)) == "", "mirror switched off"
    assert planned_jobs(snakemake("-n", TARGET, cwd=work, mirror=elsewhere)) == "", "another mirror"
    assert planned_jobs(snakemake("-n", f"--configfile={in_config}", TARGET, cwd=work, mirror=None)) == "", (
        "the mirror set by the config key data.mirror"
    )
    # the check can fail: a job whose input really changed is planned
    marker = work / "data" / "raw" / "adult" / "SHA256SUMS"
    marker.write_text(marker.read_text() + "\n")
    assert "prepare" in planned_jobs(snakemake("-n", TARGET, cwd=work, mirror=None))


def test_a_mirror_that_does_not_exist_stops_snakemake_before_any_job(tmp_path: Path) -> None:
    absent = tmp_path / "no-such-mirror"
    result = snakemake("--cores", "1", TARGET, cwd=tmp_path, mirror=absent)
    assert result.returncode != 0
    assert f"data mirror {absent} does not exist" in result.stderr
    assert not (tmp_path / "data").exists() and not (tmp_path / "logs").exists()
