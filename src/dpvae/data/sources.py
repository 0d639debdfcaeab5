"""Raw files: where they come from, how they are checked, and how they get into ``<root>/raw/<source>/``.

Every raw file is verified against a *published* checksum (sha256 where one is published, md5 where
that is the only one) before it is used. For each file `fetch` (1) keeps a verified copy already in the
raw directory, else (2) copies it from a local mirror laid out as ``<mirror>/<source>/<filename>``
(the layout of ``/work/shared/data``), verifying the mirror copy first, else (3) downloads it from its
URLs in order into a temporary file, verifies it and renames it into place. A file without any
published checksum is refused unless ``allow_unverified=True``; then its observed sha256 is recorded
next to it (``<filename>.sha256``) and checked on every later use.

A mirror directory that does not exist, or a mirror copy that does not verify (truncated, altered), stops
the fetch with a `DataError` naming it: a broken mirror is fixed, not silently bypassed. A file missing
from the mirror is downloaded (the error, if that fails too, says where it was looked for).
"""

from __future__ import annotations

import hashlib
import logging
import urllib.error
import urllib.request
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from dpvae.data.errors import DataError
from dpvae.files import atomic_write, write_text
from dpvae.paths import FETCHED_MARKER

log = logging.getLogger(__name__)

CHUNK_BYTES = 1 << 20
USER_AGENT = "dpvae-data-fetch/0.1 (research replication)"
_HEX_LENGTHS = {"sha256": 64, "md5": 32}


@dataclass(frozen=True)
class RemoteFile:
    """One raw file: its name on disk, download URLs (tried in order) and its published checksum(s).

    ``checksum_source`` cites where the checksum was published (kept next to the value for review).
    """

    filename: str
    urls: tuple[str, ...]
    sha256: str | None = None
    md5: str | None = None
    size: int | None = None
    checksum_source: str = ""

    def __post_init__(self) -> None:
        if not self.filename or Path(self.filename).name != self.filename:
            raise ValueError(f"filename must be a plain file name, got {self.filename!r}")
        if isinstance(self.urls, str):
            raise ValueError(f"urls must be a tuple of URLs, got the string {self.urls!r}")
        for algorithm in _HEX_LENGTHS:
            value = getattr(self, algorithm)
            if value is not None and (len(value) != _HEX_LENGTHS[algorithm] or value.strip("0123456789abcdef")):
                length = _HEX_LENGTHS[algorithm]
                raise ValueError(f"{algorithm} of {self.filename} must be {length} lower-case hex digits")
        if self.size is not None and self.size < 0:
            raise ValueError(f"size of {self.filename} must be >= 0, got {self.size}")

    @property
    def published_checksum(self) -> tuple[str, str] | None:
        """(algorithm, hex digest) to verify against: sha256 if published, else md5, else None."""
        if self.sha256 is not None:
            return "sha256", self.sha256
        if self.md5 is not None:
            return "md5", self.md5
        return None


@dataclass(frozen=True)
class Digests:
    """Checksums and size of one byte stream."""

    sha256: str
    md5: str
    size: int

    def get(self, algorithm: str) -> str:
        return getattr(self, algorithm)


def file_digests(path: str | Path) -> Digests:
    """sha256, md5 and size of a file, in one pass."""
    with open(path, "rb") as stream:
        return _copy_and_hash(stream, None)


def fetch(
    files: Sequence[RemoteFile],
    raw_dir: str | Path,
    *,
    mirror: str | Path | None = None,
    source_name: str | None = None,
    timeout: float = 60.0,
    allow_unverified: bool = False,
) -> dict[str, str]:
    """Make every file of ``files`` present and verified in ``raw_dir``; return {filename: sha256}.

    ``mirror`` is a directory laid out as ``<mirror>/<source_name>/<filename>`` (``source_name``
    defaults to the name of ``raw_dir``). Nothing unverified is ever left at ``raw_dir/<filename>``.
    """
    raw_dir = Path(raw_dir)
    if mirror is not None and not Path(mirror).is_dir():
        raise DataError(
            f"data mirror {mirror} does not exist or is not a directory; point DPVAE_DATA_MIRROR (or the config "
            "key data.mirror) at a directory laid out as <mirror>/<source>/<file>, or unset both to download"
        )
    mirror_dir = None if mirror is None else Path(mirror) / (source_name or raw_dir.name)
    observed = {}
    for remote in files:
        observed[remote.filename] = _fetch_one(remote, raw_dir, mirror_dir, timeout, allow_unverified)
    return observed


