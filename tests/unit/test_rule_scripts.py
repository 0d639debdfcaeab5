"""The rules' `script:` jobs (workflow/scripts): they import the checkout's package from $DPVAE_SRC, as the
shell rules' jobs do, and a failure ends with one `dpvae: error:` line on the terminal, its traceback in the
job's log."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from dpvae.paths import REPO_ROOT

WRITE_SPEC = REPO_ROOT / "workflow" / "scripts" / "write_spec.py"
# what Snakemake's script preamble provides, in a bare Python without dpvae on its path
RUNNER = """
import json, runpy, sys, types
output, log, spec = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
snakemake = types.SimpleNamespace(output=[output], log=[log], params=types.SimpleNamespace(spec=spec))
runpy.run_path(sys.argv[4], init_globals={"snakemake": snakemake})
"""


def _write_spec(output: Path, log: Path, spec: object) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["DPVAE_SRC"] = str(REPO_ROOT / "src")
    return subprocess.run(
        [sys.executable, "-I", "-c", RUNNER, str(output), str(log), json.dumps(spec), str(WRITE_SPEC)],
        env=env,
        capture_output=True,
        text=True,
    )


def test_write_spec_imports_dpvae_from_dpvae_src(tmp_path):
    # -I: no PYTHONPATH, no user site; only the venv's packages, where dpvae may be another checkout's
    result = _write_spec(tmp_path / "spec.json", tmp_path / "spec.log", {"a": 1})
    assert result.returncode == 0, result.stderr
    assert json.loads((tmp_path / "spec.json").read_text()) == {"a": 1}
    assert "wrote" in (tmp_path / "spec.log").read_text()


def test_a_failing_write_spec_ends_with_one_line(tmp_path):
    (tmp_path / "file").write_text("")
    output = tmp_path / "file" / "spec.json"  # below a file: cannot be written
    result = _write_spec(output, tmp_path / "spec.log", {"a": 1})
    assert result.returncode == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"dpvae: error: writing {output} failed: FileExistsError: ")
    assert line.endswith(f"(traceback in {tmp_path / 'spec.log'})")
    assert "Traceback (most recent call last)" in (tmp_path / "spec.log").read_text()
