"""Recorded reproductions and the scorecard: every published cell beside ours, with a verdict.

`record(tables)` turns paper-scale tidy tables (`results/paper/tables/...csv`) into rows of
`reproductions/<paper>.csv` — the published CSV's key columns (paper, item, dataset, method, epsilon,
metric, classifier, setting) plus seed, value and provenance (scale, variant, device, commit, command,
wall_s, date) read from each run's `train.json`. Those files are committed and only ever written by this
command. `scorecard()` lists every published cell with ours (mean ± sd over seeds, n) and a verdict under
stated tolerances. Our ids map to the papers' names by `published_key` (dataset suffixes dropped, variant
aliases, sweep points as `setting`).
"""

from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from dpvae.errors import DataError
from dpvae.files import atomic_write
from dpvae.items import ITEMS, PAPERS
from dpvae.paths import REPO_ROOT
from dpvae.provenance import git_commit
from dpvae.schema import format_eps

REPRODUCTIONS_DIR = REPO_ROOT / "reproductions"
KEY = ("paper", "item", "dataset", "method", "epsilon", "metric", "classifier", "setting")
PROVENANCE = ("scale", "variant", "device", "commit", "command", "wall_s", "date")
COLUMNS = (*KEY, "seed", "value", *PROVENANCE)

# metric -> ("abs" | "rel", tolerance): the scorecard's verdict rule (README, "Scorecard").
TOLERANCES: dict[str, tuple[str, float]] = {
    "auroc": ("abs", 0.03), "auprc": ("abs", 0.03), "tvd2": ("abs", 0.03), "accuracy": ("abs", 0.03),
    "fid": ("rel", 0.15), "epsilon": ("rel", 1e-3),
}
DEFAULT_TOLERANCE = ("rel", 0.0)   # counts, hyper-parameters, dataset statistics: exact

# our variant ids (base, before any '@sweep') -> the papers' method names, per paper
METHOD_ALIASES: dict[str, dict[str, str]] = {
    "p3gm": {"vae-mlp": "vae", "real": "original", "p3gm-efficiency": "p3gm", "p3gm-pca-sweep": "p3gm",
             "p3gm-allocation": "p3gm"},
    "dp2vae": {"dp2vae-nopretrain": "dp2vae", "gs-wgan-nopretrain": "gs-wgan"},
    "lvae": {"lvae-vae": "vae", "lvae-dpsgd": "vae-dpsgd", "lvae-lipschitz": "lvae"},
    "privae": {"vae-sparse": "vae", "privae-pinwheel": "privae", "privae-kl-pinwheel": "privae-kl"},
}
DATASET_SUFFIXES = ("-p3gm", "-32", "-lvae", "-dropna", "-full", "-standin")


def published_dataset(dataset: str) -> tuple[str, str]:
    """Our dataset id -> (the papers' dataset name, a setting it implies): 'twogauss-d20' -> ('twogauss', 'd=20')."""
    if dataset.startswith("twogauss-d"):
        return "twogauss", f"d={dataset.removeprefix('twogauss-d')}"
    for suffix in DATASET_SUFFIXES:
        dataset = dataset.removesuffix(suffix)
    return ("celeba" if dataset == "celeba32" else dataset), ""


# (paper, item) -> setting of a variant the item's published cells distinguish (ablations)
ITEM_SETTINGS = {
    ("dp2vae", "fig5"): lambda base: f"pretrain={'false' if base.endswith('-nopretrain') else 'true'}",
    ("dp2vae", "fig4"): lambda base: f"pretrain={'false' if base.endswith('-nopretrain') else 'true'}",
}


