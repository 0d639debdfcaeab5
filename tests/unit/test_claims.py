"""The papers' claims as data (workflow/resources/published/claims.csv) and their tests over recorded rows."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from dpvae.claims import (
    COLUMNS,
    CONTRADICTED,
    KINDS,
    SUPPORTED,
    UNDECIDED,
    UNTESTED,
    VERDICTS,
    figure_only_items,
    judge,
    judge_all,
    load_claims,
    summary_line,
    write_claims,
)
from dpvae.reproductions import COLUMNS as ROW_COLUMNS

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
PAPERS_DIR = SHARED / "papers"
PAPER_TEXTS = {
    "privae": "privae-termwise-dpsgd.txt",
    "lvae": "lvae-lipschitz.txt",
    "p3gm": "p3gm.txt",
    "dp2vae": "dp2vae.txt",
}


def _claim(tmp_path: Path, **fields) -> object:
    """One claim, through a claims.csv of one row (so every test also loads and validates it)."""
    row = {c: "" for c in COLUMNS} | {"id": "t", "paper": "p3gm", "item": "table7", "place": "here", "quote": "q"}
    row |= {"dataset": "mnist", "metric": "accuracy"} | fields
    path = tmp_path / "claims.csv"
    pd.DataFrame([row], columns=list(COLUMNS)).to_csv(path, index=False)
    return load_claims(path)[0]


def _rows(cells: list[tuple]) -> pd.DataFrame:
    """Recorded rows: (method, epsilon, setting, values) -> one row per value (seed), item table7, mnist accuracy."""
    rows = []
    for method, epsilon, setting, values in cells:
        for seed, value in enumerate(values):
            rows.append(
                {c: "" for c in ROW_COLUMNS}
                | {"paper": "p3gm", "item": "table7", "dataset": "mnist", "method": method, "epsilon": epsilon}
                | {"metric": "accuracy", "setting": setting, "seed": seed, "value": value}
            )
    frame = pd.DataFrame(rows, columns=list(ROW_COLUMNS))
    frame["epsilon"] = pd.to_numeric(frame["epsilon"], errors="coerce")
    return frame


# ---------------------------------------------------------------------------------------------- the recorded claims


def test_claims_csv_loads_with_a_registered_kind_and_a_unique_id_per_row():
    claims = load_claims()
    assert len({c.id for c in claims}) == len(claims) > 0
    assert {c.kind for c in claims} <= set(KINDS)
    assert {c.paper for c in claims} == {"privae", "lvae", "p3gm", "dp2vae"}


def test_every_figure_only_item_has_a_claim_row():
    """Items that run an experiment and publish no number are judged only through their claims; DP²-VAE Fig. 5's
    "pre-training helps" is one too (its numbers are in the caption)."""
    items = figure_only_items()
    assert "lvae/fig1" in items and "dp2vae/fig9" in items and "p3gm/table7" not in items  # table7 has numbers
    claimed = {f"{c.paper}/{c.item}" for c in load_claims()}
    assert set(items) | {"dp2vae/fig5"} <= claimed, sorted(set(items) - claimed)


def test_every_claim_is_judged_over_the_recorded_rows_and_an_untested_one_says_what_it_needs():
    table = judge_all()
    assert set(table["verdict"]) <= set(VERDICTS)
    untested = table[table["verdict"] == UNTESTED]
    assert (untested["needs"] != "").all(), list(untested.loc[untested["needs"] == "", "id"])
    # an untested verdict is a test that found no recorded row (or a claim no row can test), never a failed test
    for claim, (_, judged) in zip(load_claims(), table.iterrows()):
        if judged["verdict"] == UNTESTED and claim.kind != "untested":
            assert "no recorded rows of" in judged["evidence"], claim.id
        assert claim.kind != "untested" or judged["verdict"] == UNTESTED


@pytest.mark.skipif(not PAPERS_DIR.is_dir(), reason="paper texts (../shared/papers) absent")
def test_every_quote_is_the_papers_own_words():
    texts = {p: " ".join((PAPERS_DIR / name).read_text(encoding="utf-8").split()) for p, name in PAPER_TEXTS.items()}
    for claim in load_claims():
        assert " ".join(claim.quote.split()) in texts[claim.paper], claim.id


def test_the_pdf_lists_every_claim_and_the_summary_and_is_reproducible(tmp_path):
    from pypdf import PdfReader

    table = judge_all()
    write_claims(table, tmp_path / "claims.pdf")
    text = " ".join(" ".join(page.extract_text() for page in PdfReader(tmp_path / "claims.pdf").pages).split())
    assert summary_line(table) in text
    assert all(claim_id in text for claim_id in table["id"])
    assert pd.read_csv(tmp_path / "claims.csv", keep_default_na=False)["verdict"].tolist() == table["verdict"].tolist()
    write_claims(table, tmp_path / "again.pdf")
    assert (tmp_path / "again.pdf").read_bytes() == (tmp_path / "claims.pdf").read_bytes()


def test_the_scorecard_pdf_carries_the_claims_in_one_line(tmp_path):
    from pypdf import PdfReader

    from dpvae.scorecard import claims_line, scorecard, write_scorecard

    card = scorecard(paper="lvae")
    write_scorecard(card, tmp_path / "card.pdf")
    first = " ".join(PdfReader(tmp_path / "card.pdf").pages[0].extract_text().split())
    line = claims_line()
    assert line.startswith("claims: ") and line in first


# --------------------------------------------------------------------------------------------------------- the kinds


def test_order_is_supported_only_beyond_the_seed_noise(tmp_path):
    claim = _claim(tmp_path, kind="order", methods="p3gm dp-gm", epsilon="1", direction="higher")
    apart = _rows([("p3gm", 1, "", [0.80, 0.81, 0.79]), ("dp-gm", 1, "", [0.40, 0.42, 0.41])])
    assert judge(claim, apart).verdict == SUPPORTED
    reversed_ = _rows([("p3gm", 1, "", [0.40, 0.42, 0.41]), ("dp-gm", 1, "", [0.80, 0.81, 0.79])])
    assert judge(claim, reversed_).verdict == CONTRADICTED
    noisy = _rows([("p3gm", 1, "", [0.80, 0.40, 0.60]), ("dp-gm", 1, "", [0.70, 0.30, 0.55])])
    assert judge(claim, noisy).verdict == UNDECIDED  # ahead on the mean, within the noise
    one_seed = _rows([("p3gm", 1, "", [0.80]), ("dp-gm", 1, "", [0.40, 0.42, 0.41])])
    assert judge(claim, one_seed).verdict == UNDECIDED  # no interval
    assert judge(claim, _rows([("p3gm", 1, "", [0.8, 0.8])])).verdict == UNTESTED
    assert judge(claim, apart).evidence.startswith("mnist eps=1: p3gm - dp-gm = +0.39 [")


def test_top_needs_the_first_to_beat_every_other_and_a_non_private_method_stands_at_every_epsilon(tmp_path):
    claim = _claim(tmp_path, kind="top", methods="vae p3gm dp-gm", epsilon="1 10", direction="higher")
    rows = _rows([("vae", "", "", [0.9, 0.91]), ("p3gm", 1, "", [0.8, 0.81]), ("dp-gm", 1, "", [0.4, 0.41])])
    rows = pd.concat([rows, _rows([("p3gm", 10, "", [0.85, 0.86]), ("dp-gm", 10, "", [0.5, 0.51])])])
    assert judge(claim, rows).verdict == SUPPORTED
    rows.loc[(rows["method"] == "dp-gm") & (rows["epsilon"] == 10), "value"] = [0.95, 0.96]  # beats vae at 10
    assert judge(claim, rows).verdict == CONTRADICTED


def test_a_trend_reverses_significantly_nowhere(tmp_path):
    claim = _claim(tmp_path, kind="trend", methods="p3gm", axis="epsilon", direction="increasing")
    rising = _rows([("p3gm", e, "", [v, v + 0.01, v - 0.01]) for e, v in ((0.2, 0.3), (1, 0.5), (10, 0.8))])
    assert judge(claim, rising).verdict == SUPPORTED
    dip = _rows([("p3gm", e, "", [v, v + 0.01, v - 0.01]) for e, v in ((0.2, 0.3), (1, 0.9), (10, 0.8))])
    assert judge(claim, dip).verdict == CONTRADICTED  # up overall, but 1 -> 10 falls beyond the noise
    assert "against: 1->10" in judge(claim, dip).evidence


def test_a_peak_beats_every_point_outside_its_range_along_a_setting(tmp_path):
    claim = _claim(tmp_path, kind="peak", methods="p3gm", axis="d_p", direction="higher", value="10 100")
    values = {2: 0.5, 10: 0.8, 30: 0.85, 100: 0.8, 500: 0.2}
    rows = _rows([("p3gm", 1, f"d_p={d}", [v, v + 0.01, v - 0.01]) for d, v in values.items()])
    assert judge(claim, rows).verdict == SUPPORTED
    assert "best inside 30" in judge(claim, rows).evidence
    rows.loc[rows["setting"] == "d_p=2", "value"] = [0.95, 0.96, 0.94]
    assert judge(claim, rows).verdict == CONTRADICTED


def test_flat_near_above_and_below_against_their_band(tmp_path):
    flat = _claim(tmp_path, kind="flat", methods="p3gm", axis="d", tolerance="0.03")
    level = _rows([("p3gm", 1, f"d={d}", [0.9, 0.901, 0.899]) for d in (5, 100)])
    assert judge(flat, level).verdict == SUPPORTED
    level.loc[level["setting"] == "d=100", "value"] = [0.7, 0.701, 0.699]
    assert judge(flat, level).verdict == CONTRADICTED
    near = _claim(tmp_path, kind="near", methods="p3gm", value="0.5", tolerance="0.02")
    assert judge(near, _rows([("p3gm", 1, "", [0.50, 0.505, 0.495])])).verdict == SUPPORTED
    assert judge(near, _rows([("p3gm", 1, "", [0.60, 0.605, 0.595])])).verdict == CONTRADICTED
    assert judge(near, _rows([("p3gm", 1, "", [0.45, 0.55, 0.5])])).verdict == UNDECIDED
    above = _claim(tmp_path, kind="above", methods="p3gm", value="0.5")
    below = _claim(tmp_path, kind="below", methods="p3gm", value="0.5")
    zeros = _rows([("p3gm", 1, "", [0.0, 0.0, 0.0])])
    assert (judge(above, zeros).verdict, judge(below, zeros).verdict) == (CONTRADICTED, SUPPORTED)


def test_competitive_allows_the_first_to_trail_by_less_than_the_tolerance(tmp_path):
    claim = _claim(tmp_path, kind="competitive", methods="p3gm dp-gm", direction="higher", tolerance="0.03")
    trails = _rows([("p3gm", 1, "", [0.79, 0.795, 0.80]), ("dp-gm", 1, "", [0.80, 0.805, 0.81])])
    assert judge(claim, trails).verdict == SUPPORTED
    behind = _rows([("p3gm", 1, "", [0.69, 0.695, 0.70]), ("dp-gm", 1, "", [0.80, 0.805, 0.81])])
    assert judge(claim, behind).verdict == CONTRADICTED
    fid = _claim(tmp_path, kind="competitive", methods="p3gm dp-gm", direction="lower", tolerance="5", metric="fid")
    fid_rows = _rows([("p3gm", 1, "", [52, 53, 54]), ("dp-gm", 1, "", [50, 51, 52])]).assign(metric="fid")
    assert judge(fid, fid_rows).verdict == SUPPORTED  # 2 above, within 5


def test_methods_carry_settings_a_step_is_the_last_recorded_and_a_run_under_two_items_counts_once(tmp_path):
    claim = _claim(
        tmp_path,
        kind="order",
        methods="p3gm@pretrain=true p3gm@pretrain=false",
        setting="step=last",
        direction="higher",
        rows="table7 fig2",
    )
    rows = _rows(
        [
            ("p3gm", 1, "pretrain=true;step=1", [0.1, 0.11]),
            ("p3gm", 1, "pretrain=false;step=1", [0.5, 0.51]),
            ("p3gm", 1, "pretrain=true;step=10", [0.9, 0.91]),
            ("p3gm", 1, "pretrain=false;step=10", [0.6, 0.61]),
        ]
    )
    assert judge(claim, rows).verdict == SUPPORTED  # at step 10, not step 1
    twice = pd.concat([rows, rows.assign(item="fig2")])
    assert "(n 2/2)" in judge(claim, twice).evidence


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"kind": "ranking"}, "kind 'ranking' is not one of"),
        ({"kind": "untested"}, "kind untested needs needs"),
        ({"kind": "order", "methods": "p3gm dp-gm"}, "kind order needs direction"),
        ({"kind": "peak", "methods": "p3gm", "axis": "d", "direction": "higher", "value": "10"}, "peak needs value"),
        ({"kind": "untested", "needs": "GPU", "item": "fig12"}, "not an item of p3gm"),
        ({"kind": "order", "methods": "a b", "direction": "up"}, "direction 'up' is not one of"),
    ],
)
def test_a_bad_claim_row_is_refused_naming_its_row(tmp_path, fields, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        _claim(tmp_path, **fields)


def test_a_duplicate_claim_id_is_refused(tmp_path):
    row = {c: "" for c in COLUMNS} | {"id": "x", "paper": "lvae", "item": "fig1", "place": "p", "quote": "q"}
    row |= {"kind": "untested", "needs": "GPU"}
    path = tmp_path / "claims.csv"
    pd.DataFrame([row, row], columns=list(COLUMNS)).to_csv(path, index=False)
    with pytest.raises(ValueError, match="id 'x' is used twice"):
        load_claims(path)


def test_every_claim_the_docs_link_is_a_row_of_claims_csv():
    docs = Path(__file__).resolve().parents[2] / "docs"
    ids = {c.id for c in load_claims()}
    link = re.compile(r"\[`([a-z0-9]+\.[a-z0-9]+\.[\w-]+)`\]\([./]*workflow/resources/published/claims\.csv\)")
    pages = ("privae.md", "lvae.md", "p3gm.md", "dp2vae.md")
    linked = {found for page in pages for found in link.findall((docs / page).read_text(encoding="utf-8"))}
    assert linked and linked <= ids, sorted(linked - ids)
