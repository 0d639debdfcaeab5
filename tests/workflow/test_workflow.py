"""The Snakemake workflow end to end: every item is in the DAG at both scales with short command lines, bad
input and unbuilt items stop before any job, the buildable items build at smoke scale from the offline
mirror (in a copy of the repository, so that tests may edit it), the report holds every built item, and
editing a renderer re-renders without retraining."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpvae.data.stats import dataset_statistics
from dpvae.data.store import load_prepared
from dpvae.items import ITEMS
from dpvae.paths import REPO_ROOT
from dpvae.runs import run_spec
from dpvae.status import done_items
from dpvae.workflow import Rules
from support.workflow_runs import copy_repository, smoke, snakemake

pytestmark = pytest.mark.workflow
ALL_ITEMS = [f"figures/{key}.pdf" for key in ITEMS]


RULES = (
    "fetch",
    "prepare",
    "stage1",
    "train",
    "sample",
    "evaluate",
    "reference",
    "aggregate",
    "combine",
    "analyze",
    "item_spec",
    "render_table",
    "render_figure",
    "gather",
    "scorecard",
    "claims",
)


def test_smoke_scale_plans_every_item_and_gathered_ids(tmp_path):
    result = snakemake(
        "-n",
        "--quiet=rules",
        smoke(),
        *ALL_ITEMS,
        "figures/table2.pdf",
        "figures/fig1.pdf",
        "figures/scorecard.pdf",
        "figures/claims.pdf",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    for rule in RULES:
        assert re.search(rf"^{rule}\s+\d+", result.stdout, re.M), rule


def test_paper_scale_plans_every_item_with_no_line_over_64_kib(tmp_path, paper_config):
    """Every item at paper scale is in the DAG, and rules pass paths, never run tables: no printed command
    (or job description) outgrows Linux's limits."""
    result = snakemake(
        "-n", "-p", *ALL_ITEMS, "figures/table2.pdf", "figures/scorecard.pdf", "figures/claims.pdf", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr[-3000:]
    output = result.stdout + result.stderr
    longest = max(len(line.encode()) for line in output.splitlines())
    assert longest < 64 * 1024, f"longest printed line: {longest} bytes"
    for rule in RULES:
        assert re.search(rf"^{rule}\s+\d+", output, re.M), rule
    unreachable = paper_config["data"]["unreachable"]  # items leave out what cannot be downloaded here
    reachable = {r for r in Rules(paper_config, REPO_ROOT)._all_runs if r.dataset not in unreachable}
    assert int(re.search(r"^train\s+(\d+)", output, re.M).group(1)) == len(reachable) > 1300  # every run once
    shared = {run_spec(paper_config, r).stage1 for r in reachable} - {None}  # one job per stage-1 key
    assert int(re.search(r"^stage1\s+(\d+)", output, re.M).group(1)) == len(shared) >= 3


def test_a_plain_command_gets_the_default_profile_and_none_turns_it_off(tmp_path):
    """`snakemake <target>` as the README writes it: the profile beside the Snakefile is in effect (its
    printshellcmds shows each job's command), and `--workflow-profile none` leaves Snakemake's own defaults."""
    target = (smoke(), "figures/p3gm/table3.pdf")
    plain = snakemake("-n", *target, cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr[-3000:]
    assert re.search(r"Using workflow specific profile \S*profiles/default", plain.stderr), plain.stderr[:2000]
    assert "-m dpvae prepare" in plain.stdout, "the profile's printshellcmds is not in effect"
    off = snakemake("-n", "--workflow-profile", "none", *target, cwd=tmp_path)
    assert off.returncode == 0 and "Using workflow specific profile" not in off.stderr
    assert "-m dpvae prepare" not in off.stdout


def test_config_fid_n_samples_reaches_the_fid_job(tmp_path):
    overlay = tmp_path / "fid.yaml"
    overlay.write_text("evaluation:\n  fid: {n_samples: 1234}\n")
    result = snakemake("-n", "-p", f"--configfile={overlay}", "figures/dp2vae/table1.pdf", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    fid = [line for line in result.stdout.splitlines() if "dpvae evaluate" in line and "--metric fid" in line]
    assert fid and all('"n_samples": 1234' in line for line in fid)


def test_job_resources_come_from_the_method(tmp_path):
    """A method that wants a GPU (DP2-VAE) asks the scheduler for one, unless the config says device: cpu."""
    target = "results/paper/runs/mnist/dp2vae/eps10/seed0/train.json"
    planned = snakemake("-n", target, cwd=tmp_path)
    assert planned.returncode == 0, planned.stderr[-3000:]
    # one job's resources line names both (Snakemake prints the resources in no fixed order)
    assert re.search(r"resources: (?=.*gpu=1)(?=.*mem_mb=8000)", planned.stdout), planned.stdout[-2000:]
    on_cpu = snakemake("-n", target, "--config", "device=cpu", cwd=tmp_path)
    assert "gpu=1" not in on_cpu.stdout and "gpu=0" in on_cpu.stdout


def test_lint_is_clean():
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "--lint"], capture_output=True, text=True, cwd=REPO_ROOT
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0 and "Congratulations" in output and "Lints for" not in output, output[-3000:]


@pytest.mark.parametrize(
    ("overlay", "message"),
    [
        (
            "variants:\n  p3gm: {params: {epochz: 3}}\n",
            "config key 'variants.p3gm.params.epochz': not a parameter of method 'p3gm'",
        ),
        (
            "variants:\n  privae: {params: {discriminators: 1000}}\n",
            "config key 'variants.privae.params.discriminators': not a parameter of method 'privae'",
        ),
    ],
)
def test_a_bad_parameter_fails_before_any_job(tmp_path, overlay, message):
    bad = tmp_path / "bad.yaml"
    bad.write_text(overlay)
    result = snakemake("--cores", "1", f"--configfile={bad}", "figures/p3gm/table3.pdf", cwd=tmp_path)
    assert result.returncode != 0
    assert message in result.stderr + result.stdout
    assert not (tmp_path / "data").exists() and not (tmp_path / "results").exists()


def test_a_misspelt_item_names_the_valid_ones(tmp_path):
    result = snakemake("-n", "figures/p3gm/tabel3.pdf", cwd=tmp_path)
    assert result.returncode != 0
    assert "no item 'tabel3' in paper 'p3gm'; did you mean 'table3'?" in result.stderr + result.stdout


def test_a_real_run_of_an_unbuilt_item_stops_at_once_naming_what_is_missing(tmp_path):
    repo = copy_repository(tmp_path)  # every item is built today: unregister one renderer
    renderer = repo / "src" / "dpvae" / "render" / "p3gm" / "utility_curves.py"
    renderer.write_text(renderer.read_text().replace('@register_renderer("p3gm/fig8")\n', ""))
    started = time.monotonic()
    result = snakemake("--cores", "1", smoke(repo), "figures/p3gm/fig8.pdf", cwd=repo, repo=repo)
    assert time.monotonic() - started < 30
    assert result.returncode != 0
    output = result.stderr + result.stdout
    assert "cannot build p3gm/fig8" in output and "renderer p3gm/fig8" in output
    assert not (repo / "results").exists() and not (repo / "data").exists()


def test_every_buildable_item_is_built(smoke_build, smoke_config):
    done = done_items(smoke_config)
    assert {"p3gm/table1", "p3gm/table2", "p3gm/table3", "p3gm/table4", "p3gm/fig1", "p3gm/fig3", "dp2vae/fig6"} <= {
        i.key for i in done
    }
    for item in done:
        for ext in item.outputs:
            path = smoke_build / "figures" / item.paper / f"{item.id}.{ext}"
            assert path.is_file() and path.stat().st_size > 0, path
        assert (smoke_build / "figures" / item.paper / f"{item.id}.pdf").read_bytes().startswith(b"%PDF")
    for name in ("scorecard", "claims"):  # built from the recorded rows at any scale
        for ext in ("pdf", "csv"):
            assert (smoke_build / "figures" / f"{name}.{ext}").is_file(), (name, ext)


def test_a_smoke_scale_item_says_its_scale_on_the_page(smoke_build):
    from pypdf import PdfReader

    for item in ("p3gm/table3", "p3gm/fig9"):
        reader = PdfReader(smoke_build / "figures" / f"{item}.pdf")
        text = " ".join(page.extract_text() for page in reader.pages)
        assert "smoke scale: not the paper's setting" in text, item
        assert "scale=smoke" in str(reader.metadata.get("/Subject")), item  # provenance in the metadata


def test_the_report_holds_every_built_item_with_its_caption(smoke_build, mirror, smoke_config):
    report = smoke_build / "report.html"
    result = snakemake(smoke(smoke_build), "--report", str(report), cwd=smoke_build, mirror=mirror, repo=smoke_build)
    assert result.returncode == 0, result.stderr[-3000:]
    html = re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), report.read_text())  # JSON escapes
    for item in done_items(smoke_config):
        assert f"figures/{item.key}.pdf" in html, item.key
        caption = (smoke_build / "workflow" / "report" / item.paper / f"{item.id}.rst").read_text()
        words = re.findall(r"\w+", caption.split("—")[-1])[:3]  # e.g. 'DP²', 'VAE', 'Figure'
        assert re.search(r"(?:\W|<[^>]*>)+".join(map(re.escape, words)), html), (item.key, words)  # tags between
    assert "Scale: smoke" in html


