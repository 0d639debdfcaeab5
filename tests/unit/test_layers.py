"""The package's layering (pyproject.toml [tool.importlinter]) holds: no module imports a layer above its own."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from dpvae.paths import REPO_ROOT


def test_import_linter_layers_contract_is_kept():
    lint = Path(sys.executable).with_name("lint-imports")
    command = [str(lint)] if lint.exists() else [shutil.which("lint-imports") or "lint-imports"]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "src")}
    result = subprocess.run(command, capture_output=True, text=True, cwd=REPO_ROOT, env=env)
    assert result.returncode == 0 and "0 broken" in result.stdout, result.stdout[-3000:] + result.stderr[-2000:]
