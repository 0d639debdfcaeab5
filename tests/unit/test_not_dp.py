"""Not-DP is visible where results are read (issue 62 Build 6): a recorded row carries its ledger's `not_dp` and its
preprocessing id (`adult-refcode`); the scorecard, `dpvae status` and the pages that show recorded rows mark such
cells with a dagger and give the reason; `benchmarks/mark_not_dp.py` gave the rows recorded before their column."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from dpvae import reproductions
from dpvae.config_types import Experiment
from dpvae.data.domain import NOT_DP_REFERENCE_CODE
from dpvae.paths import REPO_ROOT, ledger_file, metric_file, train_record
from dpvae.reproductions import COLUMNS, NOT_DP_MARK, record, recorded
from dpvae.scorecard import item_summary, scorecard, summary_line, write_scorecard
from dpvae.specs import AggregateSpec

WHY = "domain: reference_code - planted"


@pytest.fixture(autouse=True)
def clean_checkout(monkeypatch) -> None:
    monkeypatch.setattr(reproductions, "changed_files", lambda: [])


def _adult_rows(dataset: str, not_dp: str, values=(0.80, 0.82)) -> list[dict]:
    cell = {"paper": "p3gm", "item": "table6", "dataset": dataset, "method": "p3gm", "epsilon": 1, "metric": "auroc"}
    cell |= {"classifier": "mean4", "setting": "", "scale": "paper", "variant": "p3gm", "device": "cpu"}
    return [{**cell, "seed": s, "value": v, "not_dp": not_dp} for s, v in enumerate(values)]


def _write(directory: Path, rows: list[dict]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    frame = pd.DataFrame([{**dict.fromkeys(COLUMNS, ""), **r} for r in rows], columns=list(COLUMNS))
    frame.to_csv(directory / "p3gm.csv", index=False)
    return directory


def _cell(card: pd.DataFrame) -> pd.Series:
    hit = card[(card["item"] == "table6") & (card["method"] == "p3gm") & (card["metric"] == "auroc")]
    return hit[(hit["dataset"] == "adult") & (hit["source"] == "paper") & (hit["setting"] == "")].iloc[0]


def test_a_refcode_row_stands_for_the_papers_cell_marked_until_a_public_row_comes(tmp_path):
    refcode = _write(tmp_path / "refcode", _adult_rows("adult-refcode", WHY))
    card = scorecard(paper="p3gm", reproductions_dir=refcode)
    cell = _cell(card)
    assert cell["n"] == 2 and cell["not_dp"] == WHY
    # the paper's cell and the reference code's (the notebook's 0.59724) are both judged on those rows
    assert item_summary(card)["p3gm/table6"].endswith(f"; 2 cells not DP {NOT_DP_MARK}")
    assert summary_line(card).endswith(f"; 2 cells not DP {NOT_DP_MARK}")
    both = _write(tmp_path / "both", _adult_rows("adult-refcode", WHY) + _adult_rows("adult", "", (0.7, 0.7, 0.7)))
    cell = _cell(scorecard(paper="p3gm", reproductions_dir=both))
    assert (cell["n"], cell["ours_mean"], cell["not_dp"]) == (3, pytest.approx(0.7), "")  # the public rows judge it


def test_the_pdf_puts_a_dagger_beside_a_not_dp_cell_and_the_reason_under_it(tmp_path):
    from pypdf import PdfReader

    for not_dp, marked in ((WHY, True), ("", False)):  # the same rows without the reason: no dagger, no footnote
        card = scorecard(paper="p3gm", reproductions_dir=_write(tmp_path / str(marked), _adult_rows("adult", not_dp)))
        write_scorecard(card, tmp_path / f"{marked}.pdf")
        text = "\n".join(page.extract_text() for page in PdfReader(tmp_path / f"{marked}.pdf").pages)
        assert bool(re.search(r"0\.81 \+- 0\.014 \(n=2 of 5\) \[[^]]+\] \u2020", text)) == marked
        assert (f"\u2020 not DP (the run's ledger): {WHY}" in text) == marked
        assert ("not_dp" in pd.read_csv(tmp_path / f"{marked}.csv").columns) and marked == bool(card["not_dp"].any())


def test_the_adult_cells_are_judged_on_the_public_domain_and_the_refcode_rows_stay_marked():
    """The real reproductions: P3GM's Adult cells (Tables VI, VIII) are judged on the rows recorded on Adult's
    declared public domain (issue 63 Build 6), where only Ryan's (its unnoised public slice) is not DP; the earlier
    `adult-refcode` rows stay in reproductions/p3gm.csv as their study, each private one marked with the reference
    code's reason, which docs/status.md (kept equal to `dpvae status` by test_items) no longer gives for them."""
    card = scorecard(paper="p3gm")
    adult = card[card["item"].isin(["table6", "table8"]) & (card["dataset"] == "adult") & (card["n"] > 0)]
    private = adult[adult["epsilon"].notna()]
    assert len(private) >= 10 and not private["not_dp"].str.contains(NOT_DP_REFERENCE_CODE, regex=False).any()
    assert set(private.loc[private["not_dp"] != "", "method"]) == {"ryan"}
    assert (adult.loc[adult["epsilon"].isna(), "not_dp"] == "").all()  # "original" is no private release
    rows = reproductions.read_reproductions(reproductions.REPRODUCTIONS_DIR / "p3gm.csv")
    refcode = rows[(rows["dataset"] == "adult-refcode") & rows["item"].isin(["table6", "table8"])]
    refcode = refcode[refcode["epsilon"].notna()]
    assert len(refcode) and refcode["not_dp"].str.contains(NOT_DP_REFERENCE_CODE, regex=False).all()
    status = (REPO_ROOT / "docs" / "status.md").read_text()
    assert f"cells not DP {NOT_DP_MARK} |" in status