def _planned_jobs(repo: Path, mirror: Path) -> tuple[set[str], set[str]]:
    """(rules, papers of the render jobs) that `snakemake -n all` would run now."""
    result = snakemake("-n", smoke(repo), "all", cwd=repo, mirror=mirror, repo=repo)
    assert result.returncode == 0, result.stderr[-3000:]
    output = result.stdout + result.stderr
    rules = set(re.findall(r"^rule (\w+):", output, re.M)) - {"all"}
    return rules, set(re.findall(r"wildcards: paper=(\w+)", output))


def test_editing_a_renderer_or_published_file_rerenders_only_its_papers_items(smoke_build, mirror):
    published = smoke_build / "workflow" / "resources" / "published" / "dp2vae.csv"
    with published.open("a") as f:  # DP2-VAE's file changes (Snakemake ignores a touch: same checksum)
        f.write("\n")
    rules, papers = _planned_jobs(smoke_build, mirror)
    # the scorecard and the claims page read every published file: they re-render too
    assert rules <= {"render_table", "render_figure", "scorecard", "claims"} and papers == {"dp2vae"}, (rules, papers)
    result = snakemake("--cores", "2", smoke(smoke_build), "all", cwd=smoke_build, mirror=mirror, repo=smoke_build)
    assert result.returncode == 0, result.stderr[-3000:]

    renderer = smoke_build / "src" / "dpvae" / "render" / "p3gm" / "utility_curves.py"
    renderer.write_text(renderer.read_text() + "\n# an edit of a plot\n")
    rules, papers = _planned_jobs(smoke_build, mirror)
    assert rules <= {"render_table", "render_figure"} and papers == {"p3gm"}, (rules, papers)


