"""A copied checkout's virtual environment does not silently run the original checkout's code or interpreter:
`python -m dpvae` and the `dpvae` script refuse with one line naming both; `make` refuses such a .venv too."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from dpvae.cli import foreign_environment
from dpvae.paths import REPO_ROOT

SRC = str(REPO_ROOT / "src")


def _venv(path: Path, made_at: Path) -> Path:
    """A stand-in virtual environment at `path` whose pyvenv.cfg says it was made at `made_at`."""
    (path / "bin").mkdir(parents=True)
    (path / "pyvenv.cfg").write_text(
        f"home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.11.7\n"
        f"command = /usr/bin/python3 -m venv {made_at}\n"
    )
    return path


def test_the_environment_running_the_tests_is_not_foreign():
    assert foreign_environment() is None


def test_a_venv_copied_from_the_checkout_whose_code_it_runs_is_refused(tmp_path):
    copy = _venv(tmp_path / "copy" / ".venv", made_at=REPO_ROOT / ".venv")
    problem = foreign_environment(argv0="-m", prefix=str(copy))
    assert problem is not None
    assert f"runs the dpvae of {REPO_ROOT / 'src'}, not of {tmp_path / 'copy' / 'src'}" in problem
    assert "make clean-env && make setup" in problem
    # made where it is, or made for a checkout whose code it does not run: fine (another environment)
    assert foreign_environment(argv0="-m", prefix=str(_venv(tmp_path / "own", made_at=tmp_path / "own"))) is None
    other = _venv(tmp_path / "b" / ".venv", made_at=tmp_path / "a" / ".venv")
    assert foreign_environment(argv0="-m", prefix=str(other)) is None


def test_a_copied_venvs_script_starting_the_originals_python_is_refused(tmp_path):
    copy = _venv(tmp_path / "copy" / ".venv", made_at=tmp_path / "original" / ".venv")
    script = copy / "bin" / "dpvae"  # as pip writes it: the first line names the original's python
    script.write_text(f"#!{sys.executable}\nimport sys\nfrom dpvae.cli import main\nsys.exit(main())\n")
    script.chmod(0o755)
    result = subprocess.run(
        [str(script), "methods"], env={**os.environ, "PYTHONPATH": SRC}, capture_output=True, text=True
    )
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"dpvae: error: {script} is a script of {copy} but starts the Python of {sys.prefix}: {copy} was copied; "
        "remake it: `make clean-env && make setup` (or run this checkout's commands with another environment)"
    ]


def _make(tmp_path: Path, venv: Path, *goals: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["make", "-n", f"VENV={venv}", *goals], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60
    )


def test_make_refuses_a_venv_made_for_another_directory_in_one_line(tmp_path):
    copied = _venv(tmp_path / ".venv", made_at=tmp_path / "elsewhere" / ".venv")
    result = _make(tmp_path, copied, "setup")
    assert result.returncode != 0
    (line,) = result.stderr.splitlines()
    assert f"{copied} was made at {tmp_path / 'elsewhere' / '.venv'}, not here" in line
    assert "make clean-env && make setup" in line
    assert _make(tmp_path, copied, "clean-env").returncode == 0, "clean-env still runs"


def test_make_refuses_a_venv_whose_editable_install_runs_another_checkout(tmp_path):
    venv = _venv(tmp_path / ".venv", made_at=tmp_path / ".venv")
    site = venv / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (site / "__editable__.dpvae-0.1.0.pth").write_text(f"{tmp_path / 'other' / 'src'}\n")
    (tmp_path / "other" / "src").mkdir(parents=True)
    result = _make(tmp_path, venv, "setup")
    assert result.returncode != 0 and f"runs the dpvae of {tmp_path / 'other' / 'src'}" in result.stderr
    # the relative path `make setup` writes (read from site-packages) is this checkout's
    (site / "__editable__.dpvae-0.1.0.pth").write_text(os.path.relpath(REPO_ROOT / "src", site) + "\n")
    assert "runs the dpvae" not in _make(tmp_path, venv, "setup").stderr
