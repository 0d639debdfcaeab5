"""Load and validate the papers' published numbers (`workflow/resources/published/`).

Published numbers are comparison data for the renderers (a column or marker labelled "paper"), never
results. One tidy CSV per paper holds the numbers; two small CSVs hold P3GM's text-only tables; `causes.csv` says
why a cell our reproductions miss is missed (`load_causes`), `blocked.csv` which cells no run here can fill
(`load_blocked`). The column dictionary and conventions are in the
directory's README.md. A method id is the name a paper's tables use:
one of our variants' for that paper (`published_as` in config.yaml, else the variant's own name), or any id on a
row the paper only cites (`cited_from`).
"""

from __future__ import annotations

import itertools
import math
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd

from dpvae.data.registry import dataset_ids
from dpvae.items import PAPERS, item_ids
from dpvae.paths import PUBLISHED_DIR, REPO_ROOT
from dpvae.reproductions import configured_variants, published_dataset, published_method

PUBLISHED_DIR_ENV = "DPVAE_PUBLISHED_DIR"

COLUMNS: tuple[str, ...] = (
    "paper", "item", "dataset", "method", "epsilon", "delta", "metric", "classifier", "setting",
    "value", "source", "cited_from", "note",
)  # fmt: skip
KEY_COLUMNS: tuple[str, ...] = (
    "paper", "item", "dataset", "method", "epsilon", "metric", "classifier", "setting", "source",
)  # fmt: skip
NUMERIC_COLUMNS: tuple[str, ...] = ("epsilon", "delta", "value")

# Item ids of `dpvae.items` (docs/papers.md §6) with panel letters dropped (panels go in `setting` or `note`).
ITEMS: dict[str, frozenset[str]] = {paper: frozenset(item_ids(paper)) for paper in PAPERS}
#: The papers' dataset names: those of our dataset ids (`data.registry`), suffixes dropped (`published_dataset`).
DATASETS = frozenset(published_dataset(d)[0] for d in (*dataset_ids(), "twogauss-d1"))
CLASSIFIERS = frozenset({"", "lr", "mlp", "cnn", "ab", "gbm", "xgb", "mean4"})
SOURCES = frozenset({"paper", "reference-code", "dpimagebench"})

# metric -> (lowest allowed, highest allowed, must be an integer)
METRIC_RANGES: dict[str, tuple[float, float, bool]] = {
    "auroc": (0.0, 1.0, False),
    "auprc": (0.0, 1.0, False),
    "accuracy": (0.0, 1.0, False),
    "tvd2": (0.0, 1.0, False),
    "fid": (0.0, math.inf, False),
    "n_records": (1, math.inf, True),
    "n_features": (1, math.inf, True),
    "n_classes": (2, math.inf, True),
    "pct_positive": (0.0, 100.0, False),
    "sigma_s": (0.0, math.inf, False),
    "lr": (0.0, math.inf, False),
    "epochs": (0, math.inf, True),
    "batch_size": (1, math.inf, True),
}

TEXT_TABLES: dict[str, tuple[str, ...]] = {
    "p3gm_table1": ("feature", "method", "value", "footnote"),
    "p3gm_table2": ("symbol", "meaning"),
}
TABLE1_MARKS = frozenset({"✓", "–"})

_SETTING = re.compile(r"^[a-z][a-z0-9_]*=[^=,;\s]+$")

CAUSES_FILE = "causes.csv"
CAUSE_COLUMNS: tuple[str, ...] = (*KEY_COLUMNS, "cause", "evidence", "study")
#: Why a cell misses (each defined in one line in the folder's README.md); `unexplained` = no explanation yet.
CAUSES = frozenset(
    {
        "paper-code-reports-another-quantity",
        "protocol-differs",
        "compute-cut",
        "data-unreachable-standin",
        "implementation-differs",
        "unexplained",
    }
)
BLOCKED_FILE = "blocked.csv"
BLOCKED_COLUMNS: tuple[str, ...] = (*KEY_COLUMNS, "reason")
WILDCARD = "*"  # in a key column of causes.csv: any value
_EVIDENCE = r"docs/[\w.-]+\.md#[^\s#]+"
#: causes.csv `study`: what tests the cause, space-separated, or empty: a study (reproductions/studies/<name>.csv) or
#: a second reading recorded beside the cell, `<paper>/<item>@<setting>` (reproductions/<paper>.csv rows of that item
#: and setting, e.g. `p3gm/table6@positive=le50K`: the code's quantity measured on the same runs)
_STUDY = r"(?:[a-z][a-z0-9_]*|[a-z0-9]+/[a-z0-9]+@[\w.=<>-]+)"
_STUDIES = rf"(?:{_STUDY}(?: {_STUDY})*)?"


