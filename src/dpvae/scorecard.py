"""The scorecard: every published cell beside the recorded reproductions, with a verdict.

Ours = mean ± sd over the seeds recorded in `reproductions/<paper>.csv` (`dpvae.reproductions`); the
verdict follows stated tolerances (`TOLERANCES`); cells a paper only cites are marked, not judged.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from dpvae.files import atomic_write
from dpvae.reproductions import COLUMNS, KEY, read_all

# metric -> ("abs" | "rel", tolerance): the scorecard's verdict rule (README, "Scorecard").
TOLERANCES: dict[str, tuple[str, float]] = {
    "auroc": ("abs", 0.03), "auprc": ("abs", 0.03), "tvd2": ("abs", 0.03), "accuracy": ("abs", 0.03),
    "fid": ("rel", 0.15), "epsilon": ("rel", 1e-3),
}
DEFAULT_TOLERANCE = ("rel", 0.0)   # counts, hyper-parameters, dataset statistics: exact

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
    ours = read_all(reproductions_dir, paper)
    groups = {}
    if len(ours):
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
