"""The papers' qualitative claims as data, each judged by code over the recorded rows (issue 63 Build 7).

`workflow/resources/published/claims.csv` holds one row per claim: its id, paper and item, its place in the paper
and its words verbatim, then a test of one of a few kinds (`KINDS`, registered with `@claim_kind`) over the
paper-scale rows of `reproductions/<paper>.csv` (`dpvae.reproductions.read_all`). Every kind compares means over
seeds through 95 % t-intervals, so a claim is *supported* only where the seed noise cannot explain it:

- `order`: the methods, in the claimed order, each beat the next (direction `higher` or `lower`: which is better);
- `top`: the first method beats each of the others;
- `trend`: along `axis` (epsilon or a setting key), each method's last point beats its first in the claimed direction
  (`increasing` or `decreasing`) and no step between neighbours goes significantly against it;
- `competitive`: the first method is worse than none of the others by more than `tolerance`;
- `flat`: along `axis`, the difference between the last and the first point lies within +-`tolerance`;
- `peak`: along `axis`, the best point inside the range `value` ("low high") beats every point outside it;
- `near`, `above`, `below`: each method's mean against `value` (+- `tolerance` for `near`): an attack AUC near 0.5;
- `untested`: no recorded row can test it; `needs` says what would (GPU, data unreachable, not recorded).

A comparison of two means is the Welch t-interval of their difference (one seed on either side: no interval). Each
test is run for every dataset x classifier x epsilon the row lists (space-separated); its verdict is *supported*
where every part is, *contradicted* where a part's interval lies wholly on the wrong side, *undecided* otherwise,
*untested* where no row is recorded (with `needs`). A method may carry settings (`dp2vae@pretrain=true`); a setting
`step=last` (or `first`) is the last (first) recorded step. A non-private method's rows (no epsilon) stand at every
epsilon. Rows may come from several items (`rows`), each run counted once.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from dpvae.files import atomic_write
from dpvae.items import ITEMS, PAPERS, item_ids
from dpvae.reproductions import KEY, read_all
from dpvae.seeds import CONFIDENCE, SeedStats

CLAIMS_FILE = "claims.csv"
COLUMNS = (
    "id", "paper", "item", "place", "quote", "kind", "metric", "methods", "dataset", "classifier", "epsilon",
    "setting", "axis", "direction", "value", "tolerance", "rows", "needs", "note",
)  # fmt: skip
SUPPORTED, CONTRADICTED, UNDECIDED, UNTESTED = "supported", "contradicted", "undecided", "untested"
VERDICTS = (SUPPORTED, CONTRADICTED, UNDECIDED, UNTESTED)
DIRECTIONS = {"higher": 1, "lower": -1, "increasing": 1, "decreasing": -1, "": 0}


@dataclass(frozen=True)
class Claim:
    """One row of claims.csv, typed (the module docstring and workflow/resources/published/README.md)."""

    id: str
    paper: str
    item: str
    place: str  # section, figure or table of the paper
    quote: str  # the paper's words, verbatim
    kind: str  # a key of KINDS
    metric: str
    methods: tuple[str, ...]  # method ids, each optionally '@k=v;k2=v2' (settings its rows carry)
    datasets: tuple[str, ...]
    classifiers: tuple[str, ...]
    epsilons: tuple[float, ...]  # empty: any (the rows' own)
    setting: str  # settings every row carries besides the axis ('k=v;...'; 'step=last' resolved)
    axis: str  # 'epsilon' or a setting key, for trend, flat and peak
    direction: str  # higher | lower (order, top, peak), increasing | decreasing (trend)
    value: tuple[float, ...]  # the reference of near/above/below; the range of peak
    tolerance: float  # near, flat
    rows: tuple[str, ...]  # the items whose recorded rows the test reads (default: the claim's item)
    needs: str  # what an untested claim would need
    note: str

    @property
    def sign(self) -> int:
        return DIRECTIONS[self.direction]


@dataclass(frozen=True)
class Judgement:
    """A claim's verdict (`VERDICTS`) and the numbers behind it, in words."""

    verdict: str
    evidence: str


