"""Determinism: a fresh working directory building `p3gm/table3` and `privae/table1` gives byte-identical
tables (and prepared data) to the suite's smoke build, whatever the job order (the smoke build uses 2 cores
and every item; this one 1 core and the two targets in the other order)."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.workflow_runs import files, smoke, snakemake

TARGETS = ("figures/privae/table1.pdf", "figures/p3gm/table3.pdf")  # the smoke build asks in the other order
pytestmark = [pytest.mark.workflow, pytest.mark.slow]


def test_a_fresh_build_gives_the_smoke_builds_bytes(tmp_path: Path, mirror: Path, smoke_build_tables) -> None:
    result = snakemake("--cores", "1", smoke(), *TARGETS, cwd=tmp_path, mirror=mirror)
    assert result.returncode == 0, result.stderr[-5000:]
    built = files(
        tmp_path, ("figures/**/*.csv", "results/**/*.csv", "data/prepared/*/*.npz", "data/prepared/*/meta.json")
    )
    assert {"figures/p3gm/table3.csv", "figures/privae/table1.csv"} <= set(built)
    assert any(name.startswith("results/") for name in built), "the intermediate tidy tables are compared too"
    assert any(name.startswith("data/prepared/") for name in built), "and the prepared data"
    for name, content in built.items():
        assert name in smoke_build_tables, f"{name}: built here but not by the smoke build"
        assert content == smoke_build_tables[name], f"{name} differs between two fresh builds"
