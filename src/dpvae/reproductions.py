"""Recorded reproductions: paper-scale numbers in `reproductions/<paper>.csv`, written only by `record`.

`record(tables)` turns paper-scale tidy tables (`results/paper/tables/...csv`) into rows with the published
CSV's key columns (paper, item, dataset, method, epsilon, metric, classifier, setting) plus seed, value, `not_dp`
(why the run's release is not differentially private, from its ledger `privacy.json`; empty for a DP run and for a
non-private one) and provenance (scale, variant, device, commit, command, wall_s, date) read from each run's
`train.json`.
Those files are committed. A table of an experiment no paper item reads (a design study, e.g. DP²-VAE's T_p
study) goes to `reproductions/studies/<experiment>.csv` instead, keyed by our own ids (`STUDY_KEY`) with the
same provenance. Our ids map to the papers' names by `published_key` (each dataset's `published_as` name in the
data registry, each variant's `published_as` name in config.yaml, sweep points and a series' `step` as `setting`);
a run on a `-refcode` dataset (P3GM's reference code's preprocessing, not DP) keeps the suffix (`adult-refcode`), and
`cell_dataset` names the published cell it stands for.
A series longer than `MAX_STEPS` steps per run (Fig. 7's reconstruction loss at every iteration) is recorded at
`MAX_STEPS` evenly spaced steps, first and last included; the whole series stays in the run's table. Renderers read
them (`recorded`) for their "ours (paper scale)" column; `dpvae.scorecard` sets them beside every published cell.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd

from dpvae.analyses.tidy import NOT_DP_METRIC
from dpvae.data.registry import REFERENCE_SUFFIX, get_dataset
from dpvae.errors import DataError, TargetError
from dpvae.files import atomic_write
from dpvae.items import ITEMS, PAPERS
from dpvae.paths import REPO_ROOT, RESULTS, campaign_overlay, command_words, ledger_file, run_id, train_record
from dpvae.provenance import changed_files, git_commit, names_a_commit, on_code_path
from dpvae.runs import split_variant
from dpvae.schema import format_eps, read_config
from dpvae.seeds import seed_summary

REPRODUCTIONS_DIR = REPO_ROOT / "reproductions"
KEY = ("paper", "item", "dataset", "method", "epsilon", "metric", "classifier", "setting")
PROVENANCE = ("scale", "variant", "device", "commit", "command", "wall_s", "date")
COLUMNS = (*KEY, "seed", "value", "not_dp", *PROVENANCE)
STUDY_KEY = ("experiment", "dataset", "method", "variant", "setting", "epsilon", "metric", "classifier")
STUDY_COLUMNS = (*STUDY_KEY, "seed", "value", "not_dp", *(c for c in PROVENANCE if c != "variant"))

MAX_STEPS = 100  # steps recorded per series and run (see the module docstring)


@functools.cache
def configured_variants() -> dict[str, dict]:
    """The variants of the repository's config.yaml (paper scale): where `published_as` names live."""
    return read_config([REPO_ROOT / "config.yaml"])["variants"]


def published_method(paper: str, variant: str, variants: dict[str, dict] | None = None) -> str:
    """The method id `paper`'s published numbers use for our `variant` (a sweep id counts as its base): the
    variant's `published_as` entry for the paper (in `variants`, else in config.yaml), else its own name."""
    base = split_variant(variant)[0]
    entry = (variants or {}).get(base) or configured_variants().get(base) or {}
    return entry.get("published_as", {}).get(paper, base)


def published_dataset(dataset: str) -> tuple[str, str]:
    """Our dataset id -> (the papers' dataset name, a setting it implies), as the data registry gives them
    (`DatasetSpec.published_as`, `published_setting`): 'mnist-p3gm' -> ('mnist', ''), 'twogauss-d20' ->
    ('twogauss', 'd=20'); a name the registry does not know (a paper's own, a dataset declared in the config) is
    its own."""
    try:
        spec = get_dataset(dataset)
    except TargetError:
        return dataset, ""
    return spec.published_as, spec.published_setting


def recorded_dataset(dataset: str) -> str:
    """The dataset column of a recorded row for our dataset id: the papers' name, `-refcode` kept (P3GM's reference
    code's preprocessing is not the published data's public domain: 'adult-refcode' stays 'adult-refcode')."""
    name = published_dataset(dataset)[0]
    return name + REFERENCE_SUFFIX if dataset.endswith(REFERENCE_SUFFIX) else name


def cell_dataset(recorded: str) -> str:
    """The published cell's dataset a recorded row's dataset stands for ('adult-refcode' -> 'adult')."""
    return recorded.removesuffix(REFERENCE_SUFFIX)