def unverifiable(files: Iterable[RemoteFile], raw_dir: str | Path) -> list[str]:
    """The files with no published checksum and none recorded beside them in ``raw_dir`` (never fetched
    with allow_unverified): fetching them needs ``allow_unverified``."""
    return [f.filename for f in files if _expected_checksum(f, Path(raw_dir) / f.filename) is None]


def allow_unverified_hint(sources: Iterable[str]) -> str:
    """How a user lists `sources` in the config key data.allow_unverified (command line or config file)."""
    listed = ", ".join(sorted(set(sources)))
    return (
        f"add --config 'data={{allow_unverified: [{listed}]}}' after the targets, or put "
        f"`data: {{allow_unverified: [{listed}]}}` in a --configfile"
    )


def verify_local(files: Iterable[RemoteFile], raw_dir: str | Path) -> dict[str, str]:
    """Check that every file is in ``raw_dir`` and verifies; return {filename: sha256}. Never downloads."""
    raw_dir = Path(raw_dir)
    observed = {}
    for remote in files:
        path = raw_dir / remote.filename
        if not path.is_file():
            raise DataError(f"missing raw file {path}; {_refetch_hint(raw_dir)}")
        expected = _expected_checksum(remote, path)
        if expected is None:
            raise DataError(
                f"{path} has no published checksum and no recorded one ({_sidecar(path)}); "
                f"fetch it again with the config key data.allow_unverified listing '{raw_dir.name}' "
                "to record its sha256"
            )
        try:
            observed[remote.filename] = _verify(path, remote, expected, label=str(path)).sha256
        except DataError as error:
            raise DataError(f"{error}; {_refetch_hint(raw_dir)}") from None
    return observed


def copy_verified(source: Path, destination: Path, sha256: str) -> str:
    """Copy a local file to `destination` (atomically) if its sha256 is `sha256`; an identical copy already there
    is kept. A mismatch raises a `DataError` naming both checksums."""
    if destination.is_file() and file_digests(destination).sha256 == sha256:
        return sha256
    destination.parent.mkdir(parents=True, exist_ok=True)
    remote = RemoteFile(destination.name, (), sha256=sha256)
    with open(source, "rb") as stream:
        return _land(stream, destination, remote, ("sha256", sha256), label=str(source)).sha256


def _refetch_hint(raw_dir: Path) -> str:
    return (
        f"delete {raw_dir / FETCHED_MARKER} and run the same command again: the fetch step replaces a missing "
        f"or corrupted raw file with a verified copy (or run `python -m dpvae fetch --source {raw_dir.name} "
        f"--root {raw_dir.parent.parent}`)"
    )


def _fetch_one(
    remote: RemoteFile, raw_dir: Path, mirror_dir: Path | None, timeout: float, allow_unverified: bool
) -> str:
    destination = raw_dir / remote.filename
    expected = _expected_checksum(remote, destination)
    if expected is None and not allow_unverified:
        source = destination.parent.name
        raise DataError(
            f"{destination}: no published checksum is known for {remote.filename}, so it cannot be verified; "
            f"refusing it. To accept it and record its sha256 in {_sidecar(destination)}, list '{source}' in the "
            f"config key data.allow_unverified ({allow_unverified_hint([source])}; "
            "`python -m dpvae fetch --allow-unverified`; Python: allow_unverified=True)"
        )
    if destination.is_file():
        try:
            if expected is None:
                return _record(destination, file_digests(destination).sha256)
            return _verify(destination, remote, expected, label=str(destination)).sha256
        except DataError as error:
            log.warning("%s; obtaining a fresh copy", error)
    raw_dir.mkdir(parents=True, exist_ok=True)
    mirrored = None if mirror_dir is None else mirror_dir / remote.filename
    if mirrored is not None and mirrored.is_file():
        try:
            if expected is not None:
                _verify(mirrored, remote, expected, label=f"mirror file {mirrored}")
            log.info("copying %s from mirror %s", remote.filename, mirrored)
            with open(mirrored, "rb") as stream:
                digests = _land(stream, destination, remote, expected, label=f"mirror file {mirrored}")
        except DataError as error:
            raise DataError(
                f"{error}; the mirror copy is truncated or corrupted: replace it with a good copy, "
                "or remove it (or unset the mirror) to download the file"
            ) from None
    else:
        if mirrored is not None:
            log.warning("%s is not in the mirror (looked for %s); downloading it", remote.filename, mirrored)
        digests = _download(remote, destination, expected, timeout, mirrored)
    return digests.sha256 if expected is not None else _record(destination, digests.sha256)


