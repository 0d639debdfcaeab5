"""Shared fixtures of the data-layer tests: datasets prepared once from the offline mirror (tests/conftest.py)."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from dpvae.data import fetch_dataset, prepare_dataset

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
