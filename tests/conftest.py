"""Shared fixtures: the repository's configurations and the offline data mirror."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from dpvae.config import load_config
from dpvae.data import fetch_dataset, prepare_dataset
from dpvae.paths import REPO_ROOT as REPO
from dpvae.paths import data_mirror

PAPER_CONFIG = REPO / "config.yaml"
SMOKE_CONFIG = REPO / "tests" / "config" / "smoke.yaml"


@pytest.fixture(scope="session", autouse=True)
def state_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A temporary XDG_STATE_HOME for the whole session: `synth`'s default workspace
    (`release.default_workspace`) goes there, never into the user's ~/.local/state."""
    previous, home = os.environ.get("XDG_STATE_HOME"), tmp_path_factory.mktemp("state")
    os.environ["XDG_STATE_HOME"] = str(home)
    yield home
    if previous is None:
        os.environ.pop("XDG_STATE_HOME", None)
    else:
        os.environ["XDG_STATE_HOME"] = previous


def mirror_dir() -> Path | None:
    """The offline data mirror where the workflow finds it (`paths.data_mirror`), if it holds a MANIFEST.tsv."""
    found = data_mirror(None)
    return Path(found) if found and Path(found, "MANIFEST.tsv").is_file() else None


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


@pytest.fixture(scope="session")
def prepared_from_mirror(tmp_path_factory: pytest.TempPathFactory, mirror: Path) -> Iterator[Callable[[str], Path]]:
    """dataset id -> path of that dataset fetched from the mirror and prepared with seed 0 (once per session).

    The prepared arrays (about 1 GB for the image sets) are deleted at the end of the session.
    """
    root = tmp_path_factory.mktemp("data-root")
    done: dict[str, Path] = {}

    def prepared(dataset_id: str) -> Path:
        if dataset_id not in done:
            fetch_dataset(dataset_id, root, mirror)
            done[dataset_id] = prepare_dataset(dataset_id, root, seed=0)
        return done[dataset_id]

    yield prepared
    shutil.rmtree(root, ignore_errors=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked `gpu` skip, saying why, where no CUDA device is visible."""
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(
        reason="needs CUDA (torch.cuda.is_available() is False); benchmarks/gpu.sh runs it on a GPU"
    )
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