@dataclass(frozen=True)
class ClaimKind:
    """A registered kind: its test, and the columns a row of that kind must fill."""

    name: str
    test: Callable[[Claim, pd.DataFrame], list[Judgement]]
    requires: tuple[str, ...]


KINDS: dict[str, ClaimKind] = {}


def claim_kind(name: str, requires: tuple[str, ...] = ()):
    """Register a claim kind's test (claim, recorded rows) -> one judgement per part; refuses a duplicate name."""

    def register(test: Callable[[Claim, pd.DataFrame], list[Judgement]]):
        if name in KINDS:
            raise ValueError(f"claim kind {name!r} is registered twice")
        KINDS[name] = ClaimKind(name, test, requires)
        return test

    return register


# ---------------------------------------------------------------------------------------------------------- loading


def claims_path() -> Path:
    from dpvae.render.published import published_dir

    return published_dir() / CLAIMS_FILE


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


def _numbers(text: str) -> tuple[float, ...]:
    return tuple(float(w) for w in text.split())


def load_claims(path: str | Path | None = None) -> list[Claim]:
    """The validated claims; a ValueError naming the file, the row and what is wrong otherwise."""
    path = Path(path) if path else claims_path()
    table = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8")
    if tuple(table.columns) != COLUMNS:
        raise ValueError(f"{path.name}: columns {list(table.columns)} differ from the expected {list(COLUMNS)}")
    claims, problems = [], []
    for index, row in table.iterrows():
        where = f"{path.name} row {index + 1} ({row['id'] or 'no id'})"
        try:
            claim = Claim(
                id=row["id"],
                paper=row["paper"],
                item=row["item"],
                place=row["place"],
                quote=row["quote"],
                kind=row["kind"],
                metric=row["metric"],
                methods=_words(row["methods"]),
                datasets=_words(row["dataset"]),
                classifiers=_words(row["classifier"]) or ("",),
                epsilons=_numbers(row["epsilon"]),
                setting=row["setting"],
                axis=row["axis"],
                direction=row["direction"],
                value=_numbers(row["value"]),
                tolerance=float(row["tolerance"]) if row["tolerance"] else math.nan,
                rows=_words(row["rows"]) or (row["item"],),
                needs=row["needs"],
                note=row["note"],
            )
        except ValueError as error:
            problems.append(f"{where}: {error}")
            continue
        problems += [f"{where}: {p}" for p in _problems(claim)]
        claims.append(claim)
    ids = [c.id for c in claims]
    problems += [f"{path.name}: id {i!r} is used twice" for i in sorted({i for i in ids if ids.count(i) > 1})]
    if problems:
        raise ValueError("\n".join(problems))
    return claims


def _problems(claim: Claim) -> list[str]:
    problems = []
    if not claim.id or not claim.quote or not claim.place:
        problems.append("id, place and quote are required")
    if claim.paper not in PAPERS:
        problems.append(f"paper {claim.paper!r} is not one of {', '.join(PAPERS)}")
    elif claim.item not in item_ids(claim.paper) or any(i not in item_ids(claim.paper) for i in claim.rows):
        problems.append(f"item {claim.item!r} or rows {' '.join(claim.rows)!r} not an item of {claim.paper}")
    if claim.kind not in KINDS:
        problems.append(f"kind {claim.kind!r} is not one of {', '.join(KINDS)}")
        return problems
    if claim.direction not in DIRECTIONS:
        problems.append(f"direction {claim.direction!r} is not one of {', '.join(d for d in DIRECTIONS if d)}")
    for column in KINDS[claim.kind].requires:
        value = getattr(claim, column)
        if value in ("", ()) or (isinstance(value, float) and math.isnan(value)):
            problems.append(f"kind {claim.kind} needs {column}")
    if claim.kind == "peak" and len(claim.value) != 2:
        problems.append("peak needs value 'low high'")
    return problems


