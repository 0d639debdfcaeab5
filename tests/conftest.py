"""Shared fixtures: the repository's configurations and the offline data mirror."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dpvae.config import load_config
from dpvae.paths import REPO_ROOT as REPO

PAPER_CONFIG = REPO / "config.yaml"
SMOKE_CONFIG = REPO / "tests" / "config" / "smoke.yaml"


def mirror_dir() -> Path | None:
    """The offline data mirror: $DPVAE_DATA_MIRROR, else ../shared/data beside the repository."""
    for candidate in (os.environ.get("DPVAE_DATA_MIRROR"), REPO.parent / "shared" / "data"):
        if candidate and Path(candidate, "MANIFEST.tsv").is_file():
            return Path(candidate)
    return None


@pytest.fixture(scope="session")
def paper_config() -> dict:
    return load_config([PAPER_CONFIG])


@pytest.fixture(scope="session")
def smoke_config() -> dict:
    return load_config([PAPER_CONFIG, SMOKE_CONFIG])


@pytest.fixture(scope="session")
def mirror() -> Path:
    found = mirror_dir()
    if found is None:
        pytest.skip("no offline data mirror (set DPVAE_DATA_MIRROR or place ../shared/data beside the repo)")
    return found