def test_record_reads_not_dp_from_the_ledger_and_keeps_the_refcode_id(tmp_path):
    results = tmp_path / "results" / "paper"
    table = results / "tables" / "p3gm_tabular" / "adult-refcode.csv"
    table.parent.mkdir(parents=True)
    rows = []
    for variant, why in (("p3gm", WHY), ("real", None)):
        run = results / "runs" / "adult-refcode" / variant / ("eps1" if why else "epsinf") / "seed0"
        run.mkdir(parents=True)
        train_record(run).write_text(json.dumps({"device_name": "cpu", "commit": "abc", "seconds": 1.0}))
        ledger_file(run).write_text(json.dumps({"not_dp": why}))
        base = {"experiment": "p3gm_tabular", "dataset": "adult-refcode", "variant": variant, "method": variant}
        base |= {"epsilon": 1.0 if why else None, "seed": 0}
        rows += [{**base, "metric": "auroc", "classifier": "mean4", "value": 0.8}]
        rows += [{**base, "metric": "not_dp", "value": 1.0}] if why else []  # the tidy mark is not a result
    pd.DataFrame(rows).to_csv(table, index=False)
    (written,) = record([table], command="x", out_dir=tmp_path / "reproductions")
    got = pd.read_csv(written, keep_default_na=False)
    assert set(got["dataset"]) == {"adult-refcode"} and set(got["metric"]) == {"auroc"}
    assert dict(zip(got["variant"], got["not_dp"])) == {"p3gm": WHY, "real": ""}
    cells = recorded("p3gm", "table6", tmp_path / "reproductions")
    assert dict(zip(cells["method"], cells["not_dp"])) == {"p3gm": WHY, "original": ""}


