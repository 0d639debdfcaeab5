"""Where a result came from: the code's commit, a hash of the configuration that determined it, the machine."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import subprocess
from typing import Any

from dpvae.paths import REPO_ROOT


def sha256_json(payload: Any) -> str:
    """A stable hash of a JSON-serialisable value (sorted keys, compact)."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


@functools.cache
def git_commit() -> str:
    """The checkout's commit ('<sha>' or '<sha>-dirty'); outside a git checkout (a device's copy of the working
    tree, without .git) $DPVAE_COMMIT, else 'unknown'."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(REPO_ROOT), *args], capture_output=True, text=True, check=True, timeout=10
        ).stdout.strip()

    try:
        sha = git("rev-parse", "HEAD")
        dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.SubprocessError):
        return os.environ.get("DPVAE_COMMIT") or "unknown"
    return f"{sha}-dirty" if dirty else sha


def machine() -> dict[str, str]:
    return {"host": platform.node(), "python": platform.python_version(), "platform": platform.platform()}
