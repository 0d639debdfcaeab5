"""`python -m dpvae synth` and `python -m dpvae ledger` on a small table (PrivBayes, seconds): every argument checked
before anything is written, the ledger named after the output, the sound ε held to the target, the report, a
fixed default --n, and the ledger on one screen."""

from __future__ import annotations

import ast
import itertools
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dpvae
from dpvae.cli import main
from dpvae.data.domain import NOTES_HEADING
from dpvae.methods.marginals import PrivBayes
from dpvae.privacy.ledger import Ledger
from dpvae.quality_report import WARNING
from dpvae.release import RELEASED, REPORT, default_workspace
from dpvae.synth import DEFAULT_N

ROWS = 120


@pytest.fixture
def table(tmp_path, monkeypatch) -> Path:
    """A working directory holding `data.csv` (120 rows, two numeric columns and a label) and its domain."""
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    lines = ["a,b,label"] + [f"{x:.3f},{y:.3f},{'yes' if x > y else 'no'}" for x, y in rng.random((ROWS, 2))]
    (tmp_path / "data.csv").write_text("\n".join(lines) + "\n")
    domain = 'columns: {a: {bounds: [0, 1]}, b: {bounds: [0, 1]}}\nlabels: ["no", "yes"]\n'
    (tmp_path / "declare.yaml").write_text(domain)  # the public domain
    return tmp_path


def synth(*words: str, out: str = "out/x.csv") -> list[str]:
    base = ["synth", "--method", "privbayes", "--data", "data.csv", "--declare", "declare.yaml", "--epsilon", "1"]
    return [*base, "--out", out, *words]