def known_methods(paper: str) -> frozenset[str]:
    """The method ids `paper`'s own numbers may use: our variants' names in that paper's tables."""
    return frozenset(published_method(paper, variant) for variant in configured_variants())


def published_dir() -> Path:
    """Directory of the published CSVs.

    `$DPVAE_PUBLISHED_DIR` if set, else `<repo>/workflow/resources/published`, found from the location of
    the (editable-installed) `dpvae` package in `<repo>/src/dpvae`.
    """
    override = os.environ.get(PUBLISHED_DIR_ENV)
    if override:
        directory = Path(override)
    else:
        directory = PUBLISHED_DIR
    if not directory.is_dir():
        raise FileNotFoundError(
            f"published-numbers directory {directory} does not exist; set {PUBLISHED_DIR_ENV} to point at it"
        )
    return directory


def load_published(paper: str | None = None) -> pd.DataFrame:
    """All validated published numbers, or those of one `paper` (privae, lvae, p3gm, dp2vae).

    String columns hold "" where empty; `epsilon`, `delta` are NaN where empty (non-private, or not
    applicable) and `value` is never empty. Raises ValueError naming file and row on any bad row.
    """
    if paper is not None and paper not in PAPERS:
        raise ValueError(f"paper must be one of {PAPERS} or None, got {paper!r}")
    directory = published_dir()
    frames = [_read_numeric_file(directory / f"{name}.csv") for name in PAPERS if paper in (None, name)]
    return pd.concat(frames, ignore_index=True)


def published_text_table(name: str) -> pd.DataFrame:
    """A validated text-only table: `p3gm_table1` (feature, method, ✓/–, footnote) or `p3gm_table2`."""
    if name not in TEXT_TABLES:
        raise ValueError(f"name must be one of {sorted(TEXT_TABLES)}, got {name!r}")
    path = published_dir() / f"{name}.csv"
    table = _read_strings(path, TEXT_TABLES[name])
    required = ("feature", "method", "value") if name == "p3gm_table1" else TEXT_TABLES[name]
    checks = [(table[col] == "", f"{col} is empty") for col in required]
    if name == "p3gm_table1":
        checks += [
            (~table["value"].isin(TABLE1_MARKS), "value {value!r} is not ✓ or –"),
            (~table["method"].isin(known_methods("p3gm")), "unknown method {method!r}"),
        ]
    _raise_if(_failures(path, table, checks))
    return table


def load_causes(published: pd.DataFrame) -> pd.DataFrame:
    """The validated rows of `causes.csv` (strings; `*` = any value in a key column), with `cells`: the positions
    of the rows of `published` (every paper's cells) each one names.

    Raises ValueError naming file and row for a cause outside `CAUSES`, evidence not of the form
    `docs/<file>.md#<anchor>`, a row that names no published cell, or two rows naming one. Whether the anchor is a
    heading of the file is `evidence_resolves` (the docs are not part of a build's inputs).
    """
    path = published_dir() / CAUSES_FILE
    table = _read_strings(path, CAUSE_COLUMNS)
    epsilon = pd.to_numeric(table["epsilon"].where(~table["epsilon"].isin(["", WILDCARD])), errors="coerce")
    _raise_if(
        _failures(
            path,
            table,
            [
                (~table["cause"].isin(CAUSES), f"cause {{cause!r}} is not one of {sorted(CAUSES)}"),
                (~table["evidence"].str.fullmatch(_EVIDENCE), "evidence {evidence!r} is not docs/<file>.md#<anchor>"),
                (~table["study"].str.fullmatch(_STUDIES), "study {study!r} is not study names separated by spaces"),
                (
                    ~table["epsilon"].isin(["", WILDCARD]) & ~(epsilon > 0),
                    "epsilon {epsilon!r} is not empty, * or a number > 0",
                ),
            ],
        )
    )
    return _naming_cells(path, table, published)


