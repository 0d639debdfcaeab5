"""A release's checkpoints (issue 62): a run keyed by OS entropy writes none and resumes none — its key died with a
killed process, and a resumed run would mix two draws of its noise (P3GM's DP-PCA drawn again beside a decoder
trained on the first) that its ledger does not cover; a release keyed by a seed file resumes only under the same
key; a seeded replication run checkpoints and resumes as before (`tests/methods/test_resume.py`)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from dpvae import randomness
from dpvae.methods.checkpoint import Checkpoint
from dpvae.runspec import RunSpec


@pytest.fixture(autouse=True)
def fresh_key():
    randomness.forget()
    yield
    randomness.forget()


def _checkpoint(tmp_path: Path, secret: bool) -> Checkpoint:
    spec = RunSpec.standalone(
        "mine/p3gm/eps1/seed0",
        tmp_path / "run",
        dataset="mine",
        method="p3gm",
        epsilon=1.0,
        delta=1e-5,
        randomness=randomness.SECRET if secret else None,
    )
    (tmp_path / "run").mkdir(exist_ok=True)
    return Checkpoint(SimpleNamespace(spec=spec, run_dir=spec.run), every_steps=1)


def test_a_seeded_run_checkpoints_and_resumes(tmp_path):
    first = _checkpoint(tmp_path, secret=False)
    assert first.due(0)
    first.save({"step": 1})
    assert _checkpoint(tmp_path, secret=False).load() == {"step": 1}


def test_a_release_keyed_by_os_entropy_writes_and_resumes_no_checkpoint(tmp_path):
    release = _checkpoint(tmp_path, secret=True)
    assert not release.due(0)
    release.save({"step": 1})
    assert not release.path.exists(), "a release keyed by OS entropy wrote a checkpoint"
    # a file at its path (another spec's, or a planted one) is never resumed
    _checkpoint(tmp_path, secret=False).save({"step": 1})
    assert _checkpoint(tmp_path, secret=True).load() is None


def test_a_release_keyed_by_a_seed_file_resumes_only_under_the_same_key(tmp_path):
    (tmp_path / "a").write_bytes(b"secret a")
    (tmp_path / "b").write_bytes(b"secret b")
    randomness.use_seed_file(tmp_path / "a")
    written = _checkpoint(tmp_path, secret=True)
    written.save({"step": 1})
    assert b"secret a" not in written.path.read_bytes()
    randomness.forget()  # a new process: the same file, the same key
    randomness.use_seed_file(tmp_path / "a")
    assert _checkpoint(tmp_path, secret=True).load() == {"step": 1}
    randomness.forget()
    randomness.use_seed_file(tmp_path / "b")
    assert _checkpoint(tmp_path, secret=True).load() is None, "resumed under another key"