def published_key(paper: str, item: str, row: pd.Series) -> dict:
    """The published key columns of one tidy row of `paper`, as item `item` shows it."""
    base, _, point = str(row["variant"]).partition("@")
    dataset, implied = published_dataset(str(row["dataset"]))
    settings = [s for s in (implied, point) if s]
    if (paper, item) in ITEM_SETTINGS:
        settings.append(ITEM_SETTINGS[(paper, item)](base))
    epsilon = row.get("epsilon")
    return {"paper": paper, "item": item, "dataset": dataset, "method": METHOD_ALIASES.get(paper, {}).get(base, base),
            "epsilon": float(epsilon) if pd.notna(epsilon) else np.nan, "metric": row["metric"],
            "classifier": "" if pd.isna(row.get("classifier")) else str(row["classifier"]),
            "setting": ";".join(settings)}


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
    train = results / "runs" / str(row["dataset"]) / str(row["variant"]) / f"eps{eps}" / f"seed{int(row['seed'])}" / "train.json"
    if not train.is_file():
        raise DataError(f"{train}: missing; record only tables whose runs are in this checkout's results/")
    meta = json.loads(train.read_text())
    date = dt.datetime.fromtimestamp(train.stat().st_mtime, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"device": meta.get("device_name", meta.get("device", "")), "commit": meta.get("commit", ""),
            "wall_s": meta.get("seconds", np.nan), "date": date}