def load_blocked(published: pd.DataFrame) -> pd.DataFrame:
    """The validated rows of `blocked.csv` (strings; `*` = any value in a key column): the published cells no run of
    this project can fill here, each with its `reason` (the data are not reachable; the cell is another reference's
    own protocol), and `cells`: the positions of the rows of `published` each one names. Raises ValueError naming
    file and row for an empty reason, a row that names no published cell, or two rows naming one."""
    path = published_dir() / BLOCKED_FILE
    table = _read_strings(path, BLOCKED_COLUMNS)
    _raise_if(_failures(path, table, [(table["reason"] == "", "reason is empty")]))
    return _naming_cells(path, table, published)


def _naming_cells(path: Path, table: pd.DataFrame, published: pd.DataFrame) -> pd.DataFrame:
    """`table` (rows keyed like published cells, `*` = any value) with `cells`: the rows of `published` each names;
    ValueError where a row names none or two rows name one."""
    table["cells"] = [np.flatnonzero(cause_matches(row, published)) for _, row in table.iterrows()]
    problems = _failures(path, table, [(table["cells"].map(len) == 0, "names no published cell")])
    for (i, first), (j, second) in itertools.combinations(table["cells"].items(), 2):
        if shared := np.intersect1d(first, second).tolist():
            key = dict(published.iloc[shared[0]][list(KEY_COLUMNS)])
            problems.append(f"{path.name}: rows {i + 1} and {j + 1} both name {len(shared)} cell(s), e.g. {key}")
    _raise_if(problems)
    return table


def cause_matches(row: pd.Series, cells: pd.DataFrame) -> np.ndarray:
    """Which of `cells` (published key columns, epsilon a float) the cause `row` (or a blocked.csv row) names."""
    match = np.ones(len(cells), dtype=bool)
    for column in KEY_COLUMNS:
        want = row[column]
        if want == WILDCARD:
            continue
        have = cells[column]
        if column == "epsilon":
            have = have.astype(float)
            match &= have.isna().to_numpy() if want == "" else np.isclose(have, float(want))
        else:
            match &= (have.fillna("") == want).to_numpy()
    return match


def heading_anchors(markdown: str) -> set[str]:
    """The anchors GitHub gives the headings of a Markdown text (lowercased, punctuation dropped, spaces to
    hyphens, `-1`, `-2`… on repeats); lines inside code fences are not headings."""
    anchors, seen, fenced = set(), {}, False
    for line in markdown.splitlines():
        fenced ^= line.startswith("```")
        heading = None if fenced else re.match(r"^#{1,6}\s+(.+?)\s*$", line)
        if heading:
            slug = re.sub(r"[^\w\- ]", "", heading[1].lower()).replace(" ", "-")
            anchors.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
            seen[slug] = seen.get(slug, 0) + 1
    return anchors


def evidence_resolves(evidence: str) -> bool:
    """Whether `docs/<file>.md#<anchor>` names a file of the repository and the anchor one of its headings."""
    file, _, anchor = evidence.partition("#")
    path = REPO_ROOT / file
    return path.is_file() and anchor in heading_anchors(path.read_text(encoding="utf-8"))


