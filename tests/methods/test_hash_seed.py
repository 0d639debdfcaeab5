"""Every implemented method's tiny run repeats byte for byte in a fresh process under another PYTHONHASHSEED:
its samples file and every model file. Each process trains and samples all methods (`support/hash_seed_runs.py`);
the two processes run side by side. A set of strings iterated on the way (Ryan's attribute names in mbi, before
they were ints) changes the order of something with the hash seed and fails here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from dpvae.methods.registry import METHODS
from dpvae.paths import model_path, samples_file
from support.hash_seed_runs import TINY, write_data
from support.toy_runs import toy_spec

pytestmark = pytest.mark.slow  # ~55 s of CPU per process, the two side by side

HASH_SEEDS = ("1", "2")
IMPLEMENTED = sorted(METHODS)
TESTS = Path(__file__).parents[1]


def _spec(root: Path, out: Path, method: str) -> str:
    """The JSON text of a tiny run of `method` (no `stage1`: DP2-VAE trains its first stage in-process)."""
    dataset, params = TINY[method]
    spec = toy_spec(root, out / method, method=method, private=METHODS[method].private)
    run = str(out / method / "run")
    return replace(spec, run_id=f"{dataset}/{method}/seed0", dataset=dataset, params=params, run=run).to_json()


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """PYTHONHASHSEED -> the directory of its runs (one sub-directory per method)."""
    base = tmp_path_factory.mktemp("hash-seed")
    root = write_data(base / "data")
    jobs = {}
    for seed in HASH_SEEDS:
        out = base / f"hash{seed}"
        specs = out / "specs.json"
        out.mkdir()
        specs.write_text(json.dumps({m: _spec(root, out, m) for m in IMPLEMENTED}))  # method -> JSON text
        path = os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")]))
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": path}
        command = [sys.executable, "-m", "support.hash_seed_runs", str(specs)]
        jobs[seed] = (out, subprocess.Popen(command, env=env, stderr=subprocess.PIPE))
    for seed, (_, job) in jobs.items():
        _, err = job.communicate()
        assert job.returncode == 0, f"PYTHONHASHSEED={seed}: {err.decode()[-3000:]}"
    return {seed: out for seed, (out, _) in jobs.items()}


def test_every_implemented_method_has_a_tiny_run():
    assert sorted(TINY) == IMPLEMENTED


def _files(run: Path) -> dict[str, bytes]:
    """The samples file and the model files, by path relative to the method's directory."""
    parts = [samples_file(run / "run"), *sorted(model_path(run / "run").rglob("*"))]
    return {str(p.relative_to(run)): p.read_bytes() for p in parts if p.is_file()}


@pytest.mark.parametrize("method", IMPLEMENTED)
def test_a_run_repeats_byte_for_byte_under_another_hash_seed(runs, method):
    first, second = (_files(runs[seed] / method) for seed in HASH_SEEDS)
    assert "run/samples.npz" in first and len(first) > 1, f"{method}: no samples or no model files"
    assert sorted(first) == sorted(second)
    differ = [name for name in first if first[name] != second[name]]
    assert not differ, f"{method}: these files differ between PYTHONHASHSEED {' and '.join(HASH_SEEDS)}: {differ}"
