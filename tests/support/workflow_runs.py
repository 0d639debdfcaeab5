"""Running Snakemake as a user would, in a working directory or a copy of the repository (tests only)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from dpvae.files import temporaries
from dpvae.paths import REPO_ROOT

SMOKE_FILE = REPO_ROOT / "tests" / "config" / "smoke.yaml"


def snakemake_command(repo: Path = REPO_ROOT, cwd: Path | None = None) -> list[str]:
    # as a user types it: the default profile (greedy scheduler, rerun-incomplete) is found beside the Snakefile
    command = [sys.executable, "-m", "snakemake", "--snakefile", str(repo / "Snakefile")]
    return command + (["--directory", str(cwd)] if cwd else [])


def snakemake_env(mirror: Path | None) -> dict[str, str]:
    return {**os.environ, "DPVAE_DATA_MIRROR": str(mirror) if mirror else ""}


def snakemake(
    *args: str, cwd: Path, mirror: Path | None = None, repo: Path = REPO_ROOT, timeout: int = 1800
) -> subprocess.CompletedProcess:
    """`snakemake ARGS` in `cwd` with the Snakefile of `repo`; output captured as text."""
    return subprocess.run(
        [*snakemake_command(repo, cwd), *args],
        capture_output=True,
        text=True,
        env=snakemake_env(mirror),
        cwd=cwd,
        timeout=timeout,
    )


def smoke(repo: Path = REPO_ROOT) -> str:
    return f"--configfile={repo / 'tests' / 'config' / 'smoke.yaml'}"


def copy_repository(destination: Path) -> Path:
    """The files a build reads (not .git or .venv), so that a test may edit them."""
    for name in ("Snakefile", "config.yaml", "pyproject.toml"):
        shutil.copy2(REPO_ROOT / name, destination / name)
    for name in ("workflow", "profiles", "src", "envs", "reproductions"):
        if (REPO_ROOT / name).exists():
            shutil.copytree(REPO_ROOT / name, destination / name, ignore=shutil.ignore_patterns("__pycache__"))
    (destination / "tests" / "config").mkdir(parents=True)
    shutil.copy2(SMOKE_FILE, destination / "tests" / "config" / "smoke.yaml")
    return destination


def files(root: Path, patterns: tuple[str, ...]) -> dict[str, bytes]:
    """relative path -> bytes of every file matching one of the glob `patterns` under `root`."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for pattern in patterns
        for p in sorted(root.glob(pattern))
        if p.is_file()
    }


def leftover_temporaries(root: Path) -> list[Path]:
    """Temporaries of `dpvae.files` (of any target) under `root`, outside Snakemake's own `.snakemake/`."""
    found = []
    for path in root.rglob(".*.tmp.*@*"):
        if ".snakemake" not in path.relative_to(root).parts and path in temporaries(path.parent / _target(path)):
            found.append(path)
    return found


def _target(temporary: Path) -> str:
    return temporary.name[1 : temporary.name.index(".tmp.")]