# (paper, item) -> setting of a variant the item's published cells distinguish (ablations)
ITEM_SETTINGS = {
    ("dp2vae", "fig5"): lambda base: f"pretrain={'false' if base.endswith('-nopretrain') else 'true'}",
    ("dp2vae", "fig4"): lambda base: f"pretrain={'false' if base.endswith('-nopretrain') else 'true'}",
}


def published_key(paper: str, item: str, row: pd.Series) -> dict:
    """The published key columns of one tidy row of `paper`, as item `item` shows it."""
    base, sweep_point = split_variant(str(row["variant"]))
    point = "=".join(sweep_point) if sweep_point else ""
    implied = published_dataset(str(row["dataset"]))[1]
    dataset = recorded_dataset(str(row["dataset"]))
    settings = [s for s in (implied, point) if s]
    if (paper, item) in ITEM_SETTINGS:
        settings.append(ITEM_SETTINGS[(paper, item)](base))
    metric = str(row["metric"])
    if metric == "auprc_flipped":  # Adult's AUPRC with the other class positive: '<=50K' (A-G2) at the default
        metric, settings = "auprc", [*settings, "positive=le50K"]
    if metric == "tvd2_public_notebook":  # P3GM Table VIII as the notebook computes it (A-G10)
        metric, settings = "tvd2", [*settings, "reading=notebook"]
    if pd.notna(row.get("step")):  # a point of a series (learning curves): one key per step
        settings.append(f"step={int(row['step'])}")
    epsilon = row.get("epsilon")
    return {
        "paper": paper,
        "item": item,
        "dataset": dataset,
        "method": published_method(paper, base),
        "epsilon": float(epsilon) if pd.notna(epsilon) else np.nan,
        "metric": metric,
        "classifier": "" if pd.isna(row.get("classifier")) else str(row["classifier"]),
        "setting": ";".join(settings),
    }


def _experiment_of(table: Path) -> tuple[str, str]:
    """results/<scale>/tables/<experiment>[/<dataset>[/<variant>]].csv -> (scale, experiment)."""
    parts = table.resolve().parts
    try:
        i = len(parts) - 1 - parts[::-1].index("tables")
    except ValueError:
        raise DataError(f"{table}: not a tidy table under results/<scale>/tables/") from None
    return parts[i - 1], (parts[i + 1] if i + 2 < len(parts) else Path(parts[i + 1]).stem)