# ---------------------------------------------------------------------------------------------------- statistics


@dataclass(frozen=True)
class Point:
    """Mean, sd and n of one metric of one method at one place (a dataset, classifier, epsilon, setting)."""

    mean: float
    sd: float
    n: int

    @classmethod
    def of(cls, values: pd.Series) -> Point:
        values = values.astype(float)
        return cls(float(values.mean()), float(values.std(ddof=1)) if len(values) > 1 else math.nan, len(values))

    def interval(self) -> tuple[float, float]:
        """The `CONFIDENCE` t-interval of the mean (`SeedStats.interval`); NaN for one seed."""
        return SeedStats(self.mean, self.sd, self.n).interval(CONFIDENCE)

    def text(self) -> str:
        return f"{self.mean:.4g} (n={self.n})"


def difference(a: Point, b: Point) -> tuple[float, float, float]:
    """a - b with its Welch `CONFIDENCE` t-interval (NaN bounds where either side has one seed)."""
    diff = a.mean - b.mean
    if a.n < 2 or b.n < 2:
        return diff, math.nan, math.nan
    va, vb = a.sd**2 / a.n, b.sd**2 / b.n
    se = math.sqrt(va + vb)
    if se == 0:
        return diff, diff, diff
    from scipy import stats

    df = (va + vb) ** 2 / (va**2 / (a.n - 1) + vb**2 / (b.n - 1))
    half = float(stats.t.ppf(0.5 + CONFIDENCE / 2, df)) * se
    return diff, diff - half, diff + half


def _side(low: float, high: float, sign: int) -> str:
    """Whether sign * [low, high] lies wholly above 0 (supported), wholly below (contradicted) or neither."""
    if math.isnan(low) or math.isnan(high):
        return UNDECIDED
    low, high = sorted((sign * low, sign * high))
    return SUPPORTED if low > 0 else CONTRADICTED if high < 0 else UNDECIDED


def _beats(name_a: str, a: Point, name_b: str, b: Point, sign: int, where: str) -> Judgement:
    diff, low, high = difference(a, b)
    shown = "" if math.isnan(low) else f" [{low:.3g}, {high:.3g}]"
    return Judgement(_side(low, high, sign), f"{where}{name_a} - {name_b} = {diff:+.3g}{shown} (n {a.n}/{b.n})")


def combine(parts: list[Judgement]) -> str:
    """All parts supported: supported; any contradicted: contradicted; no part (nothing recorded): untested."""
    verdicts = {p.verdict for p in parts}
    if not parts or verdicts == {UNTESTED}:
        return UNTESTED
    if CONTRADICTED in verdicts:
        return CONTRADICTED
    return SUPPORTED if verdicts == {SUPPORTED} else UNDECIDED


# ----------------------------------------------------------------------------------------------------- selection


def _settings(text: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in str(text).split(";") if "=" in part)


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


def _select(claim: Claim, rows: pd.DataFrame, method: str, dataset: str, classifier: str) -> pd.DataFrame:
    """The recorded rows of one method (with its '@' settings) for `claim` on one dataset and classifier, each run
    once (rows recorded under several of the claim's items are one run), with `point`: the axis value."""
    name, _, own = method.partition("@")
    picked = rows[
        (rows["paper"] == claim.paper)
        & rows["item"].isin(claim.rows)
        & (rows["method"] == name)
        & (rows["dataset"] == dataset)
        & (rows["metric"] == claim.metric)
        & (rows["classifier"].fillna("") == classifier)
    ]
    wanted = {**_settings(claim.setting), **_settings(own)}
    settings = [_settings(s) for s in picked["setting"].fillna("")]
    for key, value in wanted.items():
        if value in ("first", "last"):
            steps = [_number(s[key]) for s in settings if key in s]
            if steps:
                wanted[key] = f"{(min if value == 'first' else max)(steps):g}"
    keep = np.array(
        [
            {k: v for k, v in s.items() if k != claim.axis} == wanted
            and (claim.axis in ("", "epsilon") or claim.axis in s)
            for s in settings
        ],
        dtype=bool,
    )
    picked = picked[keep]
    picked = picked.assign(
        point=picked["epsilon"].astype(float)
        if claim.axis == "epsilon"
        else [_number(s.get(claim.axis, "nan")) for s, k in zip(settings, keep) if k]
    )
    run = [c for c in KEY if c != "item"] + ["seed"]
    return picked.drop_duplicates(run)


