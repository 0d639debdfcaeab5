"""The code's habits hold: the import contracts (pyproject.toml [tool.importlinter]: the layers, and method
families independent of each other), no import circle, ruff's lint and format, snakefmt for the rules."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dpvae.paths import REPO_ROOT


def _tool(name: str) -> str:
    """The environment's own copy of a command-line tool (beside this Python), else the one on PATH."""
    local = Path(sys.executable).with_name(name)
    return str(local) if local.exists() else shutil.which(name) or name


def _run(*command: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "src")}
    return subprocess.run(command, capture_output=True, text=True, cwd=REPO_ROOT, env=env, timeout=300)


def test_import_linter_contracts_are_kept():
    result = _run(_tool("lint-imports"))
    assert result.returncode == 0 and "0 broken" in result.stdout, result.stdout[-3000:] + result.stderr[-2000:]


def test_no_import_circle_in_the_package():
    """No module imports, directly or not (function-level imports included), one that imports it back."""
    import grimp

    graph = grimp.build_graph("dpvae", cache_dir=None)
    circles = {
        tuple(sorted({module, other}))
        for module in graph.modules
        for other in graph.find_modules_directly_imported_by(module)
        if graph.find_shortest_chain(importer=other, imported=module) is not None
    }
    assert not circles, f"import circles: {sorted(circles)}"


@pytest.mark.parametrize(
    "command",
    [
        ("ruff", "check", "."),
        ("ruff", "format", "--check", "."),
        ("snakefmt", "--check", "Snakefile", "workflow/rules"),
    ],
    ids=["ruff-check", "ruff-format", "snakefmt"],
)
def test_lint_and_format(command):
    result = _run(_tool(command[0]), *command[1:])
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