def files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.mark.parametrize(
    "words, named",
    [
        (["--epsilon", "0"], "--epsilon 0"),
        (["--epsilon", "-1"], "--epsilon -1"),
        (["--epsilon", "inf"], "--epsilon inf"),
        (["--delta", "1"], "--delta 1"),
        (["--delta", "0"], "--delta 0"),
        (["--n", "-5"], "--n -5"),
        (["--audit", "0"], "--audit 0"),
        (["--seed", "-1"], "--seed -1"),
        (["--device", "gpu"], "--device 'gpu'"),
        (["--method", "real"], "--epsilon 1"),  # a non-private method takes no target
        (["--out", "data.csv"], "--out data.csv"),  # never over the data
    ],
)
def test_bad_arguments_are_refused_in_one_line_leaving_nothing(table, capsys, words, named):
    assert main(synth(*words)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and named in err, err
    assert files(table) == {"data.csv", "declare.yaml"}


def test_a_sound_epsilon_over_the_target_is_refused_before_training(table, capsys):
    """--no-calibrate-sound: PrivBayes' sound ε is 1.5 at target 1: refused naming both numbers, before the data is
    even prepared."""
    assert main(synth("--no-calibrate-sound")) == 2
    err = capsys.readouterr().err
    assert "--method privbayes: its sound ε at target 1 is 1.5 > 1 (paper's accounting: 1)" in err
    assert "--headline paper" in err and files(table) == {"data.csv", "declare.yaml"}


#: --params of each other private method on the 108 training rows (PriVAE: its MLP VAE for [d] records, a batch-wise
#: term whose sensitivity exceeds what the paper's κ assumes)
PRIVATE = {
    "p3gm": [],
    "dp-vae": [],
    "dp-gm": [],
    "privae": [
        "prior=mog",
        "latent_dim=2",
        "batch_size=20",
        "divergence=kl_pq",
        "alpha=1",
        "clip_batch=0.02",
        "groups=4",
    ],
}


@pytest.mark.parametrize("method", list(PRIVATE))
def test_every_private_method_is_refused_before_training(table, capsys, method):
    """P3GM's family and PriVAE plan their ledgers too: with --no-calibrate-sound, a sound ε over the target is
    refused before the data is prepared, naming both accountings."""
    words = ["synth", "--method", method, "--data", "data.csv", "--declare", "declare.yaml", "--epsilon", "1"]
    words.append("--no-calibrate-sound")
    assert main([*words, "--out", "out/x.csv", *(["--params", *PRIVATE[method]] if PRIVATE[method] else [])]) == 2
    err = capsys.readouterr().err
    found = re.search(
        rf"--method {method}: its sound ε at target 1 is ([0-9.]+) > 1 \(paper's accounting: ([0-9.]+)\)", err
    )
    assert found and float(found[1]) > 1 >= float(found[2]), err
    assert files(table) == {"data.csv", "declare.yaml"}


def test_a_method_known_only_after_training_is_refused_before_any_sample(table, capsys, monkeypatch):
    """Without a planned ledger, the same refusal comes after training: the run is removed, nothing is written."""
    monkeypatch.setattr(PrivBayes, "planned_ledger", lambda self, params, spec, facts: None)
    assert main(synth("--no-calibrate-sound")) == 2
    assert "its sound ε at target 1 is 1.5 > 1" in capsys.readouterr().err
    assert (default_workspace(table / "out" / "x.csv") / "data" / "prepared").is_dir()  # it trained, privately
    assert files(table) == {"data.csv", "declare.yaml"}  # no release


def test_headline_paper_releases_under_the_claim_and_reports_it(table, capsys):
    """The ledger beside the output records the paper's headline (and stays a valid ledger); the report gives
    both ε at δ, the mechanisms, what is public, the audit and where the files are; --n defaults to DEFAULT_N."""
    assert main(synth("--headline", "paper")) == 0
    report = capsys.readouterr().out
    ledger = Ledger.from_dict(json.loads((table / "out" / "x.privacy.json").read_text()))
    assert ledger.headline == "paper" and ledger.epsilon <= 1 < ledger.sound.epsilon
    assert "sound ε = 1.5, paper's ε = 1 at δ = 1e-05" in report and "under the paper's claim" in report
    assert "mechanisms: PrivBayes network" in report and "public: N protected (add/remove-one)" in report
    assert ledger.public.startswith("N protected") and "108" not in (table / "out" / "x.privacy.json").read_text()
    assert "audit: not run" in report and "ledger: out/x.privacy.json" in report
    assert len((table / "out" / "x.csv").read_text().splitlines()) == DEFAULT_N + 1 != ROWS + 1


def test_ledger_and_audit_are_named_after_the_output(table):
    """Two outputs in one folder keep both ledgers; an audit goes with its output and a rerun without --audit
    removes the stale one."""
    assert main(synth("--headline", "paper", "--audit", "20", out="out/a.csv")) == 0
    assert main(synth("--headline", "paper", out="out/b.csv")) == 0
    out = table / "out"
    assert {p.name for p in out.iterdir() if p.is_file()} == {
        "a.csv",
        "a.privacy.json",
        "a.audit.json",
        "b.csv",
        "b.privacy.json",
    }
    assert main(synth("--headline", "paper", "--force", out="out/a.csv")) == 0
    assert not (out / "a.audit.json").exists()


def test_a_failure_leaves_the_previous_release_whole(table, monkeypatch):
    """Sampling fails after training: the earlier samples and their ledger stay as they were."""
    assert main(synth("--headline", "paper")) == 0
    before = {name: (table / "out" / name).read_bytes() for name in ("x.csv", "x.privacy.json")}

    def broken(self, ctx, n):
        raise RuntimeError("sampling broke")

    monkeypatch.setattr(PrivBayes, "sample", broken)
    assert main(synth("--headline", "paper", "--force")) == 1
    assert {name: (table / "out" / name).read_bytes() for name in before} == before


def test_ledger_command_shows_one_screen(table, capsys):
    """The ledger of a release (file or run directory): headline, both accountings, mechanisms, public; a missing
    file and a file that is not a ledger are one line each."""
    assert main(synth("--headline", "paper")) == 0
    capsys.readouterr()
    for path in ("out/x.privacy.json",):
        assert main(["ledger", path]) == 0
        shown = capsys.readouterr().out
        assert "headline: ε = 1 (paper accounting) at δ = 1e-05; target ε 1" in shown
        assert "paper: ε = 1 at δ = 1e-05 (add/remove-one, accountant pure" in shown
        assert "sound: ε = 1.5 at δ = 1e-05 (replace-one" in shown
        assert "PrivBayes conditionals" in shown and "noise multiplier 2, sample rate 1 (poisson), steps 1" in shown
        public = "public: N protected (add/remove-one); the domain: 2 columns with their ranges and categories, 2 label"
        assert public in shown and "declared (public)" in shown  # the bundle's own words; it does not tell N
        assert "randomness: secret (OS entropy, never written)" in shown
        assert len(shown.splitlines()) <= 24
    for path, why in (("out/none.json", "no such ledger"), ("data.csv", "not a privacy ledger")):
        assert main(["ledger", path]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and path in err and why in err
    assert main(synth("--headline", "paper", "--force", "--keep-work")) == 0  # the default workspace, kept
    capsys.readouterr()
    assert main(["ledger", "out/x.privacy.json"]) == 0
    assert "(run synth/privbayes" in capsys.readouterr().out.splitlines()[0]  # it finds the kept run


def test_calibrate_sound_meets_the_target_with_the_sound_bound(table):
    """By default (issue 64) PrivBayes' own target is lowered until its sound ε (replace-one: 1.5x) meets
    --epsilon; --headline paper releases under the paper's claim, uncalibrated."""
    assert main(synth()) == 0
    ledger = Ledger.from_dict(json.loads((table / "out" / "x.privacy.json").read_text()))
    assert ledger.headline == "sound" and 1 - 1e-5 <= ledger.sound.epsilon <= 1 and ledger.target_epsilon == 1
    assert ledger.paper.epsilon == pytest.approx(2 / 3, rel=1e-5)
    assert main(synth("--headline", "paper", "--force")) == 0
    assert Ledger.read(table / "out" / "x.privacy.json").sound.epsilon == pytest.approx(1.5)


def test_n_defaults_to_the_training_n_where_it_is_public(table, capsys):
    """Issue 64: under the default sound headline (replace-one: N is public) --n defaults to the training N, as the
    report's `public:` line and the released ledger (`Ledger.public`) say; under an add/remove-one headline of a
    method that does not release N, to the fixed DEFAULT_N (`test_headline_paper_releases_under_the_claim_and_...`)."""
    assert main(synth()) == 0
    report = capsys.readouterr().out
    assert "public: N = 108 public" in report and "wrote 108 synthetic records" in report
    assert len(pd.read_csv(table / "out" / "x.csv")) == 108 != DEFAULT_N
    assert main(["ledger", "out/x.privacy.json"]) == 0  # the bundle's ledger says so by itself (no workspace left)
    assert not (default_workspace(table / "out" / "x.csv") / "run").exists()
    assert "public: N = 108 public (bounded DP: sound accounting's replace-one" in capsys.readouterr().out


@pytest.mark.parametrize("method", ["p3gm", "dp-vae", "dp-gm", "privae"])
def test_every_private_method_meets_the_target_by_default(table, method):
    """Issue 64: no flag beyond --declare; P3GM scales all its stages' noise by one factor (its ε' alone cannot);
    PriVAE takes a table's defaults (the MLP VAE's prior and latent size, a batch of a quarter of the 108 training
    rows: 27) from the kind of data. PrivBayes: `test_calibrate_sound_meets_the_target_with_the_sound_bound`."""
    words = ["synth", "--method", method, "--data", "data.csv", "--declare", "declare.yaml", "--epsilon", "1"]
    tiny = {"p3gm": ["pretrain_steps=10", "em_iters=2", "hidden=16"], "dp-vae": ["hidden=16"], "dp-gm": ["hidden=16"],
            "privae": ["hidden=16", "epochs=2"]}  # fmt: skip
    params = tiny.get(method, [])  # sizes only: every privacy-relevant parameter at its default
    assert main([*words, "--out", "out/x.csv", "--keep-work", *(["--params", *params] if params else [])]) == 0
    ledger = Ledger.read(table / "out" / "x.privacy.json")
    assert ledger.headline == "sound" and ledger.sound.epsilon <= 1 and ledger.not_dp is None
    if method == "privae":
        spec = json.loads((default_workspace(table / "out" / "x.csv") / "run" / "train.json").read_text())["spec"]
        assert {k: spec["params"][k] for k in ("prior", "latent_dim", "batch_size")} == {
            "prior": "mog", "latent_dim": 2, "batch_size": 27}  # fmt: skip


def test_a_missing_epsilon_and_an_existing_out_are_one_line_each(table, capsys):
    """Issue 64: no traceback without --epsilon; a second release to the same --out needs --force."""
    base = ["synth", "--method", "privbayes", "--data", "data.csv", "--declare", "declare.yaml", "--out", "o.csv"]
    assert main(base) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--epsilon: method 'privbayes' is private and needs a target epsilon" in err
    assert main([*base, "--epsilon", "1", "--headline", "paper"]) == 0
    capsys.readouterr()  # the release's report and the data holder's notes
    assert main([*base, "--epsilon", "1", "--headline", "paper"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--out o.csv: o.csv exists; pass --force" in err


def test_labels_are_read_as_written(table):
    """`labels: [no, yes]` unquoted: the strings of the file, not YAML 1.1's booleans (every row kept its label)."""
    (table / "declare.yaml").write_text("columns: {a: {bounds: [0, 1]}, b: {bounds: [0, 1]}}\nlabels: [no, yes]\n")
    assert main(synth("--headline", "paper")) == 0
    assert set(pd.read_csv(table / "out" / "x.csv")["label"]) == {"no", "yes"}


def test_images_come_back_in_the_layout_and_dtype_they_came_in(tmp_path, monkeypatch):
    """Issue 64: channels-last uint8 images in, channels-last uint8 images out (not [N, C, H, W] float32)."""
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "img.npz", x=rng.integers(0, 256, (60, 3, 3, 3), dtype=np.uint8), y=rng.integers(0, 2, 60))
    (tmp_path / "img.yaml").write_text("labels: 2\nlayout: NHWC\n")
    words = ["synth", "--method", "privbayes", "--data", "img.npz", "--declare", "img.yaml", "--epsilon", "1"]
    assert main([*words, "--out", "out.npz", "--n", "7", "--headline", "paper"]) == 0
    with np.load(tmp_path / "out.npz") as out:
        assert out["x"].shape == (7, 3, 3, 3) and out["x"].dtype == np.uint8
        assert out["y"].dtype == np.int64 and set(out["y"]) <= {0, 1}


@pytest.mark.parametrize("name", ["adult", "mnist", "twogauss-d20"])
def test_a_file_named_like_a_built_in_dataset_is_released_from_its_own_rows(table, name):
    """adult.csv is the user's file, not the built-in `adult` (whose preparer read raw files the workspace lacks:
    "missing raw file .../raw/adult/adult.data"); its workspace's dataset id says so."""
    (table / "data.csv").rename(table / f"{name}.csv")
    words = ["synth", "--method", "privbayes", "--data", f"{name}.csv", "--declare", "declare.yaml", "--epsilon", "1"]
    assert main([*words, "--out", "out/x.csv", "--headline", "paper", "--keep-work"]) == 0
    assert set(pd.read_csv(table / "out" / "x.csv")["label"]) <= {"no", "yes"}  # the file's labels
    prepared = default_workspace(table / "out" / "x.csv") / "data" / "prepared"
    assert sorted(p.name for p in prepared.iterdir()) == [f"{name}-file"]


def test_declared_integer_columns_come_back_as_integers(table):
    """Issue 64: `integer: true` beside a column's bounds: its synthetic values are whole numbers (a declared
    property of the column, never read from the records)."""
    (table / "declare.yaml").write_text(
        'columns: {a: {bounds: [0, 10], integer: true}, b: {bounds: [0, 1]}}\nlabels: ["no", "yes"]\n'
    )
    assert main(synth("--headline", "paper")) == 0
    values = pd.read_csv(table / "out" / "x.csv")["a"]
    assert values.dtype == np.int64 and values.between(0, 10).all()


@pytest.mark.parametrize("method", ["privbayes", "mst", "privae"])
def test_a_three_row_table_is_refused_in_one_line_naming_the_rule(table, capsys, method):
    """Issue 64 (Build 4): 3 rows for 2 declared labels: refused before any work, one line stating the rule."""
    (table / "data.csv").write_text("a,b,label\n0.1,0.2,no\n0.5,0.4,yes\n0.9,0.1,yes\n")
    words = ["synth", "--method", method, "--data", "data.csv", "--declare", "declare.yaml", "--epsilon", "1"]
    assert main([*words, "--out", "out/x.csv"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holds too few records" in err and "at least 4 for training" in err, err
    assert files(table) == {"data.csv", "declare.yaml"}


def test_a_default_batch_larger_than_the_table_is_named_as_the_default(table, capsys):
    """A batch the user did not pass is not blamed on --params: the line names the method's default and the fix."""
    frame = pd.read_csv(table / "data.csv").head(40)
    frame.to_csv(table / "data.csv", index=False)
    words = ["synth", "--method", "dp-vae", "--data", "data.csv", "--declare", "declare.yaml", "--epsilon", "1"]
    assert main([*words, "--out", "out/x.csv"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "dp-vae's default batch_size" in err and "--params batch_size=B" in err, err


def test_a_table_comes_back_in_its_columns_order(table):
    """Issue 64 (Build 4): the label in the middle of the file's header stays there, the other columns in order."""
    frame = pd.read_csv(table / "data.csv")
    frame[["a", "label", "b"]].to_csv(table / "data.csv", index=False)
    assert main(synth("--headline", "paper")) == 0
    assert list(pd.read_csv(table / "out" / "x.csv").columns) == ["a", "label", "b"]


def test_the_quality_report_stays_in_the_workspace_and_out_of_the_bundle(table, capsys):
    """Issue 64 (Build 3): beside --out, exactly the bundle `RELEASED` names; the report (labelled private, with its
    sections) is the one file the workspace keeps (mode 0700), and the terminal names it; --keep-work keeps it beside
    the run; --no-report writes none and deletes the workspace."""
    assert main(synth("--headline", "paper", "--audit", "20")) == 0
    printed = capsys.readouterr().out
    folder, work = table / "out", default_workspace(table / "out" / "x.csv")
    assert {p.name for p in folder.iterdir()} == {"x.csv", *RELEASED[1:]} and "x.csv" in RELEASED[0]
    assert [p.name for p in work.iterdir()] == [REPORT] and work.stat().st_mode & 0o777 == 0o700
    assert not list(table.rglob(REPORT)) and not work.is_relative_to(folder)  # publishing out/ publishes no report
    page = (work / REPORT).read_text()
    assert page.index(WARNING) < page.index("<h1>")
    for section in ("Privacy", "Marginals", "Pairwise dependence", "ML efficacy", "Distance to the closest"):
        assert f"<h2>{section}" in page, section
    assert "not part of the release; do not publish" in printed and str(work / REPORT) in printed
    assert main(synth("--headline", "paper", "--force", "--keep-work")) == 0
    assert {REPORT, "run", "data"} <= {p.name for p in work.iterdir()}
    capsys.readouterr()
    assert main(synth("--headline", "paper", "--force", "--no-report")) == 0
    assert not work.exists() and REPORT not in capsys.readouterr().out


def test_a_release_of_random_noise_is_flagged(tmp_path, monkeypatch, capsys):
    """A planted release (uniform records, labels drawn apart from them) from a table whose label its columns decide:
    the report's warning box and the terminal's line name the utility flag and the report."""
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    rows = rng.random((600, 2))
    lines = ["a,b,label"] + [f"{x:.3f},{y:.3f},{'yes' if x > y else 'no'}" for x, y in rows]
    (tmp_path / "data.csv").write_text("\n".join(lines) + "\n")
    (tmp_path / "declare.yaml").write_text(
        'columns: {a: {bounds: [0, 1]}, b: {bounds: [0, 1]}}\nlabels: ["no", "yes"]\n'
    )

    def noise(self, ctx, n):
        draw = np.random.default_rng(1)
        return {"x": draw.random((n, 2)).astype(np.float32), "y": draw.integers(0, 2, n)}

    monkeypatch.setattr(PrivBayes, "sample", noise)
    assert main(synth("--headline", "paper", "--seed", "1")) == 0  # a fixed split: the same test records every run
    flagged = [line for line in capsys.readouterr().out.splitlines() if line.startswith("FLAGGED")]
    report = default_workspace(tmp_path / "out" / "x.csv") / REPORT
    assert len(flagged) == 1 and "ML utility at chance" in flagged[0] and str(report) in flagged[0]
    page = report.read_text()
    assert 'class="flags"' in page and "ML utility at chance" in page


def test_an_image_release_reports_grids_and_accuracy(tmp_path, monkeypatch, capsys):
    """Images: the report shows a grid per class (synthetic and real), the labels and the classifier accuracy, and
    says FID is not computed; the bundle beside --out is the samples and the ledger."""
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 80)
    x = (rng.integers(0, 100, (80, 3, 3, 3)) + 150 * y[:, None, None, None]).astype(np.uint8)
    np.savez(tmp_path / "img.npz", x=x, y=y)
    (tmp_path / "img.yaml").write_text("labels: 2\nlayout: NHWC\n")
    words = ["synth", "--method", "privbayes", "--data", "img.npz", "--declare", "img.yaml", "--epsilon", "1"]
    assert main([*words, "--out", "out/x.npz", "--n", "200", "--headline", "paper"]) == 0
    assert {p.name for p in (tmp_path / "out").iterdir()} == {"x.npz", "x.privacy.json"}
    page = (default_workspace(tmp_path / "out" / "x.npz") / REPORT).read_text()
    for section in ("Privacy", "Samples per class", "Labels", "ML efficacy"):
        assert f"<h2>{section}" in page, section
    assert page.count("data:image/png;base64,") == 3 and "FID not computed" in page


def _notes(err: str) -> list[str]:
    """The data holder's notes on stderr: the heading and the indented lines under it."""
    lines = err.splitlines()
    start = lines.index(NOTES_HEADING)
    return [lines[start], *itertools.takewhile(lambda line: line.startswith("  "), lines[start + 1 :])]


DROPPED = "  records dropped: none (a value outside the domain is clipped or mapped, never dropped)"


def test_what_was_clipped_or_mapped_is_told_on_the_terminal_only(tmp_path, monkeypatch, capsys):
    """Issue 62 (Build 4): a value beyond its bounds, an empty cell, a new category and an undeclared label (training
    and test records alike) are counted on stderr under the heading, after the report; never on stdout, never in a
    file of the release, its workspace (kept) or its data."""
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    rows = [f"{a:.3f},{c},{label}" for a, c, label in zip(rng.random(120), rng.choice(["red", "blue"], 120),
            rng.choice(["no", "yes"], 120))]  # fmt: skip
    rows[0], rows[1], rows[-1] = "7.5,purple,HIV+", ",blue,yes", "-2,red,maybe"  # the last row may be a test record
    (tmp_path / "data.csv").write_text("\n".join(["a,c,label", *rows]) + "\n")
    (tmp_path / "declare.yaml").write_text(
        "columns: {a: {bounds: [0, 1]}, c: {categories: [red, blue], other: blue}}\nlabels: [no, yes]\n"
    )
    assert main(synth("--headline", "paper", "--keep-work")) == 0
    printed = capsys.readouterr()
    notes = [
        NOTES_HEADING,
        "  a: 2 values beyond its bounds, clipped to them",
        "  a: 1 value empty or not a number, counted as its lower bound",
        "  c: 1 value outside its categories, mapped to its catch-all 'blue'",
        "  label: 2 values outside the declared labels, counted as 'no'",
        DROPPED,
    ]
    assert _notes(printed.err) == notes
    assert NOTES_HEADING not in printed.out and "wrote 1000 synthetic records" in printed.out
    work = default_workspace(tmp_path / "out" / "x.csv")
    written = [p for root in (tmp_path, work) for p in root.rglob("*") if p.is_file()]
    assert (work / "data" / "prepared").is_dir() and len(written) > 10
    assert not [p for p in written if any(line.strip().encode() in p.read_bytes() for line in notes)]


def test_nan_and_infinite_float_pixels_are_clipped_and_counted(tmp_path, monkeypatch, capsys):
    """Float images: NaN pixels count as 0, +inf as 1, -inf as 0, the rest clipped into [0, 1]; the run goes on, and
    the terminal's notes count them (and an undeclared class) by kind, never naming a value."""
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    x, y = rng.random((60, 3, 3)).astype(np.float32), rng.integers(0, 2, 60)
    x[0, 0], x[1, 1, :2], x[2, 2, 0], x[3] = np.nan, np.inf, -np.inf, 3.5
    y[4] = 9
    np.savez(tmp_path / "img.npz", x=x, y=y)
    (tmp_path / "img.yaml").write_text("labels: 2\n")
    words = ["synth", "--method", "privbayes", "--data", "img.npz", "--declare", "img.yaml", "--epsilon", "1"]
    assert main([*words, "--out", "out.npz", "--n", "7", "--headline", "paper", "--no-report"]) == 0
    assert _notes(capsys.readouterr().err) == [
        NOTES_HEADING,
        "  pixels: 3 values NaN, set to 0",
        "  pixels: 3 values infinite, clipped to 0 or 1",
        "  pixels: 9 values outside [0, 1], clipped",
        "  label: 1 value outside the declared labels, counted as '0'",
        DROPPED,
    ]
    with np.load(tmp_path / "out.npz") as out:
        assert out["x"].dtype == np.float32 and np.isfinite(out["x"]).all()


#: the modules that may make or print the notes: their definitions (domain, declared) and synth's terminal
NOTES_MODULES = {"data/domain.py", "data/declared.py", "synth.py", "cli.py"}


def test_only_synth_counts_the_notes():
    """The workflow's jobs write their output to log files: no module but synth's path names `Notes`,
    `private_notes` or `NOTES_HEADING` (the encoders count only when given a `Notes`)."""
    names = {"Notes", "private_notes", "NOTES_HEADING"}
    src = Path(dpvae.__file__).parent
    found = {
        path.relative_to(src).as_posix()
        for path in src.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if (isinstance(node, ast.Name) and node.id in names) or (isinstance(node, ast.Attribute) and node.attr in names)
    }
    assert found == NOTES_MODULES