def _at(rows: pd.DataFrame, epsilon: float | None) -> pd.DataFrame:
    """Rows at `epsilon` (None: all); a non-private method's rows (no epsilon) stand at every epsilon."""
    if epsilon is None:
        return rows
    eps = rows["epsilon"].astype(float)
    return rows[np.isclose(eps, epsilon) | eps.isna()]


def _places(claim: Claim):
    """(dataset, classifier, epsilon, text) for each part of a claim's test."""
    for dataset in claim.datasets:
        for classifier in claim.classifiers:
            for epsilon in claim.epsilons or (None,):
                text = " ".join(w for w in (dataset, classifier, "" if epsilon is None else f"eps={epsilon:g}") if w)
                yield dataset, classifier, epsilon, f"{text}: "


def _points(claim: Claim, rows: pd.DataFrame, dataset: str, classifier: str, epsilon) -> dict[str, Point]:
    """method -> its Point at one place (methods with no recorded row left out)."""
    points = {}
    for method in claim.methods:
        picked = _at(_select(claim, rows, method, dataset, classifier), epsilon)
        if len(picked):
            points[method] = Point.of(picked["value"])
    return points


def _series(claim: Claim, rows: pd.DataFrame, method: str, dataset: str, classifier: str) -> list[tuple[float, Point]]:
    """(axis value, Point) along the claim's axis for one method, in axis order."""
    picked = _select(claim, rows, method, dataset, classifier)
    picked = picked[picked["point"].notna()]
    return [(float(x), Point.of(group["value"])) for x, group in picked.groupby("point", sort=True)]


# ---------------------------------------------------------------------------------------------------------- kinds


def _missing(where: str, names) -> Judgement:
    return Judgement(UNTESTED, f"{where}no recorded rows of {', '.join(names)}")


@claim_kind("order", requires=("direction", "methods", "metric", "datasets"))
def _order(claim: Claim, rows: pd.DataFrame) -> list[Judgement]:
    parts = []
    for dataset, classifier, epsilon, where in _places(claim):
        points = _points(claim, rows, dataset, classifier, epsilon)
        for a, b in zip(claim.methods, claim.methods[1:]):
            parts.append(
                _beats(a, points[a], b, points[b], claim.sign, where)
                if a in points and b in points
                else _missing(where, [m for m in (a, b) if m not in points])
            )
    return parts


@claim_kind("top", requires=("direction", "methods", "metric", "datasets"))
def _top(claim: Claim, rows: pd.DataFrame) -> list[Judgement]:
    parts = []
    for dataset, classifier, epsilon, where in _places(claim):
        points = _points(claim, rows, dataset, classifier, epsilon)
        first = claim.methods[0]
        for other in claim.methods[1:]:
            parts.append(
                _beats(first, points[first], other, points[other], claim.sign, where)
                if first in points and other in points
                else _missing(where, [m for m in (first, other) if m not in points])
            )
    return parts


@claim_kind("competitive", requires=("direction", "methods", "metric", "datasets", "tolerance"))
def _competitive(claim: Claim, rows: pd.DataFrame) -> list[Judgement]:
    """The first method worse than none of the others by more than `tolerance` (in `direction`)."""
    parts = []
    for dataset, classifier, epsilon, where in _places(claim):
        points = _points(claim, rows, dataset, classifier, epsilon)
        first = claim.methods[0]
        for other in claim.methods[1:]:
            if first not in points or other not in points:
                parts.append(_missing(where, [m for m in (first, other) if m not in points]))
                continue
            margin = claim.sign * claim.tolerance
            beats = _beats(first, points[first], other, points[other], claim.sign, where)
            _, low, high = difference(points[first], points[other])
            parts.append(
                Judgement(_side(low + margin, high + margin, claim.sign), f"{beats.evidence} vs -{claim.tolerance:g}")
            )
    return parts


