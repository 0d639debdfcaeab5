"""Writing files and directories atomically: a reader sees the old content or the new, never half of it.

Every output of the workflow goes through these helpers (the one place that does temp-then-rename).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any


def atomic_write(path: str | Path, write: Callable[[str], None]) -> Path:
    """Call write(tmp_path) for a temporary file beside `path`, then rename it onto `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=path.suffix)
    os.close(fd)
    os.chmod(tmp, 0o666 & ~_umask())   # mkstemp makes 0600; outputs get the usual permissions
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_json(path: str | Path, payload: Any) -> Path:
    """`payload` as indented JSON (keys in insertion order), written atomically."""
    text = json.dumps(payload, indent=2, default=str) + "\n"
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
    partial = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.partial-"))
    try:
        yield partial
        if path.exists():
            shutil.rmtree(path)
        os.replace(partial, path)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
