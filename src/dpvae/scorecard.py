"""The scorecard: every published cell beside the recorded reproductions, with a verdict, counted once.

Ours = mean, sd and a 95 % t-interval over the seeds recorded in `reproductions/<paper>.csv` (`dpvae.reproductions`).
The verdict is three-way against the paper's value ± the stated tolerance (`TOLERANCES`): *within tolerance* where the
whole interval lies inside that band, *outside tolerance* where it lies wholly outside, *undecided* otherwise; one seed
has no interval, so a result of one seed is undecided. Settings echoed (a configuration or a count, not a random
quantity: `SETTING_METRICS`) are compared as points.

Each cell has a role (`ROLES`, column `counted`): a *result* (a metric of a method on data, judged), a *setting*
echoed (hyper-parameters, dataset statistics: checked, not counted as a reproduction), *blocked* (no run here can fill
it: `workflow/resources/published/blocked.csv` says why), a *duplicate* (the same cell against a second reference,
e.g. the reference code's or DPImageBench's: shown, counted once under the paper's), *cut* (a result whose runs are
under a named compute cut: causes.csv `compute-cut`; not a reproduction), *cited* (a paper's copy of another paper's
number) or *figure* (an item that publishes no number: ours listed, no verdict). The headline (`fidelity`) counts
distinct results only: within tolerance / reproduced / runnable (results and cut cells).

Every cell is run `SEEDS_PLANNED` times, fixed before any seed runs (issue 63 Build 2); a cell with fewer says
"n=k of 5". A cell outside tolerance gets the row of `workflow/resources/published/causes.csv` that names it, with its
evidence in docs/ (`cause_problems` lists the misses without one); an undecided cell may have one too. A cause is
tested by the studies its row names (`study`: reproductions/studies/<name>.csv once recorded, an experiment of
`STUDIES_OVERLAY` while queued; issue 63 Build 4): a result whose row names none, or one that exists neither way
(`cause_problems` flags it), has the cause `unexplained` on the card -- asserted in docs, not tested by a run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from dpvae.files import atomic_write
from dpvae.paths import CLAIMS, OVERLAYS, REPO_ROOT
from dpvae.render.published import (
    WILDCARD,
    cause_matches,
    evidence_resolves,
    load_blocked,
    load_causes,
    load_published,
)
from dpvae.reproductions import (
    COLUMNS,
    KEY,
    NOT_DP_MARK,
    REPRODUCTIONS_DIR,
    cell_dataset,
    not_dp_notes,
    not_dp_reasons,
    read_all,
)
from dpvae.seeds import CONFIDENCE, SeedStats

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
#: the published metrics that echo a setting (hyper-parameters: P3GM Table IV) or a dataset statistic (Table III)
SETTING_METRICS = frozenset(
    {"sigma_s", "lr", "epochs", "batch_size", "n_records", "n_features", "n_classes", "pct_positive"}
)
SEEDS_PLANNED = 5  # the pre-registered seeds of every judged result (issue 63 Build 2; "n=k of 5" where fewer)

WITHIN, OUTSIDE, UNDECIDED = "within tolerance", "outside tolerance", "undecided"
NOT_REPRODUCED, CITED = "not reproduced", "cited (not run)"
NO_PUBLISHED_NUMBER = "no published number"  # the verdict of a recorded cell of a figure-only item
#: a cell's role (column `counted`; the module docstring): the headline counts results, and cut cells as runnable
ROLES = ("result", "cut", "setting", "blocked", "duplicate", "cited", "figure")
COMPUTE_CUT = "compute-cut"  # the causes.csv cause that names a result's runs as cut
#: a result's cause whose causes.csv row names no study that exists (recorded or queued): asserted, not tested
UNEXPLAINED = "unexplained"
RECORDED, QUEUED, MISSING = "recorded", "queued", "no such study"  # a named study's state (`study_states`)
STUDIES_OVERLAY = REPO_ROOT / OVERLAYS / "studies.yaml"  # the studies of the asserted causes (issue 63 Build 4)


def _bound(metric: str, paper_value: float) -> float:
    """The largest |ours - paper| within tolerance."""
    kind, tol = TOLERANCES.get(metric, DEFAULT_TOLERANCE)
    return tol if kind == "abs" else tol * abs(paper_value)


def interval(mean: float, sd: float, n: int) -> tuple[float, float]:
    """The `CONFIDENCE` t-interval of a mean of `n` seeds with sample sd `sd` (`SeedStats.interval`); NaN for
    fewer than two seeds (no interval)."""
    return SeedStats(mean, sd, n).interval(CONFIDENCE)


def verdict(metric: str, paper_value: float, low: float, high: float) -> str:
    """Three-way: the interval [low, high] wholly inside paper ± tolerance, wholly outside it, or neither (also
    where there is no interval: NaN)."""
    if math.isnan(low) or math.isnan(high):
        return UNDECIDED
    bound, eps = _bound(metric, paper_value), 1e-12
    if paper_value - bound - eps <= low and high <= paper_value + bound + eps:
        return WITHIN
    if high < paper_value - bound - eps or low > paper_value + bound + eps:
        return OUTSIDE
    return UNDECIDED


def _judged(metric: str, paper_value: float, ours: dict) -> dict:
    """difference, interval and verdict of one published cell with recorded rows (`_ours`)."""
    mean, n = ours["ours_mean"], ours["n"]
    if n == 0:
        return {"difference": np.nan, "ci_low": np.nan, "ci_high": np.nan, "verdict": NOT_REPRODUCED}
    low, high = (mean, mean) if metric in SETTING_METRICS else interval(mean, ours["ours_sd"], n)
    return {
        "difference": mean - paper_value,
        "ci_low": low,
        "ci_high": high,
        "verdict": verdict(metric, paper_value, low, high),
    }


def scorecard(paper: str | None = None, reproductions_dir: str | Path | None = None) -> pd.DataFrame:
    """Every published numeric cell (of one paper or all four) with ours, its interval, a verdict, its role
    (`counted`) and, where it is not within tolerance, a cause and its evidence; then the recorded cells of items
    that publish no number."""
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
        key = tuple(cell[k] for k in ("paper", "item", "dataset", "method", "metric", "classifier", "setting"))
        candidates = pd.concat(groups.get(key, [pd.DataFrame(columns=list(COLUMNS))]), ignore_index=True)
        eps = cell["epsilon"]
        match = (
            candidates[np.isclose(candidates["epsilon"].astype(float), eps)]
            if not math.isnan(eps)
            else candidates[candidates["epsilon"].isna()]
        )
        ours_cell = _ours(_preferred(match, cell["dataset"]))
        judged = (
            {"difference": np.nan, "ci_low": np.nan, "ci_high": np.nan, "verdict": CITED}
            if cell["cited_from"]
            else _judged(cell["metric"], float(cell["value"]), ours_cell)
        )
        lines.append(
            {**{k: cell[k] for k in KEY}, "source": cell["source"], "paper_value": cell["value"], **ours_cell, **judged}
        )
    card = pd.concat([pd.DataFrame(lines), _figure_only(published, ours)], ignore_index=True)
    card["counted"] = _roles(card, every_paper)
    card["cause"], card["evidence"], card["study"] = "", "", ""
    for _, row in load_causes(every_paper).iterrows():
        named = _explained(card) & cause_matches(row, card)
        states = study_states(row["study"], reproductions_dir)
        untested = named & (card["counted"] == "result").to_numpy() & (not states or MISSING in states.values())
        card.loc[named, "cause"], card.loc[named, "evidence"] = row["cause"], row["evidence"]
        card.loc[named, "study"] = "; ".join(f"{name} ({state})" for name, state in states.items())
        card.loc[untested, "cause"] = UNEXPLAINED
    columns = [*KEY, "source", "paper_value", "ours_mean", "ours_sd", "n", "ci_low", "ci_high", "not_dp"]
    return card[[*columns, "difference", "verdict", "counted", "cause", "evidence", "study", "devices"]]


def queued_studies() -> frozenset[str]:
    """The studies `STUDIES_OVERLAY` declares (its experiments: no paper item reads them), recorded or not."""
    import yaml

    experiments = yaml.safe_load(STUDIES_OVERLAY.read_text(encoding="utf-8")).get("experiments") or {}
    return frozenset(name for name, experiment in experiments.items() if "paper" not in experiment)


def study_states(names: str, reproductions_dir: str | Path | None = None) -> dict[str, str]:
    """Each study of causes.csv's space-separated `names` -> `RECORDED` (reproductions/studies/<name>.csv exists, or
    for a second reading `<paper>/<item>@<setting>`, reproductions/<paper>.csv has rows of that item and setting),
    `QUEUED` (an experiment of `STUDIES_OVERLAY`, not recorded yet) or `MISSING` (neither)."""
    directory = Path(reproductions_dir or REPRODUCTIONS_DIR)
    queued = queued_studies()

    def state(name: str) -> str:
        if "@" in name:
            (paper, item), setting = name.split("@", 1)[0].split("/"), name.split("@", 1)[1]
            rows = read_all(directory, paper)
            shown = rows[(rows["paper"] == paper) & (rows["item"] == item) & (rows["setting"] == setting)]
            return RECORDED if len(shown) else MISSING
        return RECORDED if (directory / "studies" / f"{name}.csv").is_file() else QUEUED if name in queued else MISSING

    return {name: state(name) for name in names.split()}


def _roles(card: pd.DataFrame, every_paper: pd.DataFrame) -> list[str]:
    """Each cell's role (`ROLES`), the first that applies in that order: cited, figure, setting, blocked,
    duplicate, cut, result."""
    blocked = np.zeros(len(card), dtype=bool)
    for _, row in load_blocked(every_paper).iterrows():
        blocked |= cause_matches(row, card)
    cut = np.zeros(len(card), dtype=bool)  # recorded, under a named cut: cells without runs stay results
    for _, row in load_causes(every_paper).iterrows():
        cut |= (row["cause"] == COMPUTE_CUT) & cause_matches(row, card) & (card["n"] > 0).to_numpy()
    roles = []
    for i, cell in enumerate(card.itertuples(index=False)):
        if cell.verdict == CITED:
            roles.append("cited")
        elif cell.verdict == NO_PUBLISHED_NUMBER:
            roles.append("figure")
        elif cell.metric in SETTING_METRICS:
            roles.append("setting")
        elif blocked[i]:
            roles.append("blocked")
        else:
            roles.append("cut" if cut[i] else "result")
    card = card.assign(counted=roles)
    keys = card[[k for k in KEY]].astype(object).fillna("").astype(str).agg("|".join, axis=1)
    counted_paper = set(keys[(card["source"] == "paper") & card["counted"].isin(["result", "cut"])])
    second = (card["source"] != "paper") & card["counted"].isin(["result", "cut"]) & keys.isin(counted_paper)
    return ["duplicate" if dup else role for role, dup in zip(roles, second)]


def _preferred(rows: pd.DataFrame, dataset: str) -> pd.DataFrame:
    """The recorded rows a published cell of `dataset` is judged on: those on the published data's own dataset id
    where there are any, else those of another preprocessing of it (`adult-refcode`: P3GM's reference code's, not
    DP), which stand in, marked, until the cell is recorded on the public domain."""
    own = rows[rows["dataset"] == dataset]
    return own if len(own) else rows


def _explained(card: pd.DataFrame) -> np.ndarray:
    """The cells a written cause explains: recorded and not within tolerance (outside, undecided), or cut."""
    judged = card["verdict"].isin([OUTSIDE, UNDECIDED]) | (card["counted"] == "cut")
    return judged.to_numpy()


def cause_problems(card: pd.DataFrame) -> list[str]:
    """What keeps every miss of `card` explained: misses (outside tolerance) with no cause, rows of causes.csv whose
    evidence names no heading in docs/, and rows (of the card's papers) that name no cell outside tolerance,
    undecided or cut (stale). Empty = every miss has exactly its cause."""
    problems = [
        f"no cause for the miss {dict(cell[[*KEY, 'source']])}: add a row to causes.csv (cause 'unexplained' if none)"
        for _, cell in card[(card["verdict"] == OUTSIDE) & (card["cause"] == "")].iterrows()
    ]
    for index, row in load_causes(load_published()).iterrows():
        where = f"causes.csv row {index + 1} (line {index + 2})"
        for name in (name for name, state in study_states(row["study"]).items() if state == MISSING):
            problems.append(
                f"{where}: study {name!r} names no study: neither {REPRODUCTIONS_DIR.name}/studies/{name}.csv nor an "
                f"experiment of {STUDIES_OVERLAY.relative_to(REPO_ROOT)}; its cells' cause reads {UNEXPLAINED!r}"
            )
        if not evidence_resolves(row["evidence"]):
            problems.append(f"{where}: evidence {row['evidence']!r} names no heading of a file in docs/")
        if row["paper"] in {*card["paper"], WILDCARD} and not (_explained(card) & cause_matches(row, card)).any():
            problems.append(f"{where} names no cell outside tolerance, undecided or cut: {dict(row.drop('cells'))}")
    return problems


def cause_counts(card: pd.DataFrame) -> dict[str, int]:
    """Misses (outside tolerance) per cause ('' = none yet), most frequent first, then by name."""
    counts = card.loc[card["verdict"] == OUTSIDE, "cause"].value_counts()
    return dict(sorted(counts.items(), key=lambda pair: (-pair[1], pair[0])))


def _misses(counts: dict[str, int]) -> str:
    """'; misses: 3 open, 1 protocol-differs' ('' without misses)."""
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
        stats = _ours(cell)
        low, high = interval(stats["ours_mean"], stats["ours_sd"], stats["n"])
        lines.append(
            {
                **dict(zip(KEY, key)),
                "source": "ours only",
                "paper_value": np.nan,
                **stats,
                "difference": np.nan,
                "ci_low": low,
                "ci_high": high,
                "verdict": NO_PUBLISHED_NUMBER,
            }
        )
    return pd.DataFrame(lines)


@dataclass(frozen=True)
class Fidelity:
    """How many cells of a card are what (`ROLES`): the headline counts distinct results only."""

    within: int  # results within tolerance (the whole interval inside paper ± tolerance)
    outside: int  # results wholly outside
    undecided: int  # results recorded, neither (one seed, or an interval across an edge)
    reproduced: int  # results recorded (not cut)
    runnable: int  # results and cut cells: what a run here can fill
    cut: int  # results whose runs are under a named compute cut: not reproduced
    settings: int  # settings echoed and recorded (checked, not counted)
    settings_match: int  # of which equal to the paper's
    blocked: int  # no run here can fill (blocked.csv)
    duplicates: int  # the same cell against a second reference

    @classmethod
    def of(cls, card: pd.DataFrame) -> Fidelity:
        role, verdict = card["counted"], card["verdict"]
        results = role == "result"
        settings = (role == "setting") & (card["n"] > 0)
        return cls(
            within=int((results & (verdict == WITHIN)).sum()),
            outside=int((results & (verdict == OUTSIDE)).sum()),
            undecided=int((results & (verdict == UNDECIDED)).sum()),
            reproduced=int((results & (card["n"] > 0)).sum()),
            runnable=int(role.isin(["result", "cut"]).sum()),
            cut=int((role == "cut").sum()),
            settings=int(settings.sum()),
            settings_match=int((settings & (verdict == WITHIN)).sum()),
            blocked=int((role == "blocked").sum()),
            duplicates=int((role == "duplicate").sum()),
        )

    @property
    def headline(self) -> str:
        """'35 within tolerance / 53 reproduced / 71 runnable distinct results'."""
        return (
            f"{self.within} within tolerance / {self.reproduced} reproduced / {self.runnable} runnable distinct results"
        )

    @property
    def rest(self) -> str:
        """The other counts, in words ('' where none)."""
        parts = [
            f"{self.undecided} undecided" if self.undecided else "",
            f"{self.outside} outside" if self.outside else "",
            f"{self.cut} cut (not reproduced)" if self.cut else "",
            f"settings echoed {self.settings_match}/{self.settings} equal" if self.settings else "",
            f"{self.blocked} blocked" if self.blocked else "",
            f"{self.duplicates} duplicate{'s' * (self.duplicates != 1)}" if self.duplicates else "",
        ]
        return ", ".join(p for p in parts if p)


def fidelity(card: pd.DataFrame) -> Fidelity:
    """The counts of `card` (`Fidelity`)."""
    return Fidelity.of(card)


HEADLINE_WORDS = (
    "Counted over distinct results: a metric of a method on data that a run here can fill, each published cell once "
    "(a second reference's copy is a duplicate); settings echoed back (hyper-parameters, dataset statistics), cells "
    "no run here can fill (blocked) and results under a named compute cut are not reproductions. Within tolerance = "
    f"the {CONFIDENCE:.0%} t-interval over the seeds lies inside paper +- tolerance; undecided = neither inside nor "
    "wholly outside (one seed has no interval)."
)


def item_summary(card: pd.DataFrame) -> dict[str, str]:
    """'<paper>/<item>' -> 'k/n within tolerance' (n = its runnable distinct results), the other counts
    (`Fidelity.rest`), its misses per cause and its cells not DP."""
    summary = {}
    for (paper, item), rows in card.groupby(["paper", "item"]):
        figure_only = rows["verdict"] == NO_PUBLISHED_NUMBER
        if figure_only.all():
            summary[f"{paper}/{item}"] = (
                f"no published numbers; {len(rows)} cell{'s' * (len(rows) != 1)} recorded" + _not_dp(rows)
            )
            continue
        counts = fidelity(rows)
        head = (
            (
                f"{counts.within}/{counts.runnable} within tolerance"
                if counts.reproduced
                else f"0/{counts.runnable} reproduced"
            )
            if counts.runnable
            else ""
        )
        text = "; ".join(p for p in (head, counts.rest) if p)
        if text:
            summary[f"{paper}/{item}"] = text + _misses(cause_counts(rows)) + _not_dp(rows)
    return summary


def _not_dp(card: pd.DataFrame) -> str:
    """'; 3 cells not DP †' where recorded cells of `card` have a `not_dp` reason (`not_dp_notes` gives them)."""
    n = int((card["not_dp"].fillna("") != "").sum())
    return f"; {n} cell{'s' * (n != 1)} not DP {NOT_DP_MARK}" if n else ""


def summary_line(card: pd.DataFrame) -> str:
    """The whole card in one line: the headline over distinct results, the other counts, misses per cause."""
    counts = fidelity(card)
    return f"{counts.headline} ({counts.rest}){_misses(cause_counts(card))}{_not_dp(card)}"


def seeds_text(n: int, counted: str) -> str:
    """'n=3 of 5' for a result with fewer seeds than pre-registered, else 'n=5'."""
    return (
        f"n={n} of {SEEDS_PLANNED}" if counted in ("result", "cut", "duplicate") and 0 < n < SEEDS_PLANNED else f"n={n}"
    )


def claims_line(reproductions_dir: str | Path | None = None) -> str:
    """The papers' claims judged over the recorded rows, in one line (`dpvae.claims`, figures/claims.pdf)."""
    from dpvae.claims import judge_all, summary_line

    return f"{summary_line(judge_all(reproductions_dir=reproductions_dir))} ({CLAIMS}.pdf)"


def write_scorecard(card: pd.DataFrame, out: str | Path, reproductions_dir: str | Path | None = None) -> None:
    """`out` = <prefix>.csv or <prefix>.pdf: writes both. The PDF: the headline and the papers' claims in one line
    (`claims_line` over `reproductions_dir`), then per paper pages listing its
    published cells (with the tally and the tolerances), a forest plot per item (`_forest_pages`), then pages listing
    its figure-only cells; a listing page is one monospace text block, so hundreds of rows stay cheap (a drawn table
    took ~2 s a page)."""
    prefix = Path(out).with_suffix("")
    atomic_write(f"{prefix}.csv", lambda tmp: card.to_csv(tmp, index=False, float_format="%.6g"))
    from matplotlib.backends.backend_pdf import PdfPages

    from dpvae.render.output import listing_pages, pyplot

    shown = card.assign(
        ours=[
            ("" if n == 0 else f"{m:.4g}" + ("" if np.isnan(s) else f" +- {s:.2g}") + f" ({seeds_text(n, role)})")
            + ("" if np.isnan(lo) else f" [{lo:.4g}, {hi:.4g}]")
            + (f" {NOT_DP_MARK}" if why else "")
            for m, s, n, lo, hi, role, why in zip(
                card["ours_mean"],
                card["ours_sd"],
                card["n"],
                card["ci_low"],
                card["ci_high"],
                card["counted"],
                card["not_dp"].fillna(""),
            )
        ],
        paper_value=[_number(v, 6) for v in card["paper_value"]],
        epsilon=[_number(v, 4) for v in card["epsilon"]],
    )
    notes = (
        f"ours: mean +- sd (n seeds of the {SEEDS_PLANNED} pre-registered) [{CONFIDENCE:.0%} t-interval]. Verdict: "
        "within tolerance where the whole interval lies inside paper +- tolerance, outside where wholly outside, "
        "undecided otherwise (one seed: no interval); settings are compared as points. Tolerances: "
        "AUROC/AUPRC/TVD/accuracy +-0.03 absolute, FID +-15 % relative, epsilon exact (1e-3), counts and settings "
        "exact. counted: result, cut (runs under a named compute cut), setting, blocked (blocked.csv), duplicate (a "
        "second reference's copy), cited. Causes are defined in workflow/resources/published/README.md, with their "
        "evidence in docs/ (the CSV's evidence column)."
    )
    counts = fidelity(card)
    claims_text = claims_line(reproductions_dir)

    def write(tmp: str) -> None:
        with PdfPages(tmp, metadata={"CreationDate": None}) as pdf, pyplot().rc_context({"pdf.use14corefonts": True}):
            listing_pages(
                pdf,
                f"Scorecard: {counts.headline}",
                pd.DataFrame(
                    {"": [counts.rest, *_misses(cause_counts(card)).removeprefix("; ").split(", "), claims_text]}
                ),
                HEADLINE_WORDS,
            )
            for paper, rows in shown.groupby("paper", sort=False):
                figure_only = rows["verdict"] == NO_PUBLISHED_NUMBER
                published = rows[~figure_only]
                paper_counts = fidelity(published)
                tally = f"{paper_counts.headline} ({paper_counts.rest})" + _misses(cause_counts(published))
                listing_pages(
                    pdf,
                    f"Scorecard - {paper}: published cells; {tally}",
                    published[_PUBLISHED_COLUMNS],
                    notes,
                    not_dp_notes(published["not_dp"]),
                )
                _forest_pages(pdf, card[(card["paper"] == paper) & (card["verdict"] != NO_PUBLISHED_NUMBER)])
                listing_pages(
                    pdf,
                    f"Scorecard - {paper}: recorded cells of items that publish no number (figures); mean +- sd "
                    "(n seeds), no verdict",
                    rows[figure_only][[*_CELL_COLUMNS, "ours"]],
                    footnotes=not_dp_notes(rows.loc[figure_only, "not_dp"]),
                )

    atomic_write(f"{prefix}.pdf", write)


FOREST_LIMIT = 5.0  # tolerances either side of the paper's value a forest plot shows (beyond: an arrow at the edge)
_VERDICT_COLOURS = {WITHIN: "tab:green", OUTSIDE: "tab:red", UNDECIDED: "tab:orange"}


def _forest_pages(pdf, cells: pd.DataFrame) -> None:
    """One page per item: each recorded result, cut or duplicate cell with a tolerance (settings are exact) as its
    95 % interval against the tolerance band, in tolerances from the paper's value: (ours - paper) / tolerance, the
    band [-1, 1]; one seed is a point (no interval)."""
    from dpvae.render.output import pyplot

    shown = cells[cells["counted"].isin(["result", "cut", "duplicate"]) & (cells["n"] > 0)]
    for item, rows in shown.groupby("item", sort=False):
        bound = np.array([_bound(m, v) for m, v in zip(rows["metric"], rows["paper_value"])])

        def scaled(column: str, rows=rows, bound=bound) -> np.ndarray:
            return np.clip((rows[column].to_numpy(dtype=float) - rows["paper_value"].to_numpy(dtype=float)) / bound,
                           -FOREST_LIMIT, FOREST_LIMIT)  # fmt: skip

        mean, low, high = scaled("ours_mean"), scaled("ci_low"), scaled("ci_high")
        labels = [
            " ".join(
                str(v) for v in (r.dataset, r.method, _number(r.epsilon, 4), r.metric, r.classifier, r.setting) if v
            )
            + ("" if r.source == "paper" else f" [{r.source}]")
            + f" ({seeds_text(int(r.n), r.counted)}{', cut' if r.counted == 'cut' else ''})"
            + (f" {NOT_DP_MARK}" if r.not_dp else "")
            for r in rows.itertuples()
        ]
        y = np.arange(len(rows))[::-1]
        plain = {"font.family": "monospace", "font.weight": "medium", "axes.titleweight": "medium"}  # as listings
        plain |= {"axes.labelweight": "medium", "axes.unicode_minus": False}
        with pyplot().rc_context(plain):
            fig, ax = pyplot().subplots(figsize=(9.0, 1.4 + 0.12 * len(rows)))
            ax.axvspan(-1, 1, color="0.9", zorder=0)
            ax.axvline(0, color="0.5", linewidth=0.6)
            colours = [_VERDICT_COLOURS.get(v, "0.3") for v in rows["verdict"]]
            ax.hlines(y, low, high, colors=colours, linewidth=2)
            edge = np.abs(mean) >= FOREST_LIMIT
            ax.scatter(mean[~edge], y[~edge], c=[c for c, e in zip(colours, edge) if not e], s=14, zorder=3)
            for x, row_y, colour in zip(mean[edge], y[edge], [c for c, e in zip(colours, edge) if e]):
                ax.scatter([x], [row_y], marker=">" if x > 0 else "<", color=colour, s=30, zorder=3)
            ax.set_yticks(y, labels, fontsize=6)
            ax.set_xlim(-FOREST_LIMIT - 0.3, FOREST_LIMIT + 0.3)
            ax.set_xlabel("(ours - paper) / tolerance; grey: within; bar: 95 % t-interval", fontsize=7)
            fig.text(
                0.01,
                0.98,
                f"Forest - {rows['paper'].iloc[0]}/{item}: green within tolerance, orange undecided, red outside "
                f"(clipped at +-{FOREST_LIMIT:g} tolerances)",
                fontsize=8,
                va="top",
            )
            ax.tick_params(axis="x", labelsize=7)
            width = max(len(label) for label in labels) * 6 * 0.6 / 72 + 0.3  # 6 pt monospace labels, inches
            fig.set_size_inches(width + 5.0, fig.get_figheight())
            fig.subplots_adjust(left=width / (width + 5.0), right=0.97, bottom=0.7 / fig.get_figheight(), top=0.85)
            pdf.savefig(fig)  # no tight_layout: it measures text with the screen fonts, the PDF uses its core fonts
        pyplot().close(fig)


_CELL_COLUMNS = ["item", "dataset", "method", "epsilon", "metric", "classifier", "setting"]
_PUBLISHED_COLUMNS = [*_CELL_COLUMNS, "source", "paper_value", "ours", "verdict", "counted", "cause"]


def _number(value: float, digits: int) -> str:
    return "" if pd.isna(value) else f"{value:.{digits}g}"