def _along(claim: Claim, rows: pd.DataFrame, judge: Callable[[str, list[tuple[float, Point]], str], Judgement]):
    parts = []
    for dataset, classifier, _, where in _places(claim):
        for method in claim.methods:
            series = _series(claim, rows, method, dataset, classifier)
            parts.append(
                judge(method, series, where) if len(series) >= 2 else _missing(where, [f"{method} along {claim.axis}"])
            )
    return parts


@claim_kind("trend", requires=("direction", "methods", "metric", "datasets", "axis"))
def _trend(claim: Claim, rows: pd.DataFrame) -> list[Judgement]:
    def judge(method: str, series, where: str) -> Judgement:
        (x0, first), (x1, last) = series[0], series[-1]
        overall = _beats(f"{method}@{x1:g}", last, f"@{x0:g}", first, claim.sign, where)
        steps = [_beats("", b, "", a, claim.sign, "") for (_, a), (_, b) in zip(series, series[1:])]
        against = [f"{x:g}->{y:g}" for (x, _), (y, _), s in zip(series, series[1:], steps) if s.verdict == CONTRADICTED]
        verdict = CONTRADICTED if against or overall.verdict == CONTRADICTED else overall.verdict
        return Judgement(verdict, overall.evidence + (f"; against: {', '.join(against)}" if against else ""))

    return _along(claim, rows, judge)


@claim_kind("flat", requires=("methods", "metric", "datasets", "axis", "tolerance"))
def _flat(claim: Claim, rows: pd.DataFrame) -> list[Judgement]:
    def judge(method: str, series, where: str) -> Judgement:
        (x0, first), (x1, last) = series[0], series[-1]
        diff, low, high = difference(last, first)
        tol = claim.tolerance
        verdict = (
            UNDECIDED
            if math.isnan(low)
            else SUPPORTED
            if -tol <= low and high <= tol
            else CONTRADICTED
            if low > tol or high < -tol
            else UNDECIDED
        )
        shown = "" if math.isnan(low) else f" [{low:.3g}, {high:.3g}]"
        return Judgement(verdict, f"{where}{method} @{x1:g} - @{x0:g} = {diff:+.3g}{shown} vs +-{tol:g}")

    return _along(claim, rows, judge)


@claim_kind("peak", requires=("direction", "methods", "metric", "datasets", "axis", "value"))
def _peak(claim: Claim, rows: pd.DataFrame) -> list[Judgement]:
    low, high = claim.value

    def judge(method: str, series, where: str) -> Judgement:
        inside = [(x, p) for x, p in series if low <= x <= high]
        outside = [(x, p) for x, p in series if not low <= x <= high]
        if not inside or not outside:
            return _missing(where, [f"{method} inside and outside {low:g}-{high:g}"])
        xb, best = max(inside, key=lambda xp: claim.sign * xp[1].mean)
        parts = [_beats(f"@{xb:g}", best, f"@{x:g}", p, claim.sign, "") for x, p in outside]
        return Judgement(combine(parts), f"{where}{method} best inside {xb:g}: " + "; ".join(p.evidence for p in parts))

    return _along(claim, rows, judge)


def _against_value(claim: Claim, rows: pd.DataFrame, verdict: Callable[[float, float], str]) -> list[Judgement]:
    parts = []
    for dataset, classifier, epsilon, where in _places(claim):
        points = _points(claim, rows, dataset, classifier, epsilon)
        for method in claim.methods:
            if method not in points:
                parts.append(_missing(where, [method]))
                continue
            low, high = points[method].interval()
            shown = "" if math.isnan(low) else f" [{low:.3g}, {high:.3g}]"
            parts.append(
                Judgement(
                    UNDECIDED if math.isnan(low) else verdict(low, high),
                    f"{where}{method} {points[method].text()}{shown}",
                )
            )
    return parts


