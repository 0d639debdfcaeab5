"""Determinism: two fresh working directories building the same items give byte-identical tables (and
byte-identical prepared data), whatever the job order (one built with 2 cores, the other with 1 and the
targets in the opposite order). Sequential: two concurrent builds on 2 cores take twice as long."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dpvae.paths import REPO_ROOT

SNAKEMAKE = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO_ROOT / "Snakefile")]
SMOKE = f"--configfile={REPO_ROOT / 'tests' / 'config' / 'smoke.yaml'}"
TARGETS = ("figures/p3gm/table3.pdf", "figures/privae/table1.pdf")
pytestmark = [pytest.mark.workflow, pytest.mark.slow]


def build(workdir: Path, cores: int, targets: tuple[str, ...], mirror: Path) -> Path:
    workdir.mkdir()
    env = {**os.environ, "DPVAE_DATA_MIRROR": str(mirror)}
    result = subprocess.run([*SNAKEMAKE, "--directory", str(workdir), "--cores", str(cores), SMOKE, *targets],
                            capture_output=True, text=True, env=env, cwd=workdir, timeout=1800)
    assert result.returncode == 0, result.stderr[-5000:]
    return workdir


def files(root: Path, patterns: tuple[str, ...]) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for pattern in patterns for p in sorted(root.glob(pattern))}


def test_two_fresh_builds_give_byte_identical_csvs(tmp_path: Path, mirror: Path) -> None:
    first = build(tmp_path / "first", 2, TARGETS, mirror)
    second = build(tmp_path / "second", 1, TARGETS[::-1], mirror)
    tables = ("figures/**/*.csv", "results/**/*.csv")
    csvs = files(first, tables)
    assert {"figures/p3gm/table3.csv", "figures/privae/table1.csv"} <= set(csvs)
    assert any(name.startswith("results/") for name in csvs), "the intermediate tidy tables are compared too"
    assert files(second, tables).keys() == csvs.keys()
    for name, content in files(second, tables).items():
        assert content == csvs[name], f"{name} differs between two fresh builds"
    prepared = ("data/prepared/*/*.npz", "data/prepared/*/meta.json")
    assert files(first, prepared) == files(second, prepared), "prepared data differ between two fresh builds"