def test_aggregate_marks_a_run_whose_ledger_is_not_dp(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from dpvae import tables

    runs = []
    for variant, why in (("ryan", "public slice"), ("p3gm", None)):
        run = tmp_path / variant
        metric_file(run, "auroc").parent.mkdir(parents=True)
        ledger_file(run).write_text(json.dumps({"epsilon": 1.0, "not_dp": why}))
        metric_file(run, "auroc").write_text(json.dumps({"rows": [{"metric": "auroc", "value": 0.5}]}))
        runs.append(str(run))
    spec = tmp_path / "spec.json"
    experiment = Experiment(name="e", metrics=("auroc",))
    spec.write_text(json.dumps(AggregateSpec("e", "adult", "ryan", experiment, tuple(runs)).to_json()))
    fields = {"dataset": "adult", "method": "m", "epsilon": 1.0, "seed": 0}
    monkeypatch.setattr(tables, "read_spec", lambda run: SimpleNamespace(variant=Path(run).name, **fields))
    table = tables.aggregate(spec, tmp_path / "out.csv")
    assert table.loc[table["metric"] == "not_dp", "variant"].tolist() == ["ryan"]


def test_the_p3gm_pages_recorded_cell_carries_the_dagger():
    from dpvae.render.p3gm.shared import recorded_cell

    cells = pd.DataFrame([{"dataset": "mnist", "method": "ryan", "metric": "accuracy", "classifier": "cnn"}])
    cells = cells.assign(setting="", mean=0.2, sd=0.01, n=5, not_dp="public slice")
    assert recorded_cell(cells, "mnist-p3gm", "ryan", "accuracy", "cnn").endswith(f") {NOT_DP_MARK}")
    assert not recorded_cell(cells.assign(not_dp=""), "mnist-p3gm", "ryan", "accuracy", "cnn").endswith(NOT_DP_MARK)


@pytest.fixture(scope="module")
def mark_not_dp():
    spec = importlib.util.spec_from_file_location("mark_not_dp", REPO_ROOT / "benchmarks" / "mark_not_dp.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_migration_relabels_only_old_adult_rows_fills_the_ledgers_reason_and_is_idempotent(tmp_path, mark_not_dp):
    """An old-format file (no not_dp column): P3GM's Table VI Adult row of a commit from before the public domains
    becomes `adult-refcode` with the recomputed ledger's reason; the same row at this checkout's commit, another
    item's Adult row and a non-private row keep their dataset and an empty not_dp; a second run changes nothing;
    an old commit's row dated after the public domains is refused."""
    old = "bcd773e3093ba60b5dac4bfa332824085d99a3ce"  # recorded P3GM Adult rows on 26 Nov 2026, before 3fedd29
    head = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    head = head.stdout.strip()
    base = {"paper": "p3gm", "item": "table6", "dataset": "adult", "method": "p3gm", "epsilon": "1"}
    base |= {"metric": "auroc", "classifier": "mean4", "setting": "", "seed": "0", "value": "0.5", "scale": "paper"}
    base |= {"variant": "p3gm", "device": "cpu", "commit": old, "command": "x", "wall_s": "1", "date": "2026-11-26"}
    rows = [
        base,
        {**base, "commit": head, "date": "2026-12-01"},
        {**base, "item": "table3", "metric": "n_records"},
        {**base, "method": "original", "variant": "real", "epsilon": ""},
    ]
    folder = tmp_path / "reproductions"
    folder.mkdir()
    header = [c for c in COLUMNS if c != "not_dp"]
    pd.DataFrame(rows, columns=header).to_csv(folder / "p3gm.csv", index=False)
    assert mark_not_dp.main(["--reproductions", str(folder)]) == 0
    got = pd.read_csv(folder / "p3gm.csv", dtype=str, keep_default_na=False)
    assert tuple(got.columns) == COLUMNS
    assert got["dataset"].tolist() == ["adult-refcode", "adult", "adult", "adult-refcode"]
    assert NOT_DP_REFERENCE_CODE in got.loc[0, "not_dp"] and (got.loc[1:, "not_dp"] == "").all()
    assert mark_not_dp.main(["--reproductions", str(folder), "--check"]) == 0  # nothing left to change
    pd.DataFrame([{**base, "date": "2026-11-30"}], columns=header).to_csv(folder / "p3gm.csv", index=False)
    with pytest.raises(SystemExit, match="dated after"):
        mark_not_dp.main(["--reproductions", str(folder)])


def test_the_committed_reproductions_need_no_migration(mark_not_dp):
    assert mark_not_dp.main(["--check"]) == 0


def test_recompute_ledgers_finds_a_refcode_rows_run_by_its_id_else_by_its_published_data():
    """`benchmarks/recompute_ledgers.py --recorded` rebuilds a recorded row's run: an `adult-refcode` row is the
    `adult-refcode` run where the config has one, else (a config from before the -refcode ids) the `adult` run, which
    `as_prepared` plans on what it trained on; an `adult` row is never a -refcode run."""
    spec = importlib.util.spec_from_file_location(
        "recompute_ledgers", REPO_ROOT / "benchmarks" / "recompute_ledgers.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    from dpvae.schema import read_config

    config = read_config([REPO_ROOT / "config.yaml"])

    def found(dataset: str, datasets: list[str]) -> str | None:
        config["experiments"]["p3gm_tabular"]["datasets"] = datasets
        row = module.Recorded("p3gm", "table6", None, dataset, "", "p3gm", 1.0, "abc", ())
        run = module.find_run(config, row)
        return run.dataset if run else None

    assert found("adult-refcode", ["adult", "adult-refcode"]) == "adult-refcode"
    assert found("adult-refcode", ["adult"]) == "adult"
    assert found("adult", ["adult-refcode", "adult"]) == "adult"
    assert found("adult", ["adult-refcode"]) is None