def reproduction_rows(table_path: str | Path, command: str) -> pd.DataFrame:
    """Rows for `reproductions/<paper>.csv` from one paper-scale tidy table (one per item reading it)."""
    path = Path(table_path)
    scale, experiment = _experiment_of(path)
    if scale != "paper":
        raise DataError(f"{path}: built at scale '{scale}'; only paper-scale results are recorded")
    items = [i for i in ITEMS.values() if experiment in i.experiments]
    if not items:
        raise DataError(f"{path}: no item reads experiment '{experiment}'")
    table = pd.read_csv(path)
    table = table[~table["metric"].astype(str).str.startswith("epsilon_spent")] if "metric" in table else table
    results = next(p for p in path.resolve().parents if p.name == "tables").parent
    rows = []
    for _, row in table.iterrows():
        has_run = pd.notna(row.get("seed")) and pd.notna(row.get("variant"))
        provenance = _run_provenance(results, row) if has_run else {
            "device": "", "commit": git_commit(), "wall_s": np.nan,
            "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
        for item in items:
            rows.append({**published_key(item.paper, item.id, row), "seed": row.get("seed"), "value": row["value"], "scale": scale,
                         "variant": row.get("variant", ""), "command": command, **provenance})
    return pd.DataFrame(rows, columns=list(COLUMNS))


def record(tables: list[str | Path], command: str, out_dir: str | Path | None = None) -> list[Path]:
    """Merge the rows of `tables` into reproductions/<paper>.csv (same key + seed replaced); return the files."""
    out = Path(out_dir) if out_dir else REPRODUCTIONS_DIR
    new = pd.concat([reproduction_rows(t, command) for t in tables], ignore_index=True)
    written = []
    for paper, rows in new.groupby("paper"):
        path = out / f"{paper}.csv"
        old = read_reproductions(path)
        merged = pd.concat([old, rows], ignore_index=True)
        merged = merged.drop_duplicates(subset=[*KEY, "seed", "variant"], keep="last")
        merged = merged.sort_values([*KEY, "seed"], na_position="first", kind="stable")
        atomic_write(path, lambda tmp, m=merged: m.to_csv(tmp, index=False, float_format="%.10g"))
        written.append(path)
    return written


def read_reproductions(path: Path) -> pd.DataFrame:
    if not path.is_file():
        return pd.DataFrame(columns=list(COLUMNS))
    frame = pd.read_csv(path, dtype={"classifier": str, "setting": str, "item": str}, keep_default_na=True)
    if tuple(frame.columns) != COLUMNS:
        raise DataError(f"{path}: columns {list(frame.columns)} differ from {list(COLUMNS)}; "
                        "write it only with `python -m dpvae record`")
    return frame.fillna({"classifier": "", "setting": ""})


def _verdict(metric: str, paper_value: float, mean: float, n: int, cited: bool) -> tuple[float, str]:
    if cited:
        return np.nan, "cited (not run)"
    if n == 0:
        return np.nan, "not reproduced"
    kind, tol = TOLERANCES.get(metric, DEFAULT_TOLERANCE)
    diff = mean - paper_value
    bound = tol if kind == "abs" else tol * abs(paper_value)
    return diff, ("within tolerance" if abs(diff) <= bound + 1e-12 else "outside tolerance")


def scorecard(paper: str | None = None, reproductions_dir: str | Path | None = None) -> pd.DataFrame:
    """Every published numeric cell (of one paper or all four) with ours and a verdict."""
    from dpvae.render.published import load_published

    published = load_published(paper)
    directory = Path(reproductions_dir) if reproductions_dir else REPRODUCTIONS_DIR
    ours = pd.concat([read_reproductions(directory / f"{p}.csv") for p in PAPERS if paper in (None, p)],
                     ignore_index=True)
    groups = {}
    if len(ours):
        ours["epsilon"] = pd.to_numeric(ours["epsilon"], errors="coerce")
        for key, rows in ours.groupby(["paper", "item", "dataset", "method", "metric", "classifier", "setting"]):
            groups.setdefault(key, []).append(rows)
    lines = []
    for _, cell in published.iterrows():
        key = (cell["paper"], cell["item"], cell["dataset"], cell["method"], cell["metric"], cell["classifier"],
               cell["setting"])
        candidates = pd.concat(groups.get(key, [pd.DataFrame(columns=list(COLUMNS))]), ignore_index=True)
        eps = cell["epsilon"]
        match = candidates[np.isclose(candidates["epsilon"].astype(float), eps)] if not math.isnan(eps) else \
            candidates[candidates["epsilon"].isna()]
        values = match["value"].astype(float)
        n = int(values.notna().sum())
        mean = float(values.mean()) if n else np.nan
        sd = float(values.std(ddof=1)) if n > 1 else np.nan
        diff, verdict = _verdict(cell["metric"], float(cell["value"]), mean, n, bool(cell["cited_from"]))
        lines.append({**{k: cell[k] for k in KEY}, "source": cell["source"], "paper_value": cell["value"],
                      "ours_mean": mean, "ours_sd": sd, "n": n, "difference": diff, "verdict": verdict,
                      "devices": ";".join(sorted(set(match["device"].dropna().astype(str)))) if n else ""})
    return pd.DataFrame(lines)


def item_summary(card: pd.DataFrame) -> dict[str, str]:
    """'<paper>/<item>' -> 'k/n cells within tolerance' (n = published cells that are not only cited)."""
    summary = {}
    for (paper, item), rows in card.groupby(["paper", "item"]):
        runnable = rows[rows["verdict"] != "cited (not run)"]
        if runnable.empty:
            continue
        done = (runnable["verdict"] != "not reproduced").sum()
        within = (runnable["verdict"] == "within tolerance").sum()
        summary[f"{paper}/{item}"] = (f"{within}/{len(runnable)} within tolerance" if done
                                      else f"0/{len(runnable)} reproduced")
    return summary


def write_scorecard(card: pd.DataFrame, out: str | Path) -> None:
    """`out` = <prefix>.csv or <prefix>.pdf: writes both, the PDF one table page per paper."""
    prefix = Path(out).with_suffix("")
    atomic_write(f"{prefix}.csv", lambda tmp: card.to_csv(tmp, index=False, float_format="%.6g"))
    from matplotlib.backends.backend_pdf import PdfPages

    from dpvae.render.output import pyplot, table_figure

    shown = card.assign(ours=[("" if n == 0 else f"{m:.4g}" + ("" if np.isnan(s) else f" ± {s:.2g}") + f" (n={n})")
                              for m, s, n in zip(card["ours_mean"], card["ours_sd"], card["n"])])
    columns = ["item", "dataset", "method", "epsilon", "metric", "classifier", "setting", "source", "paper_value",
               "ours", "verdict"]

    def write(tmp: str) -> None:
        with PdfPages(tmp) as pdf:
            for paper, rows in shown.groupby("paper", sort=False):
                for start in range(0, len(rows), 45):
                    page = rows.iloc[start:start + 45][columns]
                    counts = rows["verdict"].value_counts().to_dict()
                    fig = table_figure(page, f"Scorecard - {paper} (rows {start + 1}-{start + len(page)} of {len(rows)})",
                                       [", ".join(f"{k}: {v}" for k, v in sorted(counts.items())),
                                        "Tolerances: AUROC/AUPRC/TVD/accuracy +-0.03 absolute, FID +-15 % relative, "
                                        "epsilon exact (1e-3), counts and settings exact."])
                    pdf.savefig(fig)
                    pyplot().close(fig)

    atomic_write(f"{prefix}.pdf", write)
