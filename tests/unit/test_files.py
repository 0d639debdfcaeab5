"""Atomic writes (dpvae.files): a reader never sees half a file or directory, and a writer killed with
SIGKILL leaves a temporary that the next writer of the same target removes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dpvae.files import atomic_directory, atomic_write, remove_stale_temporaries, temporaries, write_text

SLOW_WRITER = """
import sys, time
from pathlib import Path
from dpvae.files import atomic_write, atomic_directory

def slow(tmp):
    with open(tmp, "w") as stream:
        stream.write("half")
        stream.flush()
        Path(sys.argv[2]).touch()          # tell the test the temporary exists
        time.sleep(60)

if sys.argv[3] == "file":
    atomic_write(sys.argv[1], slow)
else:
    with atomic_directory(sys.argv[1]) as partial:
        slow(partial / "part.npz")
"""


def _killed_writer(target: Path, kind: str) -> None:
    """Start a writer of `target`, kill it with SIGKILL while it writes, and wait for it to be gone."""
    ready = target.parent / "ready"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    writer = subprocess.Popen([sys.executable, "-c", SLOW_WRITER, str(target), str(ready), kind], env=env)
    deadline = time.monotonic() + 60
    while not ready.exists():
        assert writer.poll() is None and time.monotonic() < deadline, "the writer did not start"
        time.sleep(0.02)
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    ready.unlink()


@pytest.mark.parametrize("kind", ["file", "directory"])
def test_a_killed_writer_leaves_the_old_content_and_the_next_writer_removes_its_temporary(tmp_path, kind):
    target = tmp_path / ("table.csv" if kind == "file" else "prepared")
    if kind == "file":
        write_text(target, "old\n")
    else:
        with atomic_directory(target) as partial:
            (partial / "a").write_text("old\n")
    _killed_writer(target, kind)
    assert len(temporaries(target)) == 1, "SIGKILL leaves the temporary behind"
    assert (target.read_text() if kind == "file" else (target / "a").read_text()) == "old\n", "never half"
    if kind == "file":
        write_text(target, "new\n")
        assert target.read_text() == "new\n"
    else:
        with atomic_directory(target) as partial:
            (partial / "a").write_text("new\n")
        assert sorted(p.name for p in target.iterdir()) == ["a"]
    assert temporaries(target) == [], "the next writer removed the dead writer's temporary"
    assert sorted(p.name for p in tmp_path.iterdir()) == [target.name]


def test_a_live_writers_temporary_is_kept(tmp_path):
    target = tmp_path / "samples.npz"
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        from dpvae.files import _host

        live = tmp_path / f".samples.npz.tmp.{sleeper.pid}@{_host()}.abc.npz"
        other_host = tmp_path / ".samples.npz.tmp.1@another-node.abc.npz"
        live.write_text("being written")
        other_host.write_text("being written elsewhere")
        atomic_write(target, lambda tmp: Path(tmp).write_text("mine"))
        assert live.exists() and other_host.exists() and target.read_text() == "mine"
    finally:
        sleeper.kill()
        sleeper.wait()
    assert remove_stale_temporaries(target) == [live]  # its writer is gone now
    assert other_host.exists()  # another host's: cannot tell, left alone


def test_a_directory_written_twice_at_once_ends_whole(tmp_path):
    """A job orphaned by a killed Snakemake and its re-run may finish the same output directory together."""
    target = tmp_path / "model"
    with atomic_directory(target) as first:
        (first / "weights").write_text("1")
        with atomic_directory(target) as second:  # the other writer finishes in between
            (second / "weights").write_text("1")
    assert [p.name for p in target.iterdir()] == ["weights"] and temporaries(target) == []
