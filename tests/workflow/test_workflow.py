"""The Snakemake workflow end to end: every item is in the DAG, lint is clean, and the buildable items
build at smoke scale from the offline mirror (in a temporary working directory)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpvae.config import load_config
from dpvae.data.stats import dataset_statistics
from dpvae.data.store import load_prepared
from dpvae.items import ITEMS, done_items
from dpvae.paths import REPO_ROOT

SNAKEMAKE = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO_ROOT / "Snakefile")]
SMOKE = f"--configfile={REPO_ROOT / 'tests' / 'config' / 'smoke.yaml'}"
pytestmark = pytest.mark.workflow


def snakemake(*args: str, cwd: Path, mirror: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "DPVAE_DATA_MIRROR": str(mirror) if mirror else ""}
    return subprocess.run([*SNAKEMAKE, "--directory", str(cwd), *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=1800)


@pytest.mark.parametrize("scale", ["paper", "smoke"])
def test_dry_run_of_every_item_and_gathered_ids(scale, tmp_path):
    targets = [f"figures/{key}.pdf" for key in ITEMS] + ["figures/table2.pdf", "figures/fig1.pdf"]
    extra = [SMOKE] if scale == "smoke" else []
    result = snakemake("-n", "--quiet=rules", *extra, *targets, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    for rule in ("fetch", "prepare", "train", "sample", "evaluate", "aggregate", "analyze", "render_table",
                 "render_figure", "gather"):
        assert rule in result.stdout, rule


def test_lint_is_clean():
    result = subprocess.run([*SNAKEMAKE, "--lint"], capture_output=True, text=True, cwd=REPO_ROOT)
    output = result.stdout + result.stderr
    assert result.returncode == 0 and "Congratulations" in output and "Lints for" not in output, output[-3000:]


def test_unknown_config_key_fails_before_any_job(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("variants:\n  p3gm: {params: {epochz: 3}}\n")
    result = snakemake("-n", f"--configfile={bad}", "figures/p3gm/table3.pdf", cwd=tmp_path)
    assert result.returncode != 0
    assert "config key 'variants.p3gm.params.epochz': unknown key" in result.stderr + result.stdout


def test_an_unimplemented_method_fails_loudly_when_run(tmp_path, mirror):
    run = "results/runs/pinwheel/privae-pinwheel/eps10/seed0/model"
    result = snakemake("--cores", "1", SMOKE, run, cwd=tmp_path, mirror=mirror)
    assert result.returncode != 0
    log = (tmp_path / "logs/results/runs/pinwheel/privae-pinwheel/eps10/seed0/train.log").read_text()
    assert "method 'privae'" in log and "is not implemented yet" in log
    assert not (tmp_path / run).exists()


@pytest.fixture(scope="module")
def smoke_build(tmp_path_factory, mirror) -> Path:
    """Build every buildable item and figures/table2.pdf at smoke scale, once for this module."""
    workdir = tmp_path_factory.mktemp("smoke")
    result = snakemake("--cores", "2", SMOKE, "all", "figures/table2.pdf", cwd=workdir, mirror=mirror)
    assert result.returncode == 0, result.stderr[-5000:]
    return workdir


def test_every_buildable_item_is_built(smoke_build):
    config = load_config([REPO_ROOT / "config.yaml", REPO_ROOT / "tests" / "config" / "smoke.yaml"])
    done = done_items(config)
    assert {"p3gm/table1", "p3gm/table2", "p3gm/table3", "p3gm/table4", "p3gm/fig1", "p3gm/fig3",
            "dp2vae/fig6"} <= {i.key for i in done}
    for item in done:
        for ext in item.outputs:
            path = smoke_build / "figures" / item.paper / f"{item.id}.{ext}"
            assert path.is_file() and path.stat().st_size > 0, path
        assert (smoke_build / "figures" / item.paper / f"{item.id}.pdf").read_bytes().startswith(b"%PDF")


def test_gathered_table2_is_a_pdf_of_the_done_items(smoke_build):
    from pypdf import PdfReader

    reader = PdfReader(smoke_build / "figures" / "table2.pdf")
    text = reader.pages[0].extract_text()
    assert "p3gm/table2" in text and "dp2vae/table2" in text          # included, and pending with reasons
    assert "method dp2vae" in text
    assert len(reader.pages) == 2                                    # cover + P3GM Table II


def test_table3_statistics_come_from_the_prepared_data(smoke_build):
    table = pd.read_csv(smoke_build / "figures" / "p3gm" / "table3.csv").set_index("dataset")
    for dataset in ("adult", "mnist-p3gm", "fashion-mnist-p3gm"):
        stats = dataset_statistics(load_prepared(smoke_build / "data" / "prepared" / dataset))
        assert table.loc[dataset, "N"] == stats["N"]
        assert table.loc[dataset, "#feature"] == stats["n_features"]
    assert table.loc["adult", "N"] == 48842 and table.loc["adult", "N (paper)"] == 45222
    assert table.loc["adult", "% positive"] == pytest.approx(23.93, abs=0.01)


def test_table4_is_read_from_the_configuration(smoke_build):
    table = pd.read_csv(smoke_build / "figures" / "p3gm" / "table4.csv").set_index("dataset")
    assert table.loc["credit", "sigma_s"] == 2.1 and table.loc["mnist-p3gm", "batch"] == 300
    assert (table["sigma_s"] == table["sigma_s (paper)"]).all()


def test_fig9_rdp_composition_is_below_the_baseline(smoke_build):
    table = pd.read_csv(smoke_build / "results" / "tables" / "p3gm_composition.csv")
    wide = table.pivot_table(index=["variant", "point"], columns="method", values="value")
    assert (wide["rdp-classic"] < wide["baseline"]).all()
    assert (wide["rdp-improved"] < wide["rdp-classic"]).all()
    for column in wide:                                               # epsilon falls as sigma_s grows
        for _, curve in wide[column].groupby(level="variant"):
            assert np.all(np.diff(curve.to_numpy()) < 0)
    assert wide.loc[("K=1", 1.4), "rdp-improved"] == pytest.approx(0.986, abs=0.002)   # MNIST exp.sh setting
    assert wide.loc[("K=1", 1.4), "baseline"] == pytest.approx(2.208, rel=0.01)         # PAPERS.md [computed]



def built_tex_tables(smoke_build) -> list[Path]:
    tables = sorted((smoke_build / "figures").rglob("*.tex"))
    assert {"p3gm/table1.tex", "p3gm/table3.tex", "privae/table1.tex"} <= {f"{p.parent.name}/{p.name}" for p in tables}
    return tables


def test_every_tex_table_is_ascii(smoke_build):
    """pdflatex-safe .tex: no raw Unicode (escapes and \\ensuremath instead)."""
    for path in built_tex_tables(smoke_build):
        text = path.read_bytes()
        assert text.isascii(), f"{path}: raw non-ASCII bytes {sorted({b for b in text if b > 127})[:5]}"


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="pdflatex is not on the PATH (Debian: "
                    "texlive-latex-base texlive-latex-recommended); test_every_tex_table_is_ascii still runs")
def test_every_tex_table_compiles_with_pdflatex(smoke_build, tmp_path):
    from dpvae.render.latex import standalone_document

    tables = built_tex_tables(smoke_build)
    (tmp_path / "tables.tex").write_text(standalone_document([p.read_text() for p in tables]))
    result = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "tables.tex"], cwd=tmp_path,
                            capture_output=True, text=True, errors="replace", timeout=300)
    assert result.returncode == 0 and (tmp_path / "tables.pdf").is_file(), result.stdout[-3000:]
    assert "Missing character" not in (tmp_path / "tables.log").read_text(errors="replace")
