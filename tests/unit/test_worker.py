"""The warm worker (dpvae.worker): a job forked from it prints, exits and fails exactly as it would in its own
process, without paying for the imports; a cancelled job's child dies; without a worker the command runs alone."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dpvae.paths import REPO_ROOT

SRC = str(REPO_ROOT / "src")


def _start(path: Path, code: str) -> subprocess.Popen:
    worker = subprocess.Popen(
        [sys.executable, "-c", code, str(path), str(os.getpid())],
        env={**os.environ, "PYTHONPATH": SRC},
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 300
    while not path.exists():
        assert worker.poll() is None, worker.stderr.read().decode()
        assert time.monotonic() < deadline, "the worker did not listen within 300 s"
        time.sleep(0.2)
    return worker


@pytest.fixture(scope="module")
def worker(tmp_path_factory):
    path = tmp_path_factory.mktemp("worker") / "socket"
    process = _start(path, "import sys; from dpvae.worker import serve; serve(sys.argv[1], int(sys.argv[2]))")
    yield path
    process.terminate()
    process.wait(timeout=30)
    assert not path.exists(), "the worker removes its socket when stopped"


def _dpvae(
    *args: str, cwd: Path, worker: Path | None = None, imports: bool = False
) -> tuple[subprocess.CompletedProcess, set[str]]:
    """Run `python -m dpvae ARGS` with fd 3 open on a file, as the rules do (`3>&2`); the result (its
    `channel`: what reached fd 3) and, with `imports`, the modules the client's own interpreter imported
    (`PYTHONPROFILEIMPORTTIME`: read when an interpreter starts, so a job forked from the worker reports none)."""
    env = {**os.environ, "PYTHONPATH": SRC, "DPVAE_ERROR_FD": "3", "CHANNEL": str(Path(cwd, "channel.txt"))}
    env.pop("DPVAE_WORKER", None)
    env.pop("PYTHONPROFILEIMPORTTIME", None)
    if imports:
        env["PYTHONPROFILEIMPORTTIME"] = "1"
    if worker is not None:
        env["DPVAE_WORKER"] = str(worker)
    result = subprocess.run(
        ["bash", "-c", 'exec "$@" 3>"$CHANNEL"', "_", sys.executable, "-m", "dpvae", *args],
        env=env,
        capture_output=True,
        text=True,
        cwd=cwd,
    )
    result.channel = Path(env["CHANNEL"]).read_text()
    profiled = [line for line in result.stderr.splitlines() if line.startswith("import time:")]
    result.stderr = "".join(line + "\n" for line in result.stderr.splitlines() if not line.startswith("import time:"))
    return result, {line.rsplit("|", 1)[1].strip() for line in profiled[1:]}  # [1:]: the header line


def test_a_job_in_the_worker_prints_what_it_prints_alone_without_the_imports(worker, tmp_path):
    # `status` imports the configuration and every registry (listing the methods alone is light by now)
    config = str(REPO_ROOT / "config.yaml")
    alone, alone_imports = _dpvae("status", config, cwd=tmp_path, imports=True)
    warm, warm_imports = _dpvae("status", config, worker=worker, cwd=tmp_path, imports=True)
    assert alone.returncode == warm.returncode == 0
    assert warm.stdout == alone.stdout and "privae" in warm.stdout
    # the client only starts Python and forwards its files; the imports happened once, in the worker
    assert "dpvae.worker" in warm_imports and {"dpvae.cli", "dpvae.config"} <= alone_imports - warm_imports
    assert not {m for m in warm_imports if m.startswith(("dpvae.cli", "dpvae.config", "torch"))}, warm_imports


def test_a_failing_job_in_the_worker_fails_the_same_way(worker, tmp_path):
    alone, _ = _dpvae("methods", "nosuch", cwd=tmp_path)
    for _ in range(3):
        warm, _ = _dpvae("methods", "nosuch", worker=worker, cwd=tmp_path)
        assert alone.returncode == warm.returncode == 2
        assert warm.stderr == alone.stderr and "unknown method 'nosuch'" in warm.stderr
        assert warm.channel == alone.channel == alone.stderr  # the rules' fd 3 reaches the terminal


def test_a_bug_in_a_job_ends_with_one_line_alone_and_in_the_worker(worker, tmp_path):
    # a spec of the wrong shape (its tables a list): an AttributeError inside the stage, not a user-fixable error
    # (a missing key is one: exit 2, "no key ...")
    spec = {"item": "p3gm/table6", "scale": "smoke", "tables": [], "artifacts": [], "context": {}, "settings": {}}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    (tmp_path / "logs").mkdir()
    alone, _ = _dpvae("render", "--spec", "spec.json", cwd=tmp_path)
    warm, _ = _dpvae("render", "--spec", "spec.json", worker=worker, cwd=tmp_path)
    assert alone.returncode == warm.returncode == 1
    line = "dpvae: error: render failed: AttributeError: 'list' object has no attribute 'items' (traceback above)\n"
    assert alone.channel == warm.channel == line, "one line on the terminal (the rules' fd 3)"
    for result in (alone, warm):
        assert "Traceback (most recent call last)" in result.stderr and result.stderr.endswith(line)
    # in a job, stderr is the log: the line says so
    logged = subprocess.run(
        [
            "bash",
            "-c",
            'exec "$@" 2>logs/job.log',
            "_",
            sys.executable,
            "-m",
            "dpvae",
            "render",
            "--spec",
            "spec.json",
        ],
        env={**os.environ, "PYTHONPATH": SRC},
        cwd=tmp_path,
    )
    assert logged.returncode == 1
    assert (tmp_path / "logs" / "job.log").read_text().endswith("(traceback in logs/job.log)\n")


def test_the_job_works_in_the_clients_directory(worker, tmp_path):
    (tmp_path / "t.csv").write_text("not,a,table\n")
    alone, _ = _dpvae("record", "t.csv", "--out-dir", "out", cwd=tmp_path)
    warm, _ = _dpvae("record", "t.csv", "--out-dir", "out", worker=worker, cwd=tmp_path)
    assert alone.returncode == warm.returncode != 0
    assert warm.stderr == alone.stderr and "t.csv" in warm.stderr


def test_without_a_listening_worker_the_command_runs_alone(tmp_path):
    result, imported = _dpvae("methods", worker=tmp_path / "no-such-socket", cwd=tmp_path, imports=True)
    assert result.returncode == 0 and "privae" in result.stdout and "dpvae.cli" in imported


def test_a_cancelled_job_is_killed_with_its_process_group(tmp_path):
    path = tmp_path / "socket"
    marker = tmp_path / "child.pid"
    # a worker whose jobs write their pid and sleep (no preload: this is about the process handling)
    code = (
        "import os, sys, time, dpvae.cli as cli\n"
        f"cli.main = lambda argv: (open({str(marker)!r}, 'w').write(str(os.getpid())), time.sleep(120))\n"
        "from dpvae.worker import serve; serve(sys.argv[1], int(sys.argv[2]), warm=False)"
    )
    process = _start(path, code)
    try:
        client = subprocess.Popen(
            [sys.executable, "-m", "dpvae", "methods"], env={**os.environ, "PYTHONPATH": SRC, "DPVAE_WORKER": str(path)}
        )
        deadline = time.monotonic() + 60
        while not marker.exists() or not marker.read_text():
            assert time.monotonic() < deadline and client.poll() is None
            time.sleep(0.1)
        child = int(marker.read_text())
        client.send_signal(signal.SIGTERM)  # Snakemake cancelling the job
        client.wait(timeout=10)
        deadline = time.monotonic() + 10
        while _alive(child):
            assert time.monotonic() < deadline, "the cancelled job's child still runs"
            time.sleep(0.1)
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_the_worker_runs_in_the_starting_process_session_in_a_group_of_its_own(tmp_path):
    """`start` as the Snakefile calls it: a process group of its own (the terminal's Ctrl-C is not for it) in
    Snakemake's session, since under Linux's autogroup scheduling a session is a scheduling group and nice values
    weigh only inside one (a worker in a session of its own ran the breast-cancer walk-through's two-thread P3GM
    job at half a core beside tests/run.sh's niced second pytest process: 52 s became 319 s in CI)."""
    from dpvae import worker

    started = worker.start(SRC, tmp_path / "worker.log")
    try:
        pid = started.process.pid
        assert os.getsid(pid) == os.getsid(0), "the worker left Snakemake's session (a scheduling group of its own)"
        assert os.getpgid(pid) == pid != os.getpgid(0)
    finally:
        worker.stop(started)
    assert worker.ENV_VAR not in os.environ


def test_stopping_a_worker_that_does_not_exit_kills_it_without_failing_the_build(tmp_path, monkeypatch):
    """`stop` runs in the Snakefile's onsuccess: a worker still busy after SIGTERM (a smoke build's worker took over
    30 s under load, and the timeout failed a build whose 470 jobs had all finished) is killed, not waited on."""
    from dpvae import worker

    monkeypatch.setattr(worker, "STOP_GRACE_S", 0.5)
    deaf_code = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print(1, flush=True); time.sleep(60)"
    )
    deaf = subprocess.Popen([sys.executable, "-c", deaf_code], stdout=subprocess.PIPE)
    deaf.stdout.readline()  # its handler is in place
    (tmp_path / "folder").mkdir()
    worker.stop(worker.LocalWorker(deaf, tmp_path / "folder"))
    assert deaf.returncode == -signal.SIGKILL and not (tmp_path / "folder").exists()


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"
