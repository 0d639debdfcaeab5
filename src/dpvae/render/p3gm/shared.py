"""What P3GM's result items share: labels, the published and recorded cells, experiment frames and notes."""

from __future__ import annotations

import pandas as pd

from dpvae.render.base import RenderContext, paper_dataset
from dpvae.render.common import dataset_label, is_standin, matching, mean_sd, real_dataset, summary_cell
from dpvae.render.output import PAPER_LABEL
from dpvae.reproductions import NOT_DP_MARK
from dpvae.seeds import SeedStats, seed_summary

#: the label an item prints for each of our variants, in Table VII's row order (the paper's rows of the most
#: methods; DP-VAE and real data, which only we show there, last): `images.p3gm_table7` orders by it
LABELS = {
    "vae-mlp": "VAE",
    "pgm": "PGM",
    "dp-gm": "DP-GM",
    "privbayes": "PrivBayes",
    "ryan": "Ryan's",
    "p3gm": "P3GM",
    "p3gm-efficiency": "P3GM",
    "p3gm-ae": "P3GM(AE)",
    "p3gm-pca-sweep": "P3GM",
    "dp-vae": "DP-VAE",
    "real": "real data",
}
NOTEBOOK = "notebook"
TABULAR_ORDER = ("credit", "esr", "adult", "isolet")  # the paper's row order
UNREACHABLE = "not reachable here"
NOT_BUILT = "not in this build"


def is_ours(ctx: RenderContext, variant: str) -> bool:
    """Whether `variant` is the paper's own method: the paper publishes it under the paper's id (the published
    CSVs name each paper's own method so, e.g. `p3gm`; a variant's `published_as` in config.yaml maps it), which
    the items single out (the notebook's and the public-reconstruction rows, the epsilon note)."""
    return ctx.published_method(variant) == ctx.item.paper


def metric_summary(table: pd.DataFrame, metric: str, by: list[str], classifier: str | None = None) -> pd.DataFrame:
    """`seed_summary` of `metric` per `by` group (rows without a step; of one classifier if given)."""
    rows = table[(table["metric"] == metric) & table["step"].isna()]
    if classifier is not None:
        rows = rows[rows["classifier"] == classifier]
    return seed_summary(rows, by)


def published_value(
    published: pd.DataFrame,
    dataset: str,
    method: str,
    metric: str,
    classifier: str = "",
    setting: str = "",
    source: str = PAPER_LABEL,
) -> float:
    """The published number (NaN if none); `source` 'paper' or 'reference-code' (the notebook)."""
    key = published.assign(classifier=published["classifier"].fillna(""), setting=published["setting"].fillna(""))
    hit = key[
        (key["dataset"] == paper_dataset(real_dataset(dataset)))
        & (key["method"] == method)
        & (key["metric"] == metric)
        & (key["classifier"] == classifier)
        & (key["setting"] == setting)
        & (key["source"] == source)
    ]
    return float(hit["value"].iloc[0]) if len(hit) else float("nan")


def notebook_if_different(paper: float, notebook: float) -> float:
    """The notebook's value where it differs from the paper's printed one (at the paper's 4 decimals)."""
    return (
        notebook
        if not pd.isna(notebook) and (pd.isna(paper) or round(notebook, 4) != round(paper, 4))
        else float("nan")
    )


def recorded_cell(
    recorded: pd.DataFrame, dataset: str, method: str, metric: str, classifier: str = "", setting: str = ""
) -> str:
    """'mean ± sd (n)' of the recorded paper-scale reproductions (reproductions/p3gm.csv) of one cell, or '--'; a
    dagger where a recorded row is not DP (`reproductions.not_dp_notes` gives the footnote)."""
    if recorded is None or not len(recorded):
        return "--"
    hit = recorded[
        (recorded["dataset"] == paper_dataset(real_dataset(dataset)))
        & (recorded["method"] == method)
        & (recorded["metric"] == metric)
        & (recorded["classifier"].fillna("") == classifier)
        & (recorded["setting"].fillna("") == setting)
    ]
    if not len(hit):
        return "--"
    return mean_sd(SeedStats.of_row(hit.iloc[0])) + (f" {NOT_DP_MARK}" if hit.iloc[0].get("not_dp") else "")