def _read_numeric_file(path: Path) -> pd.DataFrame:
    """Read one paper's CSV, validate every row, return it with float numeric columns."""
    table = _read_strings(path, COLUMNS)
    numbers = pd.DataFrame({col: pd.to_numeric(table[col].where(table[col] != ""), errors="coerce")
                            for col in NUMERIC_COLUMNS})  # fmt: skip
    ranges = pd.DataFrame.from_dict(METRIC_RANGES, orient="index", columns=["low", "high", "integer"])
    context = table.join(ranges, on="metric")
    context["integer"] = context["integer"].astype("boolean").fillna(False).astype(bool)
    problems = _failures(path, context, _row_checks(context, numbers, path.stem))
    duplicated = table.duplicated(list(KEY_COLUMNS), keep=False)
    for key, group in table[duplicated].groupby(list(KEY_COLUMNS), sort=False):
        rows = ", ".join(str(index + 1) for index in group.index)
        problems.append(f"{path.name}: rows {rows} share the key {dict(zip(KEY_COLUMNS, key))}")
    _raise_if(problems)
    table[list(NUMERIC_COLUMNS)] = numbers.astype(float)
    return table


def _row_checks(table: pd.DataFrame, numbers: pd.DataFrame, paper: str) -> list[tuple[pd.Series, str]]:
    """(rows that fail, message template filled from the row) for every per-row rule.

    `table` carries the metric's allowed range in the helper columns `low`, `high`, `integer`.
    """
    epsilon, delta, value = numbers["epsilon"], numbers["delta"], numbers["value"]
    has = {col: table[col] != "" for col in ("epsilon", "delta", "value", "setting", "cited_from")}
    checkable = table["low"].notna() & value.notna()
    return [
        (table["paper"] != paper, "paper {paper!r} does not match the file " + f"{paper}.csv"),
        (~table["item"].isin(ITEMS[paper]), "item {item!r} is not an item id (docs/papers.md §6) of " + paper),
        (~table["dataset"].isin(DATASETS), "unknown dataset {dataset!r}"),
        (
            ~table["method"].isin(known_methods(paper)) & ~has["cited_from"],
            "unknown method {method!r} (not a configured variant's name in this paper, and not cited)",
        ),
        (~table["metric"].isin(METRIC_RANGES), "unknown metric {metric!r}"),
        (~table["classifier"].isin(CLASSIFIERS), "unknown classifier {classifier!r}"),
        (~table["source"].isin(SOURCES), "unknown source {source!r}, expected " + " or ".join(sorted(SOURCES))),
        (has["setting"] & ~table["setting"].str.match(_SETTING), "setting {setting!r} is not key=value"),
        (has["cited_from"] & (table["source"] != "paper"), "cited_from is set but source is {source!r}"),
        (~has["value"], "value is empty"),
        (has["epsilon"] != has["delta"], "epsilon and delta must be both set or both empty"),
        (has["epsilon"] & ~(epsilon > 0), "epsilon {epsilon!r} is not a number > 0"),
        (has["delta"] & ~((delta > 0) & (delta < 1)), "delta {delta!r} is not a number in (0, 1)"),
        (has["value"] & value.isna(), "value {value!r} is not a number"),
        (checkable & ~value.between(table["low"], table["high"]), "{metric} value {value} is outside [{low}, {high}]"),
        (checkable & table["integer"] & (value != value.round()), "{metric} value {value} is not an integer"),
    ]


def _read_strings(path: Path, columns: tuple[str, ...]) -> pd.DataFrame:
    """Read a CSV as strings ("" for empty cells) and check it has exactly `columns`, in order."""
    if not path.is_file():
        raise FileNotFoundError(f"published file {path} does not exist")
    table = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8")
    if tuple(table.columns) != columns:
        raise ValueError(f"{path.name}: columns {list(table.columns)} differ from the expected {list(columns)}")
    return table


def _failures(path: Path, table: pd.DataFrame, checks: list[tuple[pd.Series, str]]) -> list[str]:
    """One message per (failing row, check), naming the file and the row."""
    return [
        f"{_where(path, index + 1)}: {template.format(**table.iloc[index])}"
        for mask, template in checks
        for index in np.flatnonzero(mask.to_numpy())
    ]


def _where(path: Path, row_number: int) -> str:
    """Data row n of a CSV sits on file line n + 1 (after the header)."""
    return f"{path.name} row {row_number} (line {row_number + 1})"


def _raise_if(problems: list[str]) -> None:
    if problems:
        raise ValueError("invalid published data:\n" + "\n".join(problems))
