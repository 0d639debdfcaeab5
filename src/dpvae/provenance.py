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


#: where a job's code and configuration live: a modified or untracked file here makes the checkout's commit
#: '<sha>-dirty'; elsewhere (docs/, README, tests/, reproductions/) it changes no result
CODE_PATHS = ("src/", "workflow/", "envs/", "Snakefile", "config.yaml")


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(REPO_ROOT), *args], capture_output=True, text=True, check=True, timeout=10
    ).stdout


def changed_files() -> list[str]:
    """The checkout's modified, staged, deleted and untracked (not ignored) files, relative to its root, a rename's
    both names; OSError or SubprocessError outside a git checkout."""
    fields = iter(_git("status", "--porcelain", "-z", "--untracked-files=all").split("\0"))
    files = []
    for entry in fields:
        if entry:
            files.append(entry[3:])
            if entry[0] in "RC":  # a rename or copy: the original's name is the next field
                files.append(next(fields))
    return files


def on_code_path(files: list[str], named: list[str] | tuple[str, ...] = ()) -> list[str]:
    """Those of `files` (relative to the checkout) a job's result may depend on: under `CODE_PATHS`, or one of
    `named` (e.g. the campaign overlay a command names)."""
    extra = {os.path.normpath(n) for n in named}
    return [f for f in files if f.startswith(CODE_PATHS) or os.path.normpath(f) in extra]


def names_a_commit(commit: str) -> bool:
    """Whether `commit` is a full sha of a commit in this repository (not 'unknown', not '<sha>-dirty')."""
    if len(commit) != 40:
        return False
    try:
        _git("cat-file", "-e", f"{commit}^{{commit}}")
    except (OSError, subprocess.SubprocessError):
        return False
    return True


@functools.cache
def git_commit() -> str:
    """$DPVAE_COMMIT where set (gpu-window.sh: a device's copy of the working tree, whose .git, if it has one, can
    be an older commit's -- on 27 Nov 2026 it named the session's first commit); else the checkout's: '<sha>',
    '<sha>-dirty' if a file on a job's path is modified or untracked (`on_code_path`; other changes leave the sha
    clean); 'unknown' outside a git checkout."""
    if os.environ.get("DPVAE_COMMIT"):
        return os.environ["DPVAE_COMMIT"]
    try:
        sha = _git("rev-parse", "HEAD").strip()
        dirty = bool(on_code_path(changed_files()))
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{sha}-dirty" if dirty else sha


def machine() -> dict[str, str]:
    return {"host": platform.node(), "python": platform.python_version(), "platform": platform.platform()}