def test_gathered_table2_is_a_pdf_of_the_done_items(smoke_build):
    from pypdf import PdfReader

    reader = PdfReader(smoke_build / "figures" / "table2.pdf")
    text = reader.pages[0].extract_text()
    assert "p3gm/table2" in text and "dp2vae/table2" in text  # the cover lists both items
    assert len(reader.pages) == 3  # cover + P3GM Table II + DP2-VAE Table 2


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
    table = pd.read_csv(smoke_build / "results" / "smoke" / "tables" / "p3gm_composition.csv")
    wide = table.pivot_table(index=["variant", "point"], columns="method", values="value")
    assert (wide["rdp-classic"] < wide["baseline"]).all()
    assert (wide["rdp-improved"] < wide["rdp-classic"]).all()
    for column in wide:  # epsilon falls as sigma_s grows
        for _, curve in wide[column].groupby(level="variant"):
            assert np.all(np.diff(curve.to_numpy()) < 0)
    assert wide.loc[("K=1", 1.4), "rdp-improved"] == pytest.approx(0.986, abs=0.002)  # MNIST exp.sh setting
    assert wide.loc[("K=1", 1.4), "baseline"] == pytest.approx(2.208, rel=0.01)  # docs/papers.md p3gm/fig9 [computed]


def built_tex_tables(smoke_build) -> list[Path]:
    tables = sorted((smoke_build / "figures").rglob("*.tex"))
    assert {"p3gm/table1.tex", "p3gm/table3.tex", "privae/table1.tex"} <= {f"{p.parent.name}/{p.name}" for p in tables}
    return tables


def test_every_tex_table_is_ascii(smoke_build):
    """pdflatex-safe .tex: no raw Unicode (escapes and \\ensuremath instead)."""
    for path in built_tex_tables(smoke_build):
        text = path.read_bytes()
        assert text.isascii(), f"{path}: raw non-ASCII bytes {sorted({b for b in text if b > 127})[:5]}"


@pytest.mark.skipif(
    shutil.which("pdflatex") is None,
    reason="pdflatex is not on the PATH (Debian: "
    "texlive-latex-base texlive-latex-recommended); test_every_tex_table_is_ascii still runs",
)
def test_every_tex_table_compiles_with_pdflatex(smoke_build, tmp_path):
    from dpvae.render.latex import standalone_document

    tables = built_tex_tables(smoke_build)
    (tmp_path / "tables.tex").write_text(standalone_document([p.read_text() for p in tables]))
    result = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "tables.tex"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        errors="replace",
        timeout=300,
    )
    assert result.returncode == 0 and (tmp_path / "tables.pdf").is_file(), result.stdout[-3000:]
    assert "Missing character" not in (tmp_path / "tables.log").read_text(errors="replace")
