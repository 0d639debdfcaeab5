"""The smoke build every workflow test module shares (built once per session, in a copy of the repository)."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.workflow_runs import copy_repository, files, smoke, snakemake

#: what the smoke build made, read right after it finished (tests may edit the copy later)
BUILT_TABLES = ("figures/**/*.csv", "results/**/*.csv", "data/prepared/*/*.npz", "data/prepared/*/meta.json")
_SNAPSHOTS: dict[Path, dict[str, bytes]] = {}


@pytest.fixture(scope="session")
def smoke_build(tmp_path_factory, mirror) -> Path:
    """Every buildable item, figures/table2.pdf and the scorecard at smoke scale, built once in a repo copy."""
    repo = copy_repository(tmp_path_factory.mktemp("smoke"))
    # one thread per job: smoke jobs are dominated by starting Python, so two at a time beat one with two threads
    result = snakemake(
        "--cores",
        "2",
        "--max-threads",
        "1",
        smoke(repo),
        "all",
        "figures/table2.pdf",
        cwd=repo,
        mirror=mirror,
        repo=repo,
    )
    assert result.returncode == 0, result.stderr[-5000:]
    _SNAPSHOTS[repo] = files(repo, BUILT_TABLES)
    return repo


@pytest.fixture(scope="session")
def smoke_build_tables(smoke_build) -> dict[str, bytes]:
    """relative path -> bytes of the smoke build's tables and prepared data, as the build left them."""
    return _SNAPSHOTS[smoke_build]
