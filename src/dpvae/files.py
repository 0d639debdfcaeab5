"""Writing files and directories atomically: a reader sees the old content or the new, never half of it.

Every output of the workflow goes through these helpers (the one place that does temp-then-rename). A
temporary lives beside its target as `.<name>.tmp.<pid>@<host>.<random>`; a process killed with SIGKILL
cannot remove it, so the next writer of the same target removes the temporaries whose process is gone
(same host, pid no longer running) before it starts: a killed and re-run job leaves no temporary behind.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import socket
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", socket.gethostname()) or "host"


def _temp_prefix(path: Path) -> str:
    """The prefix of this process's temporaries for `path` (a random part and suffix follow)."""
    return f".{path.name}.tmp.{os.getpid()}@{_host()}."


def temporaries(path: str | Path) -> list[Path]:
    """Every temporary (of any process) beside `path` that was meant to become `path`."""
    path = Path(path)
    if not path.parent.is_dir():
        return []
    return sorted(path.parent.glob(f".{glob_escape(path.name)}.tmp.*@*.*"))


def glob_escape(name: str) -> str:
    return re.sub(r"([*?[])", r"[\1]", name)


def _owner_gone(temporary: Path, target: Path) -> bool:
    """Whether the process that made `temporary` (named by `_temp_prefix`) no longer runs on this host."""
    match = re.fullmatch(rf"\.{re.escape(target.name)}\.tmp\.(\d+)@([A-Za-z0-9_-]+)\..*", temporary.name)
    if match is None or match[2] != _host():
        return False  # another host's writer: it may be alive; leave it
    pid = int(match[1])
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # a live process of another user
        return False
    return False


def remove_stale_temporaries(path: str | Path) -> list[Path]:
    """Remove the temporaries beside `path` left by killed writers on this host; return them."""
    path = Path(path)
    removed = []
    for temporary in temporaries(path):
        if _owner_gone(temporary, path):
            if temporary.is_dir() and not temporary.is_symlink():
                shutil.rmtree(temporary, ignore_errors=True)
            else:
                temporary.unlink(missing_ok=True)
            removed.append(temporary)
    if removed:
        log.info(
            "removed %d temporar%s of %s left by a killed writer",
            len(removed),
            "y" if len(removed) == 1 else "ies",
            path,
        )
    return removed


def atomic_write(path: str | Path, write: Callable[[str], None]) -> Path:
    """Call write(tmp_path) for a temporary file beside `path`, then rename it onto `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=_temp_prefix(path), suffix=path.suffix)
    os.close(fd)
    os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; outputs get the usual permissions
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def save_torch(path: str | Path, obj: Any) -> Path:
    """torch.save `obj` to `path` atomically, through an open file: given a path, torch names the archive's top
    folder after it (here the random temporary), so the same object would not give the same bytes."""
    import torch

    def write(tmp: str) -> None:
        with open(tmp, "wb") as stream:
            torch.save(obj, stream)

    return atomic_write(path, write)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def json_text(payload: Any) -> str:
    """`payload` as the indented JSON text `write_json` writes (keys in insertion order)."""
    return json.dumps(payload, indent=2, default=str) + "\n"


def write_json(path: str | Path, payload: Any) -> Path:
    """`payload` as indented JSON (`json_text`), written atomically."""
    text = json_text(payload)
    return atomic_write(path, lambda tmp: Path(tmp).write_text(text))


def write_text(path: str | Path, text: str) -> Path:
    return atomic_write(path, lambda tmp: Path(tmp).write_text(text))


@contextlib.contextmanager
def atomic_directory(path: str | Path) -> Iterator[Path]:
    """Yield a fresh temporary directory beside `path`; on success it replaces `path` whole.

    On any exception the temporary directory is removed and `path` is left as it was.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path)
    partial = Path(tempfile.mkdtemp(dir=path.parent, prefix=_temp_prefix(path)))
    os.chmod(partial, 0o777 & ~_umask())  # mkdtemp makes 0700; outputs get the usual permissions
    try:
        yield partial
        _replace_directory(partial, path)
    finally:
        shutil.rmtree(partial, ignore_errors=True)


def _replace_directory(new: Path, path: Path, attempts: int = 5) -> None:
    """Rename directory `new` onto `path`, replacing what is there. A directory cannot be renamed onto a
    non-empty one, so the old one is removed first; if another writer of the same path (a job orphaned by a
    killed Snakemake) puts its copy there in between, remove that one and try again."""
    for attempt in range(attempts):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        elif path.exists() or path.is_symlink():
            path.unlink(missing_ok=True)
        try:
            os.replace(new, path)
            return
        except OSError:
            if attempt == attempts - 1 or not path.exists():
                raise
