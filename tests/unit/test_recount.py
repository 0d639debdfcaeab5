"""An independent recount of the scorecard's headline (issue 63 Build 8).

`recount` restates the counting rules of the headline from their documentation (README.md's headline words,
workflow/resources/published/README.md, docs/operations.md's tolerances) and applies them to the CSVs alone —
pandas and scipy, no import of `dpvae.scorecard` (checked below) — so a slip in the scorecard's own code shows as a
disagreement with README.md's headline block, docs/status.md and what `python -m dpvae status` prints.
"""

from __future__ import annotations

import ast
import math
import re
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[2]
PUBLISHED = REPO / "workflow" / "resources" / "published"
PAPERS = ("privae", "lvae", "p3gm", "dp2vae")
CELL = ("paper", "item", "dataset", "method", "epsilon", "metric", "classifier", "setting")
# the verdict rule as documented (docs/operations.md): metric -> (absolute or relative, tolerance); others exact
TOLERANCE = {"auroc": ("abs", 0.03), "auprc": ("abs", 0.03), "tvd2": ("abs", 0.03), "accuracy": ("abs", 0.03)}
TOLERANCE |= {"fid": ("rel", 0.15), "epsilon": ("rel", 1e-3)}
# settings echoed back (P3GM Table IV's hyper-parameters, Table III's dataset statistics): not results
SETTINGS = {"sigma_s", "lr", "epochs", "batch_size", "n_records", "n_features", "n_classes", "pct_positive"}
REFCODE = "-refcode"  # a recorded dataset on the reference code's preprocessing stands for the published one