@claim_kind("near", requires=("methods", "metric", "datasets", "value", "tolerance"))
def _near(claim: Claim, rows: pd.DataFrame) -> list[Judgement]:
    ref, tol = claim.value[0], claim.tolerance
    return _against_value(
        claim,
        rows,
        lambda lo, hi: (
            SUPPORTED
            if ref - tol <= lo and hi <= ref + tol
            else CONTRADICTED
            if hi < ref - tol or lo > ref + tol
            else UNDECIDED
        ),
    )


@claim_kind("above", requires=("methods", "metric", "datasets", "value"))
def _above(claim: Claim, rows: pd.DataFrame) -> list[Judgement]:
    return _against_value(claim, rows, lambda lo, hi: _side(lo - claim.value[0], hi - claim.value[0], 1))


@claim_kind("below", requires=("methods", "metric", "datasets", "value"))
def _below(claim: Claim, rows: pd.DataFrame) -> list[Judgement]:
    return _against_value(claim, rows, lambda lo, hi: _side(lo - claim.value[0], hi - claim.value[0], -1))


@claim_kind("untested", requires=("needs",))
def _untested(claim: Claim, rows: pd.DataFrame) -> list[Judgement]:
    return []


# ---------------------------------------------------------------------------------------------------------- judging

VERDICT_COLUMNS = ("id", "paper", "item", "place", "kind", "verdict", "evidence", "needs", "quote", "note")


def judge(claim: Claim, rows: pd.DataFrame) -> Judgement:
    """A claim's verdict over recorded rows and its evidence (untested: with what it needs)."""
    parts = KINDS[claim.kind].test(claim, rows)
    verdict = combine(parts)
    evidence = "; ".join(p.evidence for p in parts)
    if verdict == UNTESTED:
        evidence = f"needs: {claim.needs or 'recorded rows'}" + (f" ({evidence})" if evidence else "")
    return Judgement(verdict, evidence)


