"""Bad data, in a mirror and in data/: each fails naming the file (and what to do), or is detected by its
checksum and rebuilt to the same bytes -- never used. Real registry entries (Adult), offline mirror."""

from __future__ import annotations

import shutil
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from dpvae.data import sources
from dpvae.data.errors import DataError
from dpvae.data.registry import fetch_source, get_dataset, prepare_dataset
from dpvae.data.store import load_prepared

ADULT_TEST = next(f for f in get_dataset("adult").files if f.filename == "adult.test")


@pytest.fixture
def own_mirror(tmp_path: Path, mirror: Path) -> Path:
    """A copy of the mirror's adult/ directory that a test may damage."""
    copy = tmp_path / "mirror"
    shutil.copytree(mirror / "adult", copy / "adult")
    return copy


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """No network: every download attempt fails at once (and is recorded)."""
    attempts: list[str] = []

    def refuse(request: urllib.request.Request, timeout: float = 0) -> None:
        attempts.append(request.full_url)
        raise urllib.error.URLError("offline (test)")

    monkeypatch.setattr(sources.urllib.request, "urlopen", refuse)
    return attempts


def files_in(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir()) if directory.exists() else []


def digests(directory: Path) -> dict[str, str]:
    return {p.name: sources.file_digests(p).sha256 for p in sorted(directory.iterdir()) if p.is_file()}


# ---- in a mirror -------------------------------------------------------------------------------------


@pytest.mark.parametrize("damage", ["truncated", "same-size garbage"])
def test_a_damaged_mirror_file_fails_naming_it_and_lands_nothing(
    tmp_path: Path, own_mirror: Path, offline: list[str], damage: str
) -> None:
    bad = own_mirror / "adult" / "adult.test"
    data = bad.read_bytes()
    bad.write_bytes(data[: len(data) // 2] if damage == "truncated" else bytes(len(data)))
    root = tmp_path / "data"
    with pytest.raises(DataError) as error:
        fetch_source("adult", root, own_mirror)
    message = str(error.value)
    assert f"mirror file {bad}" in message and "replace it with a good copy" in message
    expected = "size expected" if damage == "truncated" else f"sha256 expected {ADULT_TEST.sha256}"
    assert expected in message
    raw = root / "raw" / "adult"
    assert "adult.test" not in files_in(raw) and "SHA256SUMS" not in files_in(raw)
    assert not [name for name in files_in(raw) if name.startswith(".")], "no temporary file is left behind"
    assert offline == [], "a broken mirror is reported, not bypassed"


def test_a_file_missing_from_the_mirror_is_downloaded_or_the_error_says_where_it_was_looked_for(
    tmp_path: Path, own_mirror: Path, offline: list[str]
) -> None:
    (own_mirror / "adult" / "adult.test").unlink()
    root = tmp_path / "data"
    with pytest.raises(DataError) as error:
        fetch_source("adult", root, own_mirror)
    message = str(error.value)
    assert f"could not obtain a verified {root / 'raw' / 'adult' / 'adult.test'}" in message
    assert f"not in the mirror either: no {own_mirror / 'adult' / 'adult.test'}" in message
    assert offline == list(ADULT_TEST.urls), "every published URL is tried"
    assert "adult.test" not in files_in(root / "raw" / "adult")


def test_a_mirror_directory_that_does_not_exist_fails_before_anything_is_written(
    tmp_path: Path, offline: list[str]
) -> None:
    absent = tmp_path / "no-such-mirror"
    root = tmp_path / "data"
    with pytest.raises(DataError, match=f"data mirror {absent} does not exist.*DPVAE_DATA_MIRROR"):
        fetch_source("adult", root, absent)
    assert not root.exists() and offline == []


# ---- in data/ ------------------------------------------------------------------------------------------


def test_a_truncated_prepared_train_npz_is_refused_and_rebuilt_to_the_same_bytes(tmp_path: Path, mirror: Path) -> None:
    fetch_source("adult", tmp_path, mirror)
    prepared = prepare_dataset("adult", tmp_path)
    original = digests(prepared)
    train = prepared / "train.npz"
    train.write_bytes(train.read_bytes()[: train.stat().st_size // 2])
    with pytest.raises(DataError) as error:
        load_prepared(prepared)
    assert f"{train} is corrupted" in str(error.value) and f"delete {prepared}" in str(error.value)
    shutil.rmtree(prepared)  # what the message says to do
    assert digests(prepare_dataset("adult", tmp_path)) == original


def test_a_garbage_raw_file_is_refused_then_replaced_by_a_verified_copy_with_the_same_bytes(
    tmp_path: Path, mirror: Path
) -> None:
    marker = fetch_source("adult", tmp_path, mirror)
    raw = marker.parent
    prepared = digests(prepare_dataset("adult", tmp_path))
    original = digests(raw)
    bad = raw / "adult.test"
    bad.write_bytes(bytes(bad.stat().st_size))  # same size, garbage
    with pytest.raises(DataError) as error:
        prepare_dataset("adult", tmp_path)
    message = str(error.value)
    assert f"{bad}: sha256 expected {ADULT_TEST.sha256}" in message and f"delete {marker}" in message
    assert digests(tmp_path / "prepared" / "adult") == prepared, "the refused raw file changed nothing"
    marker.unlink()  # what the message says to do
    fetch_source("adult", tmp_path, mirror)
    assert digests(raw) == original
    assert digests(prepare_dataset("adult", tmp_path)) == prepared
