"""Your own data (README "Your own data"): the walk-throughs run exactly as the README writes them.

Each test reads its fenced block from README.md and runs its commands in a temporary working directory
(`python` is this interpreter, `snakemake` the repository's Snakefile, the overlay files as the README names
them), then checks what they made; the refusals run `check-config` on the README's overlays with one change.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from dpvae.paths import REPO_ROOT, model_path, results_dir
from dpvae.render.output import OWN_SCALE
from support.workflow_runs import snakemake_command, snakemake_env

README = REPO_ROOT / "README.md"
DPVAE = [sys.executable, "-m", "dpvae"]


def walkthrough(heading: str) -> list[str]:
    """The command lines of the first ```bash block under `### <heading>` in the README's "Your own data"."""
    text = README.read_text()
    section = text[text.index("## Your own data") :]
    start = section.index(f"### {heading}")
    block = re.search(r"```bash\n(.*?)```", section[start:], re.S)
    assert block, f"README: no bash block under '### {heading}'"
    return [line for line in block.group(1).splitlines() if line.strip() and not line.startswith("#")]


def run_line(line: str, cwd: Path, mirror: Path | None) -> subprocess.CompletedProcess:
    """One README command in `cwd`: paths of the repository made absolute, python and snakemake as a user's."""
    words = shlex.split(line)
    words = [
        re.sub(r"^(--configfile=)?(tests/config/|examples/)", lambda m: f"{m[1] or ''}{REPO_ROOT}/{m[2]}", w)
        for w in words
    ]
    if words[0] == "python":
        words = [sys.executable, *words[1:]]
    elif words[0] == "snakemake":
        words = [*snakemake_command(REPO_ROOT, cwd), *words[1:]]
    result = subprocess.run(words, cwd=cwd, capture_output=True, text=True, env=snakemake_env(mirror), timeout=900)
    assert result.returncode == 0, f"{line}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


def target_of(lines: list[str]) -> str:
    """The rendered experiment the walk-through's snakemake line asks for (figures/experiments/<name>.pdf)."""
    (snake,) = [line for line in lines if line.startswith("snakemake ")]
    return next(w for w in shlex.split(snake) if w.startswith("figures/experiments/"))


