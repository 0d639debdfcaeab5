"""figures/experiments/<experiment>.pdf (+ .csv, .tex): one table for any experiment, paper or not.

Long format, one row per dataset × variant × target epsilon (× sweep point) × metric (× classifier): the mean,
sd and number of seeds, the epsilon each run's privacy ledger spent (headline, paper and sound accountings;
the largest over seeds) and the wall time per run from Snakemake's benchmark files. It reads whatever the
experiment's tidy tables hold: no dataset, method or metric is assumed to be built in. A note says which columns
are computed on private data without noise (`private_columns_note`): they are not part of a DP release.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from dpvae.analyses.tidy import NOT_DP_METRIC
from dpvae.errors import DataError
from dpvae.paths import LEDGER
from dpvae.provenance import git_commit, sha256_json
from dpvae.render.common import BUILT_NOT_DP_NOTE
from dpvae.render.output import Stamp, save_table, stamped
from dpvae.reproductions import NOT_DP_MARK
from dpvae.seeds import seed_summary
from dpvae.specs import ExperimentSpec, RunFiles

#: ledger rows of the tidy tables (columns of the rendered table, not metrics)
SPENT = {
    "epsilon_spent": "eps spent",
    "epsilon_spent_paper": "eps spent (paper)",
    "epsilon_spent_sound": "eps spent (sound)",
}
KEYS = ["dataset", "variant", "epsilon", "point"]
#: how the metrics name the protocol they ran under (sizes, repeats, epochs): a note when one value holds for
#: every run of the experiment, else rows like any metric
PROTOCOL_SUFFIXES = (
    "_n",
    "_n_train",
    "_n_test",
    "_n_samples",
    "_reference_n",
    "_repeats",
    "_max_epochs",
    "_patience",
    "_shown",
)


def protocol(table: pd.DataFrame) -> dict[str, float]:
    """{metric (classifier): value} of the protocol metrics that hold one value for every run of `table`."""
    named = table[table["metric"].astype(str).str.endswith(PROTOCOL_SUFFIXES)]
    found = {}
    for (metric, classifier), rows in named.groupby(["metric", "classifier"], dropna=False, sort=False):
        if rows["value"].nunique(dropna=False) == 1:
            found[f"{metric} ({classifier})" if classifier else str(metric)] = float(rows["value"].iloc[0])
    return found


def benchmark_seconds(path: str | Path) -> float:
    """Wall seconds (column `s`) of one Snakemake benchmark file; a DataError naming it if unreadable."""
    try:
        with open(path, newline="") as handle:
            rows = list(csv.DictReader(handle, delimiter="\t"))
        return float(sum(float(row["s"]) for row in rows))
    except (OSError, KeyError, ValueError) as error:
        raise DataError(f"{path}: not a Snakemake benchmark file with an 's' column ({error})") from None


def run_wall_times(runs: Iterable[RunFiles]) -> pd.DataFrame:
    """One row per run directory: dataset, variant, epsilon, seed, train and total (train + sample + evaluate)
    wall seconds; each run's `dir` is .../runs/<dataset>/<variant>/eps<e>/seed<s>."""
    rows = []
    for run in runs:
        parts = Path(run.dir).parts
        seconds = {Path(b).stem: benchmark_seconds(b) for b in run.benchmarks}
        rows.append(
            {
                "dataset": parts[-4],
                "variant": parts[-3],
                "epsilon": float(parts[-2].removeprefix("eps")),
                "seed": int(parts[-1].removeprefix("seed")),
                "train_s": seconds.get("train", float("nan")),
                "total_s": sum(seconds.values()) if seconds else float("nan"),
            }
        )
    return pd.DataFrame(rows, columns=["dataset", "variant", "epsilon", "seed", "train_s", "total_s"])