def judge_all(
    claims: list[Claim] | None = None, reproductions_dir: str | Path | None = None, rows: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Every claim (of claims.csv by default) with its verdict and evidence, over the recorded rows."""
    claims = load_claims() if claims is None else claims
    rows = read_all(reproductions_dir) if rows is None else rows
    lines = []
    for claim in claims:
        judged = judge(claim, rows)
        lines.append(
            {
                "id": claim.id,
                "paper": claim.paper,
                "item": claim.item,
                "place": claim.place,
                "kind": claim.kind,
                "verdict": judged.verdict,
                "evidence": judged.evidence,
                "needs": claim.needs if judged.verdict == UNTESTED else "",
                "quote": claim.quote,
                "note": claim.note,
            }
        )
    return pd.DataFrame(lines, columns=list(VERDICT_COLUMNS))


def counts(table: pd.DataFrame) -> dict[str, int]:
    """verdict -> number of claims, in `VERDICTS` order."""
    return {v: int((table["verdict"] == v).sum()) for v in VERDICTS}


def summary_line(table: pd.DataFrame) -> str:
    """'claims: 40 - 12 supported, 3 contradicted, 10 undecided, 15 untested' (figures/claims.pdf)."""
    tally = counts(table)
    return f"claims: {len(table)} - " + ", ".join(f"{n} {v}" for v, n in tally.items())


def figure_only_items() -> list[str]:
    """The papers' items that run an experiment and publish no number: each needs a claim row to be judged."""
    from dpvae.render.published import load_published

    published = load_published()
    with_numbers = set(zip(published["paper"], published["item"]))
    return [
        item.key
        for item in ITEMS.values()
        if item.paper in PAPERS and item.experiments and (item.paper, item.id) not in with_numbers
    ]


def write_claims(table: pd.DataFrame, out: str | Path) -> None:
    """`out` = <prefix>.pdf: writes <prefix>.csv (the verdicts) and the PDF: the summary and verdicts per paper
    (a bar per verdict), then per paper a listing of its claims (id, item, kind, verdict, evidence) and one of their
    quotes."""
    prefix = Path(out).with_suffix("")
    atomic_write(f"{prefix}.csv", lambda tmp: table.to_csv(tmp, index=False))
    from matplotlib.backends.backend_pdf import PdfPages

    from dpvae.render.output import listing_pages, pyplot

    notes = (
        "Each claim of the four papers (workflow/resources/published/claims.csv), quoted, with a test over the "
        "recorded paper-scale rows (reproductions/<paper>.csv): supported where every part's 95 % t-interval (Welch "
        "for a difference of means) lies on the claimed side, contradicted where one lies wholly on the other, "
        "undecided otherwise (one seed: no interval), untested where no row is recorded (needs: what would test it)."
    )

    def write(tmp: str) -> None:
        plt = pyplot()
        with PdfPages(tmp, metadata={"CreationDate": None}) as pdf, plt.rc_context(_FONTS):
            fig = verdict_chart(table)
            pdf.savefig(fig)
            plt.close(fig)
            for paper in [p for p in PAPERS if (table["paper"] == p).any()]:
                rows = table[table["paper"] == paper]
                listing_pages(
                    pdf,
                    f"Claims - {paper}: {summary_line(rows)}",
                    _lines(rows, ["id", "item", "kind", "verdict"], "evidence", 150),
                    notes,
                )
                listing_pages(pdf, f"Claims - {paper}: the papers' words", _lines(rows, ["id", "place"], "quote", 130))

    atomic_write(f"{prefix}.pdf", write)


def verdict_chart(table: pd.DataFrame):
    """The first page: per paper, its claims by verdict (a stacked bar), under the summary line."""
    from dpvae.render.output import pyplot

    fig, ax = pyplot().subplots(figsize=(8.0, 3.2))
    papers = [p for p in PAPERS if (table["paper"] == p).any()]
    left = np.zeros(len(papers))
    for verdict in VERDICTS:
        n = np.array([int(((table["paper"] == p) & (table["verdict"] == verdict)).sum()) for p in papers])
        ax.barh(papers, n, left=left, color=_COLOURS[verdict], label=verdict)
        left += n
    ax.invert_yaxis()
    ax.set_xlabel("claims")
    ax.legend(fontsize=7, ncol=4, loc="lower right")
    ax.set_title(summary_line(table), fontsize=9)
    fig.tight_layout()
    return fig


_COLOURS = {SUPPORTED: "tab:green", CONTRADICTED: "tab:red", UNDECIDED: "tab:orange", UNTESTED: "0.7"}
_FONTS = {
    "pdf.use14corefonts": True,
    "font.family": "monospace",
    "font.weight": "medium",
    "axes.titleweight": "medium",
} | {"axes.labelweight": "medium"}  # as the scorecard's pages: the core fonts have no 'normal' weight


def _lines(rows: pd.DataFrame, columns: list[str], text: str, width: int) -> pd.DataFrame:
    """A listing of `rows`: `columns` on a claim's first line, its `text` wrapped over as many lines as it takes
    (an evidence's parts each on a line of their own), every column left-aligned."""
    import textwrap

    lines = []
    for row in rows.itertuples(index=False):
        parts = str(getattr(row, text)).split("; ") if text == "evidence" else [str(getattr(row, text))]
        wrapped = [line for part in parts for line in textwrap.wrap(part, width) or [""]]
        for i, line in enumerate(wrapped):
            lines.append({**{c: (str(getattr(row, c)) if i == 0 else "") for c in columns}, text: line})
    listing = pd.DataFrame(lines, columns=[*columns, text])
    return listing.apply(lambda column: column.str.ljust(max(column.str.len().max(), len(column.name))))