def _download(
    remote: RemoteFile,
    destination: Path,
    expected: tuple[str, str] | None,
    timeout: float,
    mirrored: Path | None = None,
) -> Digests:
    not_mirrored = "" if mirrored is None else f" (not in the mirror either: no {mirrored})"
    if not remote.urls:
        raise DataError(f"missing raw file {destination}: it has no download URL and no mirror copy{not_mirrored}")
    failures = []
    for url in remote.urls:
        log.info("downloading %s from %s", remote.filename, url)
        try:
            request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return _land(response, destination, remote, expected, label=f"{url} (for {destination})")
        except (urllib.error.URLError, OSError, DataError) as error:
            failures.append(f"  {url}: {error}")
    place = f"{mirrored} (the mirror) or {destination}" if mirrored is not None else str(destination)
    raise DataError(
        f"could not obtain a verified {destination}{not_mirrored}; tried:\n"
        + "\n".join(failures)
        + f"\nwithout network access, put a copy of {remote.filename} at {place} and run the same "
        "command again (it is verified before use)"
    )


def _land(
    stream: BinaryIO, destination: Path, remote: RemoteFile, expected: tuple[str, str] | None, label: str
) -> Digests:
    """Copy ``stream`` to a temporary file beside ``destination``, verify it, rename it into place; its digests."""
    landed: list[Digests] = []

    def copy_and_verify(temporary: str) -> None:
        with open(temporary, "wb") as sink:
            landed.append(_copy_and_hash(stream, sink))
        _compare(landed[0], remote, expected, label)

    atomic_write(destination, copy_and_verify)
    return landed[0]


def _verify(path: Path, remote: RemoteFile, expected: tuple[str, str], label: str) -> Digests:
    if remote.size is not None and path.stat().st_size != remote.size:
        raise DataError(f"{label}: size expected {remote.size} bytes, actual {path.stat().st_size} bytes")
    digests = file_digests(path)
    _compare(digests, remote, expected, label)
    return digests


def _compare(digests: Digests, remote: RemoteFile, expected: tuple[str, str] | None, label: str) -> None:
    if remote.size is not None and digests.size != remote.size:
        raise DataError(f"{label}: size expected {remote.size} bytes, actual {digests.size} bytes")
    if expected is not None:
        algorithm, value = expected
        if digests.get(algorithm) != value:
            raise DataError(f"{label}: {algorithm} expected {value}, actual {digests.get(algorithm)}")


def _expected_checksum(remote: RemoteFile, destination: Path) -> tuple[str, str] | None:
    """The published checksum, else the sha256 recorded when the file was accepted unverified."""
    published = remote.published_checksum
    if published is not None:
        return published
    sidecar = _sidecar(destination)
    if sidecar.is_file():
        return "sha256", sidecar.read_text().split()[0]
    return None


def _record(path: Path, sha256: str) -> str:
    """Accept an unverifiable file: record its sha256 beside it (sha256sum format) and return it."""
    write_text(_sidecar(path), f"{sha256}  {path.name}\n")
    log.warning("accepted unverified %s; recorded sha256 %s in %s", path, sha256, _sidecar(path))
    return sha256


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _copy_and_hash(stream: BinaryIO, sink: BinaryIO | None) -> Digests:
    sha256, md5, size = hashlib.sha256(), hashlib.md5(usedforsecurity=False), 0
    while chunk := stream.read(CHUNK_BYTES):
        sha256.update(chunk)
        md5.update(chunk)
        size += len(chunk)
        if sink is not None:
            sink.write(chunk)
    return Digests(sha256=sha256.hexdigest(), md5=md5.hexdigest(), size=size)