def tables_of(cwd: Path, lines: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the experiment's long-format table, its rendered table) as the walk-through left them."""
    name = Path(target_of(lines)).stem
    (tidy,) = (cwd / results_dir(OWN_SCALE) / "tables" / name).glob("*.csv")  # the overlays' `scale: own`
    rendered = cwd / "figures" / "experiments" / f"{name}.csv"
    assert (cwd / target_of(lines)).is_file() and rendered.with_suffix(".tex").is_file()
    return pd.read_csv(tidy), pd.read_csv(rendered)


def check_config(cwd: Path, *overlays: Path) -> subprocess.CompletedProcess:
    files = [REPO_ROOT / "config.yaml", REPO_ROOT / "tests" / "config" / "smoke.yaml", *overlays]
    return subprocess.run([*DPVAE, "check-config", *map(str, files)], cwd=cwd, capture_output=True, text=True)


def overlay(name: str) -> dict:
    return yaml.safe_load((REPO_ROOT / "examples" / "own-data" / name).read_text())


def test_breast_cancer_walkthrough(tmp_path, mirror):
    """The CSV through P3GM, PrivBayes, DP-GM and real data into the experiment's table; `dpvae synth` with the
    ledger and the audit; then a changed file is another dataset: its fetch, preparation and runs are planned
    again (the file's modification time set back, so only its content says it changed)."""
    lines = walkthrough("Breast cancer")
    for line in lines:
        run_line(line, tmp_path, mirror)

    table, rendered = tables_of(tmp_path, lines)
    assert set(table["variant"]) == {"p3gm", "privbayes", "dp-gm", "real"}
    assert set(rendered["variant"]) == {"p3gm", "privbayes", "dp-gm", "real"} and (rendered["n"] == 1).all()
    private = rendered[rendered["variant"] != "real"]
    assert (private["eps spent (sound)"] >= private["eps spent (paper)"] - 1e-9).all()
    assert (rendered["total s/run"] > 0).all()
    assert {"auroc", "epsilon_spent_sound"} <= set(table["metric"])
    assert "tvd2" in set(table["metric"])  # marginals_2way
    spent = table[(table["metric"] == "epsilon_spent") & (table["variant"] != "real")]["value"]
    assert len(spent) == 3 and (spent <= 1 + 1e-9).all()

    synthetic = pd.read_csv(tmp_path / "synthetic" / "breast-cancer.csv")
    real = pd.read_csv(tmp_path / "mydata" / "breast-cancer.csv")
    assert list(synthetic.columns) == list(real.columns) and set(synthetic["target"]) <= {"malignant", "benign"}
    ledger, audit = (tmp_path / "synthetic" / f"breast-cancer.{kind}.json" for kind in ("privacy", "audit"))
    assert ledger.is_file() and audit.is_file() and json.loads(ledger.read_text())["headline"] == "paper"

    data = tmp_path / "mydata" / "breast-cancer.csv"
    stat = data.stat()
    data.write_text("".join(data.read_text().splitlines(keepends=True)[:-1]))  # one row fewer
    import os

    os.utime(data, ns=(stat.st_atime_ns, stat.st_mtime_ns - 10**12))
    (snake,) = [line for line in lines if line.startswith("snakemake ")]
    dry = run_line(snake.replace("snakemake ", "snakemake -n ", 1), tmp_path, mirror)
    counts = dict(re.findall(r"^(fetch|prepare|train)\s+(\d+)$", dry.stdout, re.M))
    assert counts == {"fetch": "1", "prepare": "1", "train": "4"}, dry.stdout[-2000:]


def test_digits_walkthrough(tmp_path, mirror):
    """The .npz through DP-MERF and P3GM's image path with image_classifiers; `dpvae synth` of images."""
    lines = walkthrough("Digits")
    for line in lines:
        run_line(line, tmp_path, mirror)
    table, rendered = tables_of(tmp_path, lines)
    assert set(table["variant"]) == set(rendered["variant"]) == {"dp-merf", "p3gm", "real"}
    accuracy = table[table["metric"] == "accuracy"]
    assert set(accuracy["classifier"]) >= {"lr", "cnn"} and accuracy["value"].between(0, 1).all()
    import numpy as np

    with np.load(tmp_path / "synthetic" / "digits.npz") as arrays:
        # the file's own layout and dtype back (issue 64): [N, 8, 8] uint8, as mydata/digits.npz
        assert (
            arrays["x"].shape[1:] == (8, 8) and arrays["x"].dtype == np.uint8 and len(arrays["y"]) == len(arrays["x"])
        )
    assert json.loads((tmp_path / "synthetic" / "digits.privacy.json").read_text())["headline"] == "sound"


@pytest.fixture
def csv_dir(tmp_path) -> Path:
    """A working directory with the breast-cancer CSV exported by the README's own line."""
    (export,) = [line for line in walkthrough("Breast cancer") if line.startswith("python -c")]
    (tmp_path / "mydata").mkdir()
    run_line(export, tmp_path, None)
    return tmp_path


def _merged(base: dict, changes: dict) -> dict:
    """`base` with `changes` merged in, mappings key by key (as Snakemake merges overlays)."""
    out = dict(base)
    for key, value in changes.items():
        out[key] = _merged(out.get(key) or {}, value) if isinstance(value, dict) else value
    return out


def _refusals(cwd: Path, changes: dict) -> list[str]:
    config = _merged(overlay("breast-cancer.yaml"), changes)
    path = cwd / "overlay.yaml"
    path.write_text(yaml.safe_dump(config))
    result = check_config(cwd, path)
    assert result.returncode == 2, result.stdout
    return [line for line in result.stderr.splitlines() if line.startswith("  - ")]


def test_oversize_attack_refused_at_validation(csv_dir):
    """More attacked members than the table's training split: refused before any job, one line naming the key
    and the split size."""
    exp = {**overlay("breast-cancer.yaml")["experiments"]["own_breast_cancer"], "metrics": ["mc_attack"]}
    problems = _refusals(
        csv_dir, {"experiments": {"own_breast_cancer": exp}, "evaluation": {"mc_attack": {"n_members": 1000}}}
    )
    ours = [p for p in problems if "breast-cancer" in p]
    members = [p for p in ours if "'evaluation.mc_attack.n_members'" in p and "512 training records" in p]
    nonmembers = [p for p in ours if "'evaluation.mc_attack.n_nonmembers'" in p and "test split has 57" in p]
    assert members and nonmembers and len(members) + len(nonmembers) == len(ours), problems


def test_image_method_on_a_table_refused(csv_dir):
    """DP-MERF (images) on the breast-cancer table: one line naming the method and the dataset."""
    problems, refused = _refused_method(csv_dir, "dp-merf")
    assert len(problems) == 1, problems
    assert "'dp-merf'" in problems[0] and "'breast-cancer'" in problems[0] and "(a table)" in problems[0]
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "dp-merf" in refused.stderr


def _refused_method(cwd: Path, method: str) -> tuple[list[str], subprocess.CompletedProcess]:
    """(check-config's problems with `method` as the breast-cancer experiment's one variant, `dpvae synth` of it)."""
    exp = {**overlay("breast-cancer.yaml")["experiments"]["own_breast_cancer"], "variants": [method]}
    problems = _refusals(cwd, {"experiments": {"own_breast_cancer": exp}})
    declare = str(REPO_ROOT / "examples" / "own-data" / "breast-cancer.yaml")
    words = ["synth", "--method", method, "--data", "mydata/breast-cancer.csv", "--epsilon", "1", "--declare", declare]
    return problems, subprocess.run([*DPVAE, *words, "--out", "s.csv"], cwd=cwd, capture_output=True, text=True)


def test_declared_file_problems_name_the_key(csv_dir):
    """A missing file and an absent label column: refused at validation naming the key and the file."""
    problems = _refusals(csv_dir, {"datasets": {"breast-cancer": {"path": "mydata/none.csv"}}})
    assert problems == [
        "  - config key 'datasets.breast-cancer.path': no such file mydata/none.csv "
        "(relative paths are to the working directory)"
    ]
    problems = _refusals(csv_dir, {"datasets": {"breast-cancer": {"label": "diagnosis"}}})
    assert len(problems) == 1 and "no column 'diagnosis'" in problems[0], problems
    shutil.rmtree(csv_dir / "mydata")


def test_ryans_method_on_a_declared_dataset_refused(csv_dir):
    """Ryan's method needs a public sample, which a declared dataset does not give: one line at validation
    naming the method and the dataset, and `dpvae synth` refuses it before training (no model written)."""
    problems, refused = _refused_method(csv_dir, "ryan")
    assert len(problems) == 1, problems
    assert "'ryan'" in problems[0] and "'breast-cancer'" in problems[0] and "public sample" in problems[0]
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "public sample" in refused.stderr
    assert not model_path(csv_dir / "s.csv.run").exists() and not (csv_dir / "s.csv").exists()