def _run_provenance(results: Path, row: pd.Series) -> dict:
    eps = format_eps(row["epsilon"]) if pd.notna(row["epsilon"]) else "inf"
    train = train_record(results / "runs" / run_id(str(row["dataset"]), str(row["variant"]), eps, int(row["seed"])))
    if not train.is_file():
        raise DataError(f"{train}: missing; record only tables whose runs are in this checkout's {RESULTS}/")
    meta = json.loads(train.read_text())
    date = dt.datetime.fromtimestamp(train.stat().st_mtime, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    ledger = ledger_file(train.parent)
    return {
        "not_dp": (json.loads(ledger.read_text()).get("not_dp") or "") if ledger.is_file() else "",
        "device": meta.get("device_name", meta.get("device", "")),
        "commit": meta.get("commit", ""),
        "wall_s": meta.get("seconds", np.nan),
        "date": date,
    }


def _paper_table(table_path: str | Path) -> tuple[Path, str, pd.DataFrame]:
    """(path, experiment, its rows without epsilon_spent and the not-DP mark, series thinned) of a paper-scale tidy
    table (a row's `not_dp` is read from its run's ledger, with the reason)."""
    path = Path(table_path)
    scale, experiment = _experiment_of(path)
    if scale != "paper":
        raise DataError(f"{path}: built at scale '{scale}'; only paper-scale results are recorded")
    table = pd.read_csv(path)
    if "metric" in table:
        metric = table["metric"].astype(str)
        table = table[~metric.str.startswith("epsilon_spent") & (metric != NOT_DP_METRIC)]
    return path, experiment, thin_series(table)


def _rows_with_provenance(path: Path, table: pd.DataFrame):
    """(row, provenance) for each row of `table`: the run's `train.json`, or this checkout for a row of no run."""
    results = next(p for p in path.resolve().parents if p.name == "tables").parent
    for _, row in table.iterrows():
        has_run = pd.notna(row.get("seed")) and pd.notna(row.get("variant"))
        yield (
            row,
            (
                _run_provenance(results, row)
                if has_run
                else {
                    "not_dp": "",
                    "device": "",
                    "commit": git_commit(),
                    "wall_s": np.nan,
                    "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                }
            ),
        )


def _items_reading(experiment: str) -> list:
    return [i for i in ITEMS.values() if experiment in i.experiments]


def reproduction_rows(table_path: str | Path, command: str) -> pd.DataFrame:
    """Rows for `reproductions/<paper>.csv` from one paper-scale tidy table (one per item reading it)."""
    path, experiment, table = _paper_table(table_path)
    items = _items_reading(experiment)
    if not items:
        raise DataError(f"{path}: no item reads experiment '{experiment}'")
    rows = []
    for row, provenance in _rows_with_provenance(path, table):
        for item in items:
            if not shows(item, str(row["dataset"])):
                continue
            rows.append(
                {
                    **published_key(item.paper, item.id, row),
                    "seed": row.get("seed"),
                    "value": row["value"],
                    "scale": "paper",
                    "variant": row.get("variant", ""),
                    "command": command,
                    **provenance,
                }
            )
    return pd.DataFrame(rows, columns=list(COLUMNS))


def shows(item, dataset: str) -> bool:
    """Whether `item` shows our dataset id or the papers' dataset name `dataset` (an item may restrict its
    experiments to some datasets: dp2vae/fig3 shows dp2vae_eps1's CelebA runs only)."""
    if not item.datasets:
        return True
    dataset = cell_dataset(dataset)
    return dataset in item.datasets or dataset in {published_dataset(d)[0] for d in item.datasets}


def thin_series(table: pd.DataFrame) -> pd.DataFrame:
    """`table` with every series (rows with a `step`) cut to `MAX_STEPS` evenly spaced steps per run and metric."""
    if "step" not in table or table["step"].isna().all():
        return table
    series = table[table["step"].notna()]
    keys = [c for c in ("dataset", "variant", "epsilon", "seed", "metric", "classifier") if c in table]

    def evenly(group: pd.DataFrame) -> pd.DataFrame:
        group = group.sort_values("step")
        keep = np.unique(np.linspace(0, len(group) - 1, min(len(group), MAX_STEPS)).round().astype(int))
        return group.iloc[keep]

    thinned = [evenly(group) for _, group in series.groupby(keys, dropna=False, sort=False)]
    return pd.concat([table[table["step"].isna()], *thinned]).sort_index()


def check_tree(command: str) -> None:
    """Refuse (DataError) to record from a checkout where a file on a recorded job's path is modified or untracked
    (`provenance.on_code_path`: src/, workflow/, envs/, Snakefile, config.yaml and the files `command` names, such
    as its campaign overlay): the commit recorded would not name the code. Other changes pass; so does a tree
    outside git (its commit reads 'unknown')."""
    try:
        files = changed_files()
    except (OSError, subprocess.SubprocessError):
        return
    named = sorted(command_words(command))
    if changed := on_code_path(files, named):
        shown = ", ".join(changed[:10]) + (f" and {len(changed) - 10} more" if len(changed) > 10 else "")
        raise DataError(
            f"record: {len(changed)} file(s) on the recorded jobs' path differ from the commit: {shown}; commit or "
            "revert them first (changes under docs/, tests/, reproductions/ and README may stay)"
        )


def record(
    tables: list[str | Path], command: str, out_dir: str | Path | None = None, replaces: tuple[str, ...] = ()
) -> list[Path]:
    """Merge the rows of `tables` into reproductions/<paper>.csv, or reproductions/studies/<experiment>.csv for an
    experiment no item reads (same key + seed replaced); return the files. `replaces`: campaign overlays of an
    earlier protocol for the same cells -- every row of a recorded key and variant whose command names one of them
    goes, whatever its seed, so that no cell mixes the seeds of two protocols. Refused from a checkout whose code
    differs from its commit (`check_tree`)."""
    out = Path(out_dir) if out_dir else REPRODUCTIONS_DIR
    studies = [t for t in tables if not _items_reading(_experiment_of(Path(t))[1])]
    study_frames = [(t, study_rows(t, command)) for t in studies]  # every table read before anything is written
    papers = [reproduction_rows(t, command) for t in tables if t not in studies]
    check_tree(command)
    new = pd.concat(papers, ignore_index=True) if papers else pd.DataFrame(columns=list(COLUMNS))
    written = [_record_study(t, rows, out) for t, rows in study_frames]
    for paper, rows in new.groupby("paper"):
        path = out / f"{paper}.csv"
        old = read_reproductions(path)
        merged = pd.concat([old[~_superseded(old, rows, replaces)], rows], ignore_index=True)
        _write(path, merged.drop_duplicates(subset=[*KEY, "seed", "variant"], keep="last"))
        written.append(path)
    return written


def _superseded(old: pd.DataFrame, new: pd.DataFrame, replaces: tuple[str, ...]) -> pd.Series:
    """Rows of `old` with a key and variant among `new`'s whose command names an overlay in `replaces`."""
    named = {campaign_overlay(path) for path in replaces}

    def keys(frame: pd.DataFrame) -> pd.Series:  # epsilon as read back (1) and as built (1.0) alike
        eps = pd.to_numeric(frame["epsilon"], errors="coerce").map(lambda e: "" if pd.isna(e) else f"{e:g}")
        return frame[[*KEY, "variant"]].assign(epsilon=eps).astype(object).fillna("").astype(str).agg("|".join, axis=1)

    if old.empty or not named:
        return pd.Series(False, index=old.index)
    by_overlay = [bool(command_words(str(command)) & named) for command in old["command"].fillna("")]
    return pd.Series(by_overlay, index=old.index, dtype=bool) & keys(old).isin(set(keys(new)))


def study_rows(table_path: str | Path, command: str) -> pd.DataFrame:
    """Rows for `reproductions/studies/<experiment>.csv` from a paper-scale tidy table no item reads."""
    path, experiment, table = _paper_table(table_path)
    rows = []
    for row, provenance in _rows_with_provenance(path, table):
        base, point = split_variant(str(row["variant"]))
        epsilon = row.get("epsilon")
        rows.append(
            {
                "experiment": experiment,
                "dataset": row["dataset"],
                "method": row.get("method", ""),
                "variant": base,
                "setting": "=".join(point) if point else "",
                "epsilon": float(epsilon) if pd.notna(epsilon) else np.nan,
                "metric": row["metric"],
                "classifier": "" if pd.isna(row.get("classifier")) else str(row["classifier"]),
                "seed": row.get("seed"),
                "value": row["value"],
                "scale": "paper",
                "command": command,
                **{k: provenance[k] for k in ("not_dp", "device", "commit", "wall_s", "date")},
            }
        )
    return pd.DataFrame(rows, columns=list(STUDY_COLUMNS))


def _record_study(table: str | Path, rows: pd.DataFrame, out: Path) -> Path:
    """Merge one study table's `rows` into `out`/studies/<experiment>.csv (same key + seed replaced)."""
    path = out / "studies" / f"{_experiment_of(Path(table))[1]}.csv"
    text = {"classifier": "", "setting": "", "not_dp": ""}
    return _merge_into(path, rows, [*STUDY_KEY, "seed"], read_as=dict.fromkeys(text, str), fill=text)


def _merge_into(
    path: Path, rows: pd.DataFrame, key: list[str], read_as: dict | None = None, fill: dict | None = None
) -> Path:
    """Write `path` (a CSV, read with dtypes `read_as`) with `rows` merged in -- a row of `rows` replaces an old one
    with the same `key` columns, `fill`'s empty values counted as given -- sorted by `key`, atomically."""
    old = pd.read_csv(path, dtype=read_as) if path.is_file() else None
    merged = pd.concat([f for f in (old, rows) if f is not None and not f.empty], ignore_index=True)
    frame = merged.fillna(fill or {}).drop_duplicates(key, keep="last").sort_values(key, kind="stable")
    atomic_write(path, lambda tmp: frame.to_csv(tmp, index=False, float_format="%.10g"))
    return path


#: the columns a campaign script's own measurements carry (`record_measured`)
MEASURED_PROVENANCE = ("device", "commit", "command", "date")


def record_measured(table: str | Path, study: str, out_dir: str | Path | None = None) -> Path:
    """Merge a campaign script's own measurements (a CSV with `MEASURED_PROVENANCE` columns, such as
    workflow/campaigns/dp2vae_real_fid.py's) into reproductions/studies/<study>.csv, a row with the same text columns
    (the case measured) replaced. Refused, before anything is written, where a column is missing or a row's commit
    does not name code in this repository (unknown, `-dirty`, or no such commit)."""
    table = Path(table)
    if not table.is_file():
        raise DataError(f"record: {table} does not exist")
    rows = pd.read_csv(table, dtype={"commit": str})
    if missing := [c for c in MEASURED_PROVENANCE if c not in rows.columns]:
        raise DataError(f"record: {table} lacks the provenance column(s) {', '.join(missing)}")
    for commit in sorted(set(rows["commit"].fillna("unknown"))):
        if not names_a_commit(commit):
            raise DataError(f"record: {table} has rows of commit {commit!r}, which names no commit of this repository")
    path = (Path(out_dir) if out_dir else REPRODUCTIONS_DIR) / "studies" / f"{study}.csv"
    case = [c for c in rows.columns if c not in MEASURED_PROVENANCE and not pd.api.types.is_numeric_dtype(rows[c])]
    return _merge_into(path, rows, case, read_as={"commit": str})


def prune(out_dir: str | Path | None = None) -> dict[Path, int]:
    """Rewrite each reproductions/<paper>.csv without the rows filed under an item that does not show their
    dataset (`shows`; written by a `record` before it checked); {file: rows dropped} of the files changed."""
    out = Path(out_dir) if out_dir else REPRODUCTIONS_DIR
    dropped = {}
    for paper in PAPERS:
        path = out / f"{paper}.csv"
        if path.is_file() and (n := len(frame := read_reproductions(path)) - len(_shown(frame))):
            _write(path, frame)
            dropped[path] = n
    return dropped


def _shown(frame: pd.DataFrame) -> pd.DataFrame:
    keep = [shows(ITEMS[f"{p}/{i}"], d) for p, i, d in zip(frame["paper"], frame["item"], frame["dataset"])]
    return frame[keep]


def _write(path: Path, frame: pd.DataFrame) -> None:
    """reproductions/<paper>.csv: the rows an item shows, sorted by key and seed, written atomically."""
    frame = _shown(frame).sort_values([*KEY, "seed"], na_position="first", kind="stable")
    atomic_write(path, lambda tmp: frame.to_csv(tmp, index=False, float_format="%.10g"))


def read_reproductions(path: Path) -> pd.DataFrame:
    if not path.is_file():
        return pd.DataFrame(columns=list(COLUMNS))
    text = {"classifier": str, "setting": str, "item": str, "not_dp": str}
    frame = pd.read_csv(path, dtype=text, keep_default_na=True)
    if tuple(frame.columns) != COLUMNS:
        raise DataError(
            f"{path}: columns {list(frame.columns)} differ from {list(COLUMNS)}; "
            "write it only with `python -m dpvae record`"
        )
    return frame.fillna({"classifier": "", "setting": "", "not_dp": ""})


def read_all(reproductions_dir: str | Path | None = None, paper: str | None = None) -> pd.DataFrame:
    """Every recorded row (of one paper or all), epsilon as float."""
    directory = Path(reproductions_dir) if reproductions_dir else REPRODUCTIONS_DIR
    frame = pd.concat(
        [read_reproductions(directory / f"{p}.csv") for p in PAPERS if paper in (None, p)], ignore_index=True
    )
    frame["epsilon"] = pd.to_numeric(frame["epsilon"], errors="coerce")
    return frame


#: the mark beside a recorded number whose release is not DP (a row with `not_dp`); `not_dp_notes` gives the reasons
NOT_DP_MARK = "\u2020"
_REASONS = " | "


def not_dp_reasons(values: pd.Series) -> str:
    """The distinct non-empty `not_dp` reasons of some recorded rows, sorted, joined by ' | ' ('' for none)."""
    return _REASONS.join(sorted({r for v in values.dropna() for r in str(v).split(_REASONS) if r}))


def not_dp_notes(values: pd.Series) -> list[str]:
    """One footnote per distinct reason among `values` (`not_dp` cells of rows or of `not_dp_reasons`), in order:
    '† not DP (the run's ledger): <reason>'."""
    reasons = not_dp_reasons(values)
    return [
        f"{NOT_DP_MARK} not DP (the run's ledger): {r.removeprefix('not DP: ')}" for r in reasons.split(_REASONS) if r
    ]


def recorded(paper: str, item: str, reproductions_dir: str | Path | None = None) -> pd.DataFrame:
    """An item's recorded paper-scale cells: key columns + mean, sd, n over seeds, the devices and the `not_dp`
    reasons of its rows (`not_dp_reasons`: '' where every row is DP or non-private)."""
    rows = read_all(reproductions_dir, paper)
    rows = rows[rows["item"] == item].assign(value=lambda f: f["value"].astype(float))
    keys = [k for k in KEY if k != "epsilon"] + ["epsilon"]
    if rows.empty:
        return pd.DataFrame(columns=[*keys, "mean", "sd", "n", "devices", "not_dp"])
    grouped = rows.groupby(keys, dropna=False)
    devices = grouped["device"].agg(lambda d: ";".join(sorted(set(d.dropna().astype(str)))))
    not_dp = grouped["not_dp"].agg(not_dp_reasons)
    return seed_summary(rows, keys, sort=True).assign(devices=devices.to_numpy(), not_dp=not_dp.to_numpy())
