"""The scorecard: every published cell beside the recorded reproductions, with a verdict.

Ours = mean ± sd over the seeds recorded in `reproductions/<paper>.csv` (`dpvae.reproductions`); the
verdict follows stated tolerances (`TOLERANCES`); cells a paper only cites are marked, not judged. Items
that publish no number (figures only) list their recorded cells too, each series at its last step, with
no verdict. A cell outside tolerance gets a cause: `seed-noise` where the miss lies within `SEED_NOISE_SE`
standard errors of the tolerance edge (derived here), else the row of `workflow/resources/published/causes.csv`
that names it, with its evidence in docs/ (`cause_problems` lists the misses without one).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from dpvae.files import atomic_write
from dpvae.render.published import (
    SEED_NOISE,
    WILDCARD,
    cause_matches,
    evidence_resolves,
    load_causes,
    load_published,
)
from dpvae.reproductions import COLUMNS, KEY, NOT_DP_MARK, cell_dataset, not_dp_notes, not_dp_reasons, read_all
from dpvae.seeds import SeedStats

# metric -> ("abs" | "rel", tolerance): the verdict rule (docs/operations.md, "Recorded reproductions …").
TOLERANCES: dict[str, tuple[str, float]] = {
    "auroc": ("abs", 0.03),
    "auprc": ("abs", 0.03),
    "tvd2": ("abs", 0.03),
    "accuracy": ("abs", 0.03),
    "fid": ("rel", 0.15),
    "epsilon": ("rel", 1e-3),
}
DEFAULT_TOLERANCE = ("rel", 0.0)  # counts, hyper-parameters, dataset statistics: exact
NO_PUBLISHED_NUMBER = "no published number"  # the verdict of a recorded cell of a figure-only item
OUTSIDE = "outside tolerance"
# A miss is `seed-noise` when |ours - paper| exceeds the tolerance by at most this many standard errors of our
# mean (sd / sqrt(n), n >= 2 seeds): more seeds could still put it inside.
SEED_NOISE_SE = 2.0


def _bound(metric: str, paper_value: float) -> float:
    """The largest |ours - paper| within tolerance."""
    kind, tol = TOLERANCES.get(metric, DEFAULT_TOLERANCE)
    return tol if kind == "abs" else tol * abs(paper_value)


def _verdict(metric: str, paper_value: float, mean: float, n: int, cited: bool) -> tuple[float, str]:
    if cited:
        return np.nan, "cited (not run)"
    if n == 0:
        return np.nan, "not reproduced"
    diff = mean - paper_value
    return diff, ("within tolerance" if abs(diff) <= _bound(metric, paper_value) + 1e-12 else OUTSIDE)


def scorecard(paper: str | None = None, reproductions_dir: str | Path | None = None) -> pd.DataFrame:
    """Every published numeric cell (of one paper or all four) with ours, a verdict and, outside tolerance, a cause
    and its evidence."""
    published = load_published(paper)
    every_paper = load_published() if paper else published
    ours = read_all(reproductions_dir, paper)
    groups = {}
    if len(ours):
        cells = ours.assign(cell=ours["dataset"].map(cell_dataset))
        for key, rows in cells.groupby(["paper", "item", "cell", "method", "metric", "classifier", "setting"]):
            groups.setdefault(key, []).append(rows)
    lines = []
    for _, cell in published.iterrows():
        key = (
            cell["paper"],
            cell["item"],
            cell["dataset"],
            cell["method"],
            cell["metric"],
            cell["classifier"],
            cell["setting"],
        )
        candidates = pd.concat(groups.get(key, [pd.DataFrame(columns=list(COLUMNS))]), ignore_index=True)
        eps = cell["epsilon"]
        match = (
            candidates[np.isclose(candidates["epsilon"].astype(float), eps)]
            if not math.isnan(eps)
            else candidates[candidates["epsilon"].isna()]
        )
        ours_cell = _ours(_preferred(match, cell["dataset"]))
        diff, verdict = _verdict(
            cell["metric"], float(cell["value"]), ours_cell["ours_mean"], ours_cell["n"], bool(cell["cited_from"])
        )
        lines.append(
            {
                **{k: cell[k] for k in KEY},
                "source": cell["source"],
                "paper_value": cell["value"],
                **ours_cell,
                "difference": diff,
                "verdict": verdict,
            }
        )
    card = pd.concat([pd.DataFrame(lines), _figure_only(published, ours)], ignore_index=True)
    card["cause"], card["evidence"] = "", ""
    noise = _seed_noise(card)
    card.loc[noise.index, "cause"], card.loc[noise.index, "evidence"] = SEED_NOISE, noise
    for _, row in load_causes(every_paper).iterrows():
        named = _written(card) & cause_matches(row, card)
        card.loc[named, "cause"], card.loc[named, "evidence"] = row["cause"], row["evidence"]
    columns = [*KEY, "source", "paper_value", "ours_mean", "ours_sd", "n", "not_dp", "difference", "verdict", "cause"]
    return card[[*columns, "evidence", "devices"]]


def _preferred(rows: pd.DataFrame, dataset: str) -> pd.DataFrame:
    """The recorded rows a published cell of `dataset` is judged on: those on the published data's own dataset id
    where there are any, else those of another preprocessing of it (`adult-refcode`: P3GM's reference code's, not
    DP), which stand in, marked, until the cell is recorded on the public domain."""
    own = rows[rows["dataset"] == dataset]
    return own if len(own) else rows


def _seed_noise(card: pd.DataFrame) -> pd.Series:
    """Evidence text of the misses within `SEED_NOISE_SE` standard errors of the tolerance edge (their index)."""
    miss = card[card["verdict"] == OUTSIDE]
    excess = miss["difference"].abs() - [_bound(m, v) for m, v in zip(miss["metric"], miss["paper_value"])]
    reach = SEED_NOISE_SE * miss["ours_sd"] / np.sqrt(miss["n"])
    noise = (miss["n"] > 1) & (excess <= reach)
    return pd.Series(
        [
            f"|ours - paper| is {e:.3g} beyond the tolerance, within {SEED_NOISE_SE:g} sd/sqrt(n) = {r:.3g} (n = {n})"
            for e, r, n in zip(excess[noise], reach[noise], miss["n"][noise])
        ],
        index=miss.index[noise],
        dtype=object,
    )


def _written(card: pd.DataFrame) -> np.ndarray:
    """The misses a written cause explains: outside tolerance and not seed noise."""
    return ((card["verdict"] == OUTSIDE) & (card["cause"] != SEED_NOISE)).to_numpy()


def cause_problems(card: pd.DataFrame) -> list[str]:
    """What keeps every miss of `card` explained: misses with no cause, rows of causes.csv whose evidence names no
    heading in docs/, and rows (of the card's papers) that name no miss beyond seed noise (stale). Empty = every
    miss has exactly its cause."""
    problems = [
        f"no cause for the miss {dict(cell[[*KEY, 'source']])}: add a row to causes.csv (cause 'open' if unexplained)"
        for _, cell in card[_written(card) & (card["cause"] == "")].iterrows()
    ]
    for index, row in load_causes(load_published()).iterrows():
        where = f"causes.csv row {index + 1} (line {index + 2})"
        if not evidence_resolves(row["evidence"]):
            problems.append(f"{where}: evidence {row['evidence']!r} names no heading of a file in docs/")
        if row["paper"] in {*card["paper"], WILDCARD} and not (_written(card) & cause_matches(row, card)).any():
            problems.append(f"{where} names no miss beyond seed noise: {dict(row.drop('cells'))}")
    return problems


def cause_counts(card: pd.DataFrame) -> dict[str, int]:
    """Misses per cause ('' = none yet), most frequent first, then by name."""
    counts = card.loc[card["verdict"] == OUTSIDE, "cause"].value_counts()
    return dict(sorted(counts.items(), key=lambda pair: (-pair[1], pair[0])))


def _misses(counts: dict[str, int]) -> str:
    """'; misses: 3 open, 1 seed-noise' ('' without misses)."""
    listed = ", ".join(f"{n} {cause or 'no cause'}" for cause, n in counts.items())
    return f"; misses: {listed}" if listed else ""


def _ours(rows: pd.DataFrame) -> dict:
    """Mean, sd (n > 1), seed count, devices and `not_dp` reasons of the recorded rows of one cell."""
    stats = SeedStats.of(rows["value"].astype(float))
    return {
        "ours_mean": stats.mean,
        "ours_sd": stats.sd,
        "n": stats.n,
        "not_dp": not_dp_reasons(rows["not_dp"]) if stats.n else "",
        "devices": ";".join(sorted(set(rows["device"].dropna().astype(str)))) if stats.n else "",
    }


def _last_steps(rows: pd.DataFrame) -> pd.DataFrame:
    """A series (setting 'step=N') by its last recorded step only; other rows unchanged."""
    step = pd.to_numeric(rows["setting"].astype(str).str.extract(r"^step=(\d+)$")[0], errors="coerce")
    series = step.notna()
    if not series.any():
        return rows
    group = [c for c in KEY if c != "setting"]
    last = step[series].groupby([rows.loc[series, c].fillna("") for c in group]).transform("max")
    return pd.concat([rows[~series], rows[series][step[series] == last]])


def _figure_only(published: pd.DataFrame, ours: pd.DataFrame) -> pd.DataFrame:
    """Recorded cells of items that publish no number (figures read off by eye): ours, with no verdict."""
    if ours.empty:
        return pd.DataFrame()
    with_numbers = set(zip(published["paper"], published["item"]))
    rows = _last_steps(ours[[(p, i) not in with_numbers for p, i in zip(ours["paper"], ours["item"])]])
    lines = []
    for key, cell in rows.groupby(list(KEY), dropna=False, sort=True):
        lines.append(
            {
                **dict(zip(KEY, key)),
                "source": "ours only",
                "paper_value": np.nan,
                **_ours(cell),
                "difference": np.nan,
                "verdict": NO_PUBLISHED_NUMBER,
            }
        )
    return pd.DataFrame(lines)


def item_summary(card: pd.DataFrame) -> dict[str, str]:
    """'<paper>/<item>' -> 'k/n within tolerance' (n = published cells that are not only cited), then its misses
    per cause."""
    summary = {}
    for (paper, item), rows in card.groupby(["paper", "item"]):
        figure_only = rows["verdict"] == NO_PUBLISHED_NUMBER
        if figure_only.all():
            summary[f"{paper}/{item}"] = (
                f"no published numbers; {len(rows)} cell{'s' * (len(rows) != 1)} recorded" + _not_dp(rows)
            )
            continue
        within, done, runnable = fidelity(rows)
        if runnable:
            summary[f"{paper}/{item}"] = (
                (f"{within}/{runnable} within tolerance" if done else f"0/{runnable} reproduced")
                + _misses(cause_counts(rows))
                + _not_dp(rows)
            )
    return summary


def _not_dp(card: pd.DataFrame) -> str:
    """'; 3 cells not DP †' where recorded cells of `card` have a `not_dp` reason (`not_dp_notes` gives them)."""
    n = int((card["not_dp"].fillna("") != "").sum())
    return f"; {n} cell{'s' * (n != 1)} not DP {NOT_DP_MARK}" if n else ""


def fidelity(card: pd.DataFrame) -> tuple[int, int, int]:
    """(within tolerance, reproduced, runnable) cells of `card`; runnable = published, not only cited."""
    runnable = card[~card["verdict"].isin(["cited (not run)", NO_PUBLISHED_NUMBER])]
    done = runnable["verdict"] != "not reproduced"
    return int((runnable["verdict"] == "within tolerance").sum()), int(done.sum()), len(runnable)


def summary_line(card: pd.DataFrame) -> str:
    """The whole card in one line: fidelity, then misses per cause."""
    within, done, runnable = fidelity(card)
    return (
        f"{within} within tolerance / {done} reproduced / {runnable} runnable{_misses(cause_counts(card))}"
        + _not_dp(card)
    )


def write_scorecard(card: pd.DataFrame, out: str | Path) -> None:
    """`out` = <prefix>.csv or <prefix>.pdf: writes both. The PDF: per paper, pages listing its published cells
    (with the tally and the tolerances), then pages listing its figure-only cells; each page is one monospace
    text block, so hundreds of rows stay cheap (a drawn table took ~2 s a page)."""
    prefix = Path(out).with_suffix("")
    atomic_write(f"{prefix}.csv", lambda tmp: card.to_csv(tmp, index=False, float_format="%.6g"))
    from matplotlib.backends.backend_pdf import PdfPages

    from dpvae.render.output import pyplot

    shown = card.assign(
        ours=[
            ("" if n == 0 else f"{m:.4g}" + ("" if np.isnan(s) else f" +- {s:.2g}") + f" (n={n})")
            + (f" {NOT_DP_MARK}" if why else "")
            for m, s, n, why in zip(card["ours_mean"], card["ours_sd"], card["n"], card["not_dp"].fillna(""))
        ],
        paper_value=[_number(v, 6) for v in card["paper_value"]],
        epsilon=[_number(v, 4) for v in card["epsilon"]],
    )
    notes = (
        f"Cause of a miss: seed-noise = within {SEED_NOISE_SE:g} standard errors of the tolerance edge; the others "
        "are defined in workflow/resources/published/README.md, with their evidence in docs/ (the CSV's evidence "
        "column). Tolerances: AUROC/AUPRC/TVD/accuracy +-0.03 absolute, FID +-15 % relative, epsilon exact (1e-3), "
        "counts and settings exact."
    )

    def write(tmp: str) -> None:
        with PdfPages(tmp, metadata={"CreationDate": None}) as pdf, pyplot().rc_context({"pdf.use14corefonts": True}):
            for paper, rows in shown.groupby("paper", sort=False):
                figure_only = rows["verdict"] == NO_PUBLISHED_NUMBER
                published = rows[~figure_only]
                counts = published["verdict"].value_counts().to_dict()
                tally = ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())) + _misses(cause_counts(published))
                _listing_pages(
                    pdf,
                    f"Scorecard - {paper}: published cells; {tally}",
                    published[_PUBLISHED_COLUMNS],
                    notes,
                    not_dp_notes(published["not_dp"]),
                )
                _listing_pages(
                    pdf,
                    f"Scorecard - {paper}: recorded cells of items that publish no number (figures); mean +- sd "
                    "(n seeds), no verdict",
                    rows[figure_only][[*_CELL_COLUMNS, "ours"]],
                    footnotes=not_dp_notes(rows.loc[figure_only, "not_dp"]),
                )

    atomic_write(f"{prefix}.pdf", write)


_CELL_COLUMNS = ["item", "dataset", "method", "epsilon", "metric", "classifier", "setting"]
_PUBLISHED_COLUMNS = [*_CELL_COLUMNS, "source", "paper_value", "ours", "verdict", "cause"]
_CHAR_INCHES = 6.5 * 0.6 / 72  # one character of the 6.5 pt monospace listing


def _number(value: float, digits: int) -> str:
    return "" if pd.isna(value) else f"{value:.{digits}g}"


def _listing_pages(
    pdf, title: str, rows: pd.DataFrame, notes: str = "", footnotes: list[str] = (), per_page: int = 80
) -> None:
    """Monospace pages listing `rows`, `per_page` to a page, under the title (rows a-b of n) and the notes; the
    `footnotes` (the reasons behind a dagger) under the rows of every page."""
    import textwrap

    from dpvae.render.output import pyplot

    if rows.empty:
        return
    lines = rows.fillna("").to_string(index=False).splitlines()
    header, body = lines[0], lines[1:]
    width = max(8.0, _CHAR_INCHES * len(header) + 0.4)
    columns = int((width - 0.4) / _CHAR_INCHES)
    for start in range(0, len(body), per_page):
        page = body[start : start + per_page]
        heading = f"{title} (rows {start + 1}-{start + len(page)} of {len(body)})"
        below = [line for note in footnotes for line in textwrap.wrap(note, columns)]
        listing = [*textwrap.wrap(heading, columns), *textwrap.wrap(notes, columns), "", header, *page]
        listing += ["", *below] if below else []
        text = "\n".join(listing).encode("cp1252", "replace").decode("cp1252")  # the core Courier font: WinAnsi
        fig = pyplot().figure(figsize=(width, 0.11 * (text.count("\n") + 1) + 0.4))
        fig.text(
            0.2 / width,
            1 - 0.2 / fig.get_figheight(),
            text,
            family="monospace",
            weight="medium",
            fontsize=6.5,
            va="top",
        )
        pdf.savefig(fig)
        pyplot().close(fig)
