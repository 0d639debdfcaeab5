"""A built project is relocatable: moved (copied) to another directory, or run by another environment (another
interpreter path, as another venv or a cluster node's mount gives), it plans nothing, because no rule's params,
shell command or inputs that Snakemake tracks name the checkout's or the interpreter's absolute path. And a
failing job ends with one `dpvae: error:` line on the terminal, the traceback of a bug in its log."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dpvae.paths import REPO_ROOT
from support.workflow_runs import copy_repository, smoke, snakemake

pytestmark = pytest.mark.workflow
# fetch, prepare, analyze, the item's spec (a `script:` rule) and its render: every kind of rule, in ~30 s
TARGET = "figures/p3gm/table3.pdf"
TABLE = "results/smoke/tables/p3gm_table3.csv"
# the jobs fork from a warm worker (dpvae.worker), started by the moved checkout's Snakefile
WORKER = ("--config", "local_worker=1")  # last: --config takes every word after it


def run(*args: str, repo: Path, mirror: Path | None, python: str = sys.executable) -> subprocess.CompletedProcess:
    """snakemake ARGS in `repo` with its own Snakefile, as a user of that checkout types it."""
    if python == sys.executable:
        return snakemake(smoke(repo), *args, cwd=repo, mirror=mirror, repo=repo, timeout=900)
    command = [python, "-m", "snakemake", "--snakefile", str(repo / "Snakefile"), smoke(repo), *args]
    env = {**os.environ, "DPVAE_DATA_MIRROR": str(mirror) if mirror else ""}
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=repo, timeout=900)


def nothing_to_do(result: subprocess.CompletedProcess) -> bool:
    assert result.returncode == 0, result.stderr[-3000:]
    return "Nothing to be done" in result.stdout + result.stderr


@pytest.fixture(scope="module")
def built(tmp_path_factory, mirror) -> Path:
    repo = tmp_path_factory.mktemp("reloc") / "first"
    repo.mkdir()
    copy_repository(repo)
    result = run("--cores", "2", TARGET, *WORKER, repo=repo, mirror=mirror)
    assert result.returncode == 0, result.stderr[-5000:]
    return repo


def other_environment(root: Path) -> str | None:
    """The running virtual environment at another path (its own pyvenv.cfg and python, the same packages), as
    another venv gives; None outside a venv."""
    if sys.prefix == sys.base_prefix:
        return None
    venv = root / "other-venv"
    (venv / "bin").mkdir(parents=True)
    shutil.copy2(Path(sys.prefix, "pyvenv.cfg"), venv / "pyvenv.cfg")
    (venv / "lib").symlink_to(Path(sys.prefix, "lib"))
    (venv / "bin" / "python").symlink_to(os.path.realpath(sys.executable))
    return str(venv / "bin" / "python")


def test_a_moved_build_run_by_another_environment_plans_nothing(built, mirror, tmp_path):
    moved = tmp_path / "elsewhere" / "project"
    shutil.copytree(built, moved, symlinks=True)  # copy2: the files keep their times, as `mv` or `cp -a` do
    # what Snakemake recorded of every job names neither the checkout nor the interpreter
    for record in (moved / ".snakemake" / "metadata").iterdir():
        text = record.read_text()
        for absolute in (str(built), sys.prefix, os.path.realpath(sys.executable)):
            assert absolute not in text, f"{absolute} in the record of {record.name}: {text[:2000]}"
    assert nothing_to_do(run("-n", TARGET, repo=moved, mirror=mirror)), "moved"
    assert nothing_to_do(run("-n", TARGET, repo=moved, mirror=None)), "moved, without the mirror"
    assert nothing_to_do(run("-n", "--workflow-profile", "workflow/profiles/slurm", TARGET, repo=moved, mirror=mirror))
    python = other_environment(tmp_path)
    if python is not None:
        assert nothing_to_do(run("-n", TARGET, repo=moved, mirror=mirror, python=python)), "another environment"
    # the check can fail: an input that changed is planned; the other environment runs the job, and back in
    # the first one nothing is planned again
    (moved / TABLE).write_text((moved / TABLE).read_text() + "\n")
    assert "render_table" in run("-n", TARGET, repo=moved, mirror=mirror).stdout
    (moved / "logs" / "worker.log").unlink(missing_ok=True)
    rebuilt = run("--cores", "1", TARGET, *WORKER, repo=moved, mirror=mirror, python=python or sys.executable)
    assert rebuilt.returncode == 0, rebuilt.stderr[-3000:]
    assert (moved / "logs" / "worker.log").exists(), "the moved checkout started its worker"
    assert nothing_to_do(run("-n", TARGET, repo=moved, mirror=mirror))


def test_no_job_of_the_smoke_build_names_the_checkout_or_the_interpreter(tmp_path):
    """Every job's shell command and files in a dry run of the whole smoke build (all its rules), run from
    another directory: the checkout's files are named relative to it, nothing names the interpreter."""
    result = snakemake(
        smoke(), "-n", "-p", "all", "figures/table2.pdf", "figures/scorecard.pdf", cwd=tmp_path, timeout=900
    )
    assert result.returncode == 0, result.stderr[-3000:]
    absolute = (str(REPO_ROOT), sys.prefix, os.path.realpath(sys.executable), str(tmp_path))
    shown = [x for x in result.stdout.splitlines() if x.startswith(("Shell command:", "    input:", "    output:"))]
    assert sum(x.startswith("Shell command:") for x in shown) > 400
    for line in shown:
        words = re.split(r"[\s,'\"=:]+", line)
        assert not [w for w in words if w.startswith(absolute)], line


@pytest.mark.parametrize(
    ("content", "line"),
    [
        ('garbage,"\n', f"dpvae: error: {TABLE}: not a readable CSV table (ParserError: "),
        ("a,b\n1,2\n", "dpvae: error: render failed: KeyError: "),  # a renderer raising inside: a bug's line
    ],
    ids=["malformed", "renderer-raises"],
)
def test_a_failing_render_job_ends_with_one_line_on_the_terminal(built, mirror, tmp_path, content, line):
    repo = tmp_path / "project"
    shutil.copytree(built, repo, symlinks=True)
    (repo / TABLE).write_text(content)
    result = run("--cores", "1", TARGET, *WORKER, repo=repo, mirror=mirror)
    assert result.returncode != 0
    before = result.stderr[: result.stderr.index("Error in rule render_table")]
    lines = [x for x in before.splitlines() if x.startswith("dpvae: error:")]
    assert len(lines) == 1 and lines[0].startswith(line), result.stderr[-5000:]
    log = (repo / "logs" / "render" / "p3gm" / "table3.log").read_text()
    assert log.strip().splitlines()[-1] == lines[0], "the line ends the job's log too"
    if "failed:" in line:
        assert lines[0].endswith("(traceback in logs/render/p3gm/table3.log)") and "Traceback" in log
    else:
        assert "Traceback" not in log