def spent_epsilon(table: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Largest headline epsilon spent per group (empty for non-private variants)."""
    rows = table[table["metric"] == "epsilon_spent"]
    return rows.groupby(by, sort=False, dropna=False)["value"].max().rename("eps").reset_index()


def experiment_frame(ctx: RenderContext, experiment: str, published: bool = False) -> tuple[pd.DataFrame, list[str]]:
    """The experiment's tidy table (empty with the tidy columns if none) and its datasets in the paper's
    order: the configured ones, those without a table included (left out as unreachable: `data.unreachable`),
    and with `published` also the paper's datasets this build does not configure (shown with its numbers only)."""
    from dpvae.analyses.tidy import TIDY_COLUMNS

    table = ctx.tables.get(experiment)
    if table is None or not len(table):
        table = pd.DataFrame(columns=TIDY_COLUMNS)
    datasets = list(ctx.config.experiments[experiment].datasets)
    if published:
        covered = {paper_dataset(real_dataset(d)) for d in datasets}
        datasets += [d for d in dict.fromkeys(ctx.published()["dataset"]) if d not in covered]
    order = {name: i for i, name in enumerate(TABULAR_ORDER)}
    return table, sorted(datasets, key=lambda d: order.get(paper_dataset(real_dataset(d)), len(order)))


def is_missing(table: pd.DataFrame, dataset: str) -> bool:
    return dataset not in set(table["dataset"])


def missing_text(ctx: RenderContext, experiment: str, dataset: str) -> str:
    """Why a dataset has no number: unreachable here (configured but left out) or not in this build."""
    return UNREACHABLE if dataset in ctx.config.experiments[experiment].datasets else NOT_BUILT


def standin_note(datasets: list[str]) -> list[str]:
    names = [dataset_label(real_dataset(d)) for d in datasets if is_standin(d)]
    return (
        [
            f"STAND-IN DATA for {', '.join(names)}: those datasets are not reachable from this machine; "
            "their rows come from generated stand-ins with the same schema (feature count, value range, "
            "label balance) and are not comparable with the paper's numbers."
        ]
        if names
        else []
    )


def unreachable_note(ctx: RenderContext, experiment: str, table: pd.DataFrame, datasets: list[str]) -> list[str]:
    notes = []
    for reason, text in (
        (UNREACHABLE, "the raw data cannot be downloaded on this machine (config data.unreachable)"),
        (
            NOT_BUILT,
            "this configuration does not run the dataset (smoke scale uses stand-ins for some and leaves others out)",
        ),
    ):
        missing = [
            dataset_label(d) for d in datasets if is_missing(table, d) and missing_text(ctx, experiment, d) == reason
        ]
        if missing:
            notes.append(
                f"'{reason}': no number for {', '.join(missing)}: {text}; the paper's numbers are shown alone."
            )
    return notes


def cell(summary: pd.DataFrame, **where: str) -> str:
    """'mean ± sd (n)' of the summary row matching `where`, '--' if none."""
    return summary_cell(matching(summary, **where))


def np_finite(value: float) -> bool:
    return bool(pd.notna(value)) and abs(float(value)) != float("inf")


def cell_value(summary: pd.DataFrame, column: str, **where) -> float:
    """The first `column` value of the rows matching `where` (NaN if none)."""
    hit = matching(summary, **where)
    return float(hit[column].iloc[0]) if len(hit) else float("nan")


def setting_rows(setting, table: pd.DataFrame, datasets: list[str], variants: list[str]) -> list[tuple]:
    """(dataset, target epsilon or None, variant) per table row: in the paper's setting every variant of every
    dataset at its one epsilon (None: not split); otherwise each target epsilon the runs have, in order."""
    if setting.is_paper:
        return [(d, None, v) for d in datasets for v in variants]
    rows = []
    for dataset in datasets:
        mine = table[table["dataset"] == dataset]
        if not len(mine):
            rows += [(dataset, float("nan"), v) for v in variants]
            continue
        grid = mine["epsilon"].astype(float)
        for epsilon in [*sorted(set(grid.dropna())), *([float("nan")] if grid.isna().any() else [])]:
            present = set(matching(mine.assign(epsilon=grid), epsilon=epsilon)["variant"])
            rows += [(dataset, epsilon, v) for v in variants if v in present]
    return rows


def errorbar_lines(ax, table: pd.DataFrame, x_of, metric: str, classifier: str | None, variants: list[str]) -> None:
    """One line per variant: mean ± sd over seeds of `metric` against x_of(row)."""
    rows = table[(table["metric"] == metric) & table["step"].isna()]
    if classifier is not None:
        rows = rows[rows["classifier"] == classifier]
    rows = rows.assign(x=[x_of(r) for _, r in rows.iterrows()])
    for variant in [v for v in variants if v in set(rows["variant"].map(lambda s: str(s).split("@")[0]))]:
        mine = rows[rows["variant"].map(lambda s: str(s).split("@")[0]) == variant]
        summary = seed_summary(mine, ["x"], sort=True)
        ax.errorbar(
            summary["x"],
            summary["mean"],
            yerr=summary["sd"].fillna(0),
            marker="o",
            capsize=3,
            label=f"{LABELS.get(variant, variant)} (ours, n={int(summary['n'].max())})",
        )


def no_data(ax, dataset: str) -> None:
    ax.text(
        0.5,
        0.5,
        f"{dataset_label(dataset)}: {UNREACHABLE}\n(raw data cannot be downloaded on this machine)",
        ha="center",
        va="center",
        transform=ax.transAxes,
        fontsize=8,
    )