def _strings(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def _eps(text: str) -> float:
    return float(text) if text not in ("", "*") else math.nan


def _named(row: pd.Series, cell: pd.Series) -> bool:
    """Whether a blocked.csv / causes.csv row ('*' = any value) names a published cell."""
    for column in (*CELL, "source"):
        want = row[column]
        if want == "*":
            continue
        if column == "epsilon":
            have = _eps(cell["epsilon"])
            if (want == "" and not math.isnan(have)) or (want != "" and not math.isclose(have, float(want))):
                return False
        elif cell[column] != want:
            return False
    return True


def _interval(values: list[float]) -> tuple[float, float, float]:
    """mean and the 95 % t-interval of the mean (NaN bounds for one value)."""
    from scipy import stats

    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return mean, math.nan, math.nan
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = stats.t.ppf(0.975, n - 1) * sd / math.sqrt(n)
    return mean, mean - half, mean + half


def _within(metric: str, paper: float, low: float, high: float) -> bool:
    kind, tol = TOLERANCE.get(metric, ("rel", 0.0))
    bound = tol if kind == "abs" else tol * abs(paper)
    return not math.isnan(low) and paper - bound - 1e-12 <= low and high <= paper + bound + 1e-12


def _seeds(recorded: pd.DataFrame, cell: pd.Series) -> list[float]:
    """The recorded values of a published cell: its own dataset's rows, else those of its -refcode stand-in."""
    same = recorded[
        (recorded["paper"] == cell["paper"])
        & (recorded["item"] == cell["item"])
        & (recorded["method"] == cell["method"])
        & (recorded["metric"] == cell["metric"])
        & (recorded["classifier"] == cell["classifier"])
        & (recorded["setting"] == cell["setting"])
        & recorded["dataset"].isin([cell["dataset"], cell["dataset"] + REFCODE])
    ]
    eps = _eps(cell["epsilon"])
    at = same["epsilon"].map(lambda e: (math.isnan(eps) and e == "") or (e != "" and math.isclose(float(e), eps)))
    same = same[at.astype(bool)]
    own = same[same["dataset"] == cell["dataset"]]
    return [float(v) for v in (own if len(own) else same)["value"]]


def recount(published_dir: Path = PUBLISHED, reproductions_dir: Path = REPO / "reproductions") -> tuple[int, int, int]:
    """(within tolerance, reproduced, runnable) over distinct results, from the CSVs alone."""
    counted = recount_cells(published_dir, reproductions_dir)
    return tuple(int(sum(flags[i] for flags, _ in counted.values())) for i in range(3))


def recount_cells(published_dir: Path, reproductions_dir: Path) -> dict[tuple, tuple[tuple[bool, bool, bool], dict]]:
    """Each distinct result (key, source) -> ((within, reproduced, runnable), the published cell)."""
    published = pd.concat([_strings(published_dir / f"{p}.csv") for p in PAPERS], ignore_index=True)
    recorded = pd.concat([_strings(reproductions_dir / f"{p}.csv") for p in PAPERS], ignore_index=True)
    blocked, causes = _strings(published_dir / "blocked.csv"), _strings(published_dir / "causes.csv")
    cuts = causes[causes["cause"] == "compute-cut"]
    counted = {}
    results = [
        cell
        for _, cell in published.iterrows()
        if not (cell["cited_from"] or cell["metric"] in SETTINGS or any(_named(b, cell) for _, b in blocked.iterrows()))
    ]  # cited, a setting echoed, blocked: not a result
    ours = {_key(c) for c in results if c["source"] == "paper"}
    for cell in results:
        if cell["source"] != "paper" and _key(cell) in ours:
            continue  # a second reference's copy of a cell the paper prints: a duplicate, counted once
        values = _seeds(recorded, cell)
        cut = bool(values) and any(_named(c, cell) for _, c in cuts.iterrows())
        _, low, high = _interval(values) if values else (math.nan, math.nan, math.nan)
        reproduced = bool(values) and not cut
        within = reproduced and _within(cell["metric"], float(cell["value"]), low, high)
        counted[(*_key(cell), cell["source"])] = ((within, reproduced, True), dict(cell))
    return counted


def _key(cell: pd.Series) -> tuple:
    """A published cell's key, epsilon as a rounded number ('' for none)."""
    eps = _eps(cell["epsilon"])
    return (*(cell[c] for c in CELL if c != "epsilon"), "" if math.isnan(eps) else round(eps, 9))


HEADLINE = re.compile(r"(\d+) within tolerance / (\d+) reproduced / (\d+) runnable distinct results")


def _stated(text: str) -> tuple[int, int, int]:
    found = HEADLINE.search(text)
    assert found, "no headline 'k within tolerance / n reproduced / m runnable distinct results' found"
    return tuple(int(g) for g in found.groups())


def _agree(stated: str, counts: tuple[int, int, int]) -> None:
    assert _stated(stated) == counts, f"headline {_stated(stated)} but the recount gives {counts}"


@pytest.fixture(scope="module")
def counts() -> tuple[int, int, int]:
    return recount()


def test_the_recount_imports_no_scorecard():
    tree = ast.parse(Path(__file__).read_text())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not {m for m in imported if m.startswith("dpvae")}, imported


def test_readme_and_docs_status_state_the_recounted_headline(counts):
    readme = (REPO / "README.md").read_text()
    _agree(readme.split("<!-- headline:begin -->", 1)[1].split("<!-- headline:end -->", 1)[0], counts)
    _agree((REPO / "docs" / "status.md").read_text(), counts)


def test_python_m_dpvae_status_prints_the_recounted_headline(counts):
    import importlib

    status = importlib.import_module("dpvae.status")  # what `python -m dpvae status` prints first
    _agree(status.headline(), counts)


def test_a_planted_miscount_is_caught(counts, tmp_path):
    within, reproduced, runnable = counts
    with pytest.raises(AssertionError, match="headline"):
        _agree(
            f"{within + 1} within tolerance / {reproduced} reproduced / {runnable} runnable distinct results", counts
        )
    # and the recount moves with the data: the recorded seeds of one cell within tolerance pushed far off
    published, recorded = _copy(tmp_path)
    cell = next(c for (flags, c) in recount_cells(published, recorded).values() if flags[0])
    rows = _strings(recorded / f"{cell['paper']}.csv")
    picked = _rows_of(rows, cell)
    rows.loc[picked, "value"] = [str(float(v) * 3 + 10) for v in rows.loc[picked, "value"]]
    rows.to_csv(recorded / f"{cell['paper']}.csv", index=False)
    moved = recount(published, recorded)
    assert moved == (within - 1, reproduced, runnable), (cell, moved)
    with pytest.raises(AssertionError, match="headline"):
        _agree((REPO / "docs" / "status.md").read_text(), moved)


def _copy(tmp_path: Path) -> tuple[Path, Path]:
    import shutil

    published, recorded = tmp_path / "published", tmp_path / "reproductions"
    shutil.copytree(PUBLISHED, published)
    recorded.mkdir()
    for paper in PAPERS:
        shutil.copy(REPO / "reproductions" / f"{paper}.csv", recorded / f"{paper}.csv")
    return published, recorded


def _rows_of(rows: pd.DataFrame, cell: dict) -> pd.Series:
    """The recorded rows a published cell is judged on (`_seeds`' selection) as a mask."""
    values = _seeds(rows.assign(value=[str(i) for i in range(len(rows))]), pd.Series(cell))
    return rows.index.isin([int(float(v)) for v in values])