def experiment_table(table: pd.DataFrame, walls: pd.DataFrame) -> pd.DataFrame:
    """The rendered table from an experiment's tidy rows and its runs' wall times (see the module docstring)."""
    table = table[table["step"].isna()].copy()  # per-step curves are summarised by their own items
    table["epsilon"] = table["epsilon"].astype(float).fillna(float("inf"))  # non-private runs: eps inf
    table["point"] = table["point"].astype("string").fillna("")
    table["classifier"] = table["classifier"].astype("string").fillna("")
    order = {column: list(dict.fromkeys(table[column])) for column in ("dataset", "variant", "metric")}
    constant = protocol(table)
    names = table["metric"].astype(str) + table["classifier"].map(lambda c: f" ({c})" if c else "").astype(str)
    table = table[~names.isin(list(constant))]
    spent = table[table["metric"].isin(list(SPENT))]
    spent = spent.pivot_table(index=KEYS, columns="metric", values="value", aggfunc="max").rename(columns=SPENT)
    values = table[~table["metric"].isin([*SPENT, NOT_DP_METRIC])]
    out = seed_summary(values, [*KEYS, "method", "metric", "classifier"])
    out = out.join(spent.reindex(columns=list(SPENT.values())), on=KEYS)
    marked = set(table.loc[table["metric"] == NOT_DP_METRIC, KEYS].itertuples(index=False, name=None))
    out["not DP"] = [NOT_DP_MARK if key in marked else "" for key in out[KEYS].itertuples(index=False, name=None)]
    if len(walls):
        walls = walls.assign(point="")
        per_run = walls.groupby(["dataset", "variant", "epsilon"])[["train_s", "total_s"]].mean()
        out = out.join(per_run.rename(columns={"train_s": "train s/run", "total_s": "total s/run"}), on=KEYS[:3])
    else:
        out["train s/run"] = out["total s/run"] = float("nan")
    for column, values_in_order in order.items():
        rank = {v: i for i, v in enumerate(values_in_order)}
        out[f"_{column}"] = out[column].map(rank)
    out = out.sort_values(["_dataset", "_variant", "epsilon", "point", "_metric", "classifier"], kind="stable")
    out = out.drop(columns=["_dataset", "_variant", "_metric"]).reset_index(drop=True)
    out = out.rename(columns={"epsilon": "eps target"})
    if not out["point"].astype(bool).any():
        out = out.drop(columns="point")
    if not out["classifier"].astype(bool).any():
        out = out.drop(columns="classifier")
    if not out["not DP"].astype(bool).any():
        out = out.drop(columns="not DP")
    return out.dropna(axis=1, how="all")


def private_columns_note(out: pd.DataFrame) -> str:
    """What on the page is computed on private data without noise, so is no DP release: the metric columns (the
    test split, for data of one's own a private one) and the rows of the `real` method (its training split)."""
    from dpvae.methods.real import RealData  # the real-data pseudo-method: what its rows release

    real = sorted(set(out.loc[out["method"] == RealData.name, "variant"])) if "method" in out else []
    rows = (
        f"; the rows of {', '.join(real)} (the real training split itself, no model) read the training split"
        if real
        else ""
    )
    return (
        "Not a DP release: mean, sd and n are computed without noise on the dataset's test split (for data of your "
        f"own, private records){rows}. Only what a private variant releases (its samples or model, as its ledger "
        "names) is covered by its eps spent; publish these columns only where the test split may be published."
    )


def render_experiment(spec_path: str | Path, prefix: str | Path) -> pd.DataFrame:
    """Write <prefix>.pdf, .csv and .tex for the experiment of an experiment spec file (`Rules.experiment_spec`)."""
    spec = ExperimentSpec.from_json(json.loads(Path(spec_path).read_text()), str(spec_path))
    frames = [pd.read_csv(p) for p in spec.tables]
    if not frames or all(f.empty for f in frames):
        raise DataError(f"experiment '{spec.experiment}': its tidy tables hold no rows ({', '.join(spec.tables)})")
    table = pd.concat(frames, ignore_index=True)
    out = experiment_table(table, run_wall_times(spec.runs))
    sweep = next((s for s in table["sweep"].dropna()), None)
    notes = [
        "mean, sd (over seeds; none for one seed) and n = number of seeds per dataset, variant (method), target "
        "epsilon (inf: non-private)"
        + (f", sweep point ({sweep})" if sweep else "")
        + f" and metric; delta = {spec.delta:g}.",
        f"eps spent: the largest over seeds of the run's privacy ledger ({LEDGER}): the headline epsilon and, "
        "where the method keeps both, its paper and sound accountings; empty = non-private. Each run's noise is "
        "calibrated so that its headline (most often the paper's claim) meets the target; the sound epsilon is "
        "the proven bound and may exceed the target (then the target holds only under the paper's analysis).",
        "train s/run: wall seconds of the training job, total s/run: training + sampling + every metric's "
        "evaluation (Snakemake benchmark files), mean over seeds; a shared first stage (stage1) is not counted.",
    ]
    notes.append(private_columns_note(out))
    if "not DP" in out:
        notes.append(BUILT_NOT_DP_NOTE)
    if constant := protocol(table.assign(classifier=table["classifier"].astype("string").fillna(""))):
        notes.append("the same for every run: " + ", ".join(f"{k} = {v:g}" for k, v in constant.items()) + ".")
    if spec.left_out:
        notes.append(f"left out (config data.unreachable): {', '.join(spec.left_out)}.")
    if spec.items:
        notes.append(f"The paper's renderings of this experiment: {', '.join(spec.items)} (figures/<paper>/<item>).")
    title = f"Experiment '{spec.experiment}'" + (f": {spec.description}" if spec.description else "")
    seeds = tuple(sorted({int(s) for s in table["seed"].dropna()}))
    stamp = Stamp(scale=spec.scale, commit=git_commit(), config_sha256=sha256_json(spec.to_json()), seeds=seeds)
    with stamped(stamp):
        save_table(out, prefix, title, notes)
    return out
