"""fetch(): verified downloads from a local HTTP server, mirror copies, unverified files. No internet."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from dpvae.data.errors import DataError
from dpvae.data.sources import RemoteFile, fetch, file_digests, verify_local

PAYLOAD = b"raw dataset bytes\n" * 1000
PAYLOAD_SHA256 = hashlib.sha256(PAYLOAD).hexdigest()
PAYLOAD_MD5 = hashlib.md5(PAYLOAD).hexdigest()


class Server:
    """A static file server on 127.0.0.1 that counts the requests it answers."""

    def __init__(self, directory: Path) -> None:
        self.requests: list[str] = []
        server = self

        class Handler(SimpleHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server naming)
                server.requests.append(self.path)
                super().do_GET()

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), partial(Handler, directory=str(directory)))
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    def url(self, name: str) -> str:
        return self.base + name


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Server, Path]]:
    """(server, the directory it serves)."""
    directory = tmp_path / "served"
    directory.mkdir()
    server = Server(directory)
    server.thread.start()
    yield server, directory
    server.httpd.shutdown()
    server.httpd.server_close()


def remote(urls: tuple[str, ...], **checksums: str | int | None) -> RemoteFile:
    return RemoteFile("payload.bin", urls, **({"sha256": PAYLOAD_SHA256} | checksums))


def listing(directory: Path) -> list[str]:
    return sorted(path.name for path in directory.iterdir()) if directory.exists() else []


def test_good_download_is_verified_and_lands(served: tuple[Server, Path], tmp_path: Path) -> None:
    server, directory = served
    (directory / "payload.bin").write_bytes(PAYLOAD)
    raw_dir = tmp_path / "raw" / "toy"
    observed = fetch([remote((server.url("payload.bin"),), size=len(PAYLOAD))], raw_dir)
    assert observed == {"payload.bin": PAYLOAD_SHA256}
    assert (raw_dir / "payload.bin").read_bytes() == PAYLOAD
    assert listing(raw_dir) == ["payload.bin"], "no temporary file may be left behind"


def test_md5_is_used_when_it_is_the_only_published_checksum(served: tuple[Server, Path], tmp_path: Path) -> None:
    server, directory = served
    (directory / "payload.bin").write_bytes(PAYLOAD)
    fetch([remote((server.url("payload.bin"),), sha256=None, md5=PAYLOAD_MD5)], tmp_path)
    assert (tmp_path / "payload.bin").read_bytes() == PAYLOAD
    (directory / "payload.bin").write_bytes(PAYLOAD + b"!")
    with pytest.raises(DataError, match=f"md5 expected {PAYLOAD_MD5}"):
        fetch([remote((server.url("payload.bin"),), sha256=None, md5=PAYLOAD_MD5)], tmp_path / "other")


def test_corrupted_download_fails_naming_file_and_checksums_and_leaves_nothing(
    served: tuple[Server, Path], tmp_path: Path
) -> None:
    server, directory = served
    corrupted = PAYLOAD[:-1] + b"?"
    (directory / "payload.bin").write_bytes(corrupted)
    raw_dir = tmp_path / "raw"
    with pytest.raises(DataError) as error:
        fetch([remote((server.url("payload.bin"),))], raw_dir)
    message = str(error.value)
    assert str(raw_dir / "payload.bin") in message
    assert PAYLOAD_SHA256 in message and hashlib.sha256(corrupted).hexdigest() in message
    assert listing(raw_dir) == []


def test_size_mismatch_is_reported(served: tuple[Server, Path], tmp_path: Path) -> None:
    server, directory = served
    (directory / "payload.bin").write_bytes(PAYLOAD)
    raw_dir = tmp_path / "raw"
    with pytest.raises(DataError, match=f"size expected {len(PAYLOAD) + 1} bytes, actual {len(PAYLOAD)}"):
        fetch([remote((server.url("payload.bin"),), size=len(PAYLOAD) + 1)], raw_dir)
    assert listing(raw_dir) == []


def test_second_url_is_used_when_the_first_answers_404(served: tuple[Server, Path], tmp_path: Path) -> None:
    server, directory = served
    (directory / "mirror2").mkdir()
    (directory / "mirror2" / "payload.bin").write_bytes(PAYLOAD)
    fetch([remote((server.url("missing/payload.bin"), server.url("mirror2/payload.bin")))], tmp_path)
    assert (tmp_path / "payload.bin").read_bytes() == PAYLOAD
    assert server.requests == ["/missing/payload.bin", "/mirror2/payload.bin"]


def test_all_urls_failing_lists_each_attempt(served: tuple[Server, Path], tmp_path: Path) -> None:
    server, _ = served
    unreachable = "http://127.0.0.1:9/payload.bin"  # discard port: connection refused
    with pytest.raises(DataError) as error:
        fetch([remote((server.url("nope.bin"), unreachable))], tmp_path, timeout=5)
    assert server.url("nope.bin") in str(error.value) and unreachable in str(error.value)
    assert "404" in str(error.value)


def test_mirror_is_preferred_over_download(served: tuple[Server, Path], tmp_path: Path) -> None:
    server, directory = served
    (directory / "payload.bin").write_bytes(PAYLOAD)
    mirror = tmp_path / "mirror"
    (mirror / "toy").mkdir(parents=True)
    (mirror / "toy" / "payload.bin").write_bytes(PAYLOAD)
    fetch([remote((server.url("payload.bin"),))], tmp_path / "raw" / "toy", mirror=mirror)
    assert (tmp_path / "raw" / "toy" / "payload.bin").read_bytes() == PAYLOAD
    assert server.requests == []


def test_corrupted_mirror_file_fails_fast_naming_it(served: tuple[Server, Path], tmp_path: Path) -> None:
    server, directory = served
    (directory / "payload.bin").write_bytes(PAYLOAD)
    mirror_file = tmp_path / "mirror" / "toy" / "payload.bin"
    mirror_file.parent.mkdir(parents=True)
    mirror_file.write_bytes(b"tampered")
    raw_dir = tmp_path / "raw" / "toy"
    with pytest.raises(DataError) as error:
        fetch([remote((server.url("payload.bin"),))], raw_dir, mirror=tmp_path / "mirror")
    assert str(mirror_file) in str(error.value) and PAYLOAD_SHA256 in str(error.value)
    assert server.requests == [], "a corrupted mirror must not fall back to downloading"
    assert listing(raw_dir) == []


def test_source_name_selects_the_mirror_subdirectory(tmp_path: Path) -> None:
    mirror_file = tmp_path / "mirror" / "shared-name" / "payload.bin"
    mirror_file.parent.mkdir(parents=True)
    mirror_file.write_bytes(PAYLOAD)
    fetch([remote(())], tmp_path / "raw" / "other", mirror=tmp_path / "mirror", source_name="shared-name")
    assert (tmp_path / "raw" / "other" / "payload.bin").read_bytes() == PAYLOAD


def test_verified_local_file_is_kept_without_any_request(served: tuple[Server, Path], tmp_path: Path) -> None:
    server, _ = served
    (tmp_path / "payload.bin").write_bytes(PAYLOAD)
    assert fetch([remote((server.url("payload.bin"),))], tmp_path) == {"payload.bin": PAYLOAD_SHA256}
    assert server.requests == []


def test_corrupted_local_file_is_replaced_by_a_verified_download(served: tuple[Server, Path], tmp_path: Path) -> None:
    server, directory = served
    (directory / "payload.bin").write_bytes(PAYLOAD)
    (tmp_path / "payload.bin").write_bytes(b"half a downl")
    fetch([remote((server.url("payload.bin"),))], tmp_path)
    assert (tmp_path / "payload.bin").read_bytes() == PAYLOAD


def test_missing_file_without_urls_or_mirror_fails_naming_it(tmp_path: Path) -> None:
    (tmp_path / "empty-mirror").mkdir()
    with pytest.raises(DataError, match=str(tmp_path / "payload.bin")) as error:
        fetch([remote(())], tmp_path, mirror=tmp_path / "empty-mirror")
    assert f"not in the mirror either: no {tmp_path / 'empty-mirror' / tmp_path.name / 'payload.bin'}" in str(
        error.value
    )


def test_unverified_file_is_refused_by_default_and_pinned_when_allowed(
    served: tuple[Server, Path], tmp_path: Path
) -> None:
    server, directory = served
    (directory / "payload.bin").write_bytes(PAYLOAD)
    unverified = remote((server.url("payload.bin"),), sha256=None)
    raw_dir = tmp_path / "raw"
    with pytest.raises(DataError, match="allow_unverified=True"):
        fetch([unverified], raw_dir)
    assert server.requests == [] and listing(raw_dir) == []

    assert fetch([unverified], raw_dir, allow_unverified=True) == {"payload.bin": PAYLOAD_SHA256}
    assert (raw_dir / "payload.bin.sha256").read_text().split() == [PAYLOAD_SHA256, "payload.bin"]
    assert verify_local([unverified], raw_dir) == {"payload.bin": PAYLOAD_SHA256}
    assert fetch([unverified], raw_dir) == {"payload.bin": PAYLOAD_SHA256}, "a pinned file needs no flag"
    assert server.requests == ["/payload.bin"]

    (raw_dir / "payload.bin").write_bytes(PAYLOAD + b"changed later")
    with pytest.raises(DataError, match=f"sha256 expected {PAYLOAD_SHA256}"):
        verify_local([unverified], raw_dir)


def test_verify_local_reports_missing_and_unverifiable_files(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="missing raw file .*payload.bin"):
        verify_local([remote(())], tmp_path)
    (tmp_path / "payload.bin").write_bytes(PAYLOAD)
    with pytest.raises(DataError, match="no published checksum"):
        verify_local([remote((), sha256=None)], tmp_path)


def test_file_digests_match_hashlib(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(PAYLOAD)
    digests = file_digests(tmp_path / "f")
    assert (digests.sha256, digests.md5, digests.size) == (PAYLOAD_SHA256, PAYLOAD_MD5, len(PAYLOAD))


@pytest.mark.parametrize(
    ("arguments", "offending"),
    [
        ({"filename": "dir/file.bin"}, "filename"),
        ({"sha256": "ABC"}, "sha256"),
        ({"md5": "0" * 31}, "md5"),
        ({"urls": "http://example.org/f"}, "urls"),
        ({"size": -1}, "size"),
    ],
)
def test_remote_file_rejects_bad_arguments(arguments: dict, offending: str) -> None:
    with pytest.raises(ValueError, match=offending):
        RemoteFile(**({"filename": "file.bin", "urls": ()} | arguments))
