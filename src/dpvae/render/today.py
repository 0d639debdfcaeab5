"""The project's own item today/adult: the tabular state of the art (MST, AIM) beside the papers' methods.

Not a reproduction: no paper reports this comparison, so there is no published number and no scorecard cell. P3GM's
Adult setting (Tables VI and VIII: AUROC and AUPRC, the mean of its four classifiers; the 2-way TVD) on a grid of
target ε: per metric one panel, one line per method, the mean over seeds with its 95 % t-interval (no bar for one
seed). The figure's tidy data (per dataset, method and ε: mean, sd, n and the interval of each metric, and of the
runs' spent ε under their paper and sound accountings) is written beside it as CSV. The recorded paper-scale numbers
(reproductions/today.csv) as a markdown table: `recorded_markdown`, docs/mst-aim.md's (`status --update`).
"""

from __future__ import annotations

import math

import pandas as pd

from dpvae.analyses.tidy import TIDY_COLUMNS
from dpvae.files import atomic_write
from dpvae.paths import LEDGER
from dpvae.render.base import RenderContext, register_renderer
from dpvae.render.common import BUILT_NOT_DP_NOTE, dataset_label, not_dp_built
from dpvae.render.output import apply_style, pyplot, save_figure
from dpvae.runs import split_variant
from dpvae.seeds import CONFIDENCE, SeedStats, seed_summary

#: (tidy metric, classifier or None, panel label): what the page draws, in panel order
PANELS = (
    ("auroc", "mean4", "AUROC (mean of 4 classifiers; higher is better)"),
    ("auprc", "mean4", "AUPRC (mean of 4 classifiers; higher is better)"),
    ("tvd2", None, "2-way marginal TVD (lower is better)"),
)
#: the runs' spent ε: the headline (each method's paper accounting, calibrated to the target) and the sound bound
SPENT = (("epsilon_spent", "ε spent (headline)"), ("epsilon_spent_sound", "ε spent (sound, replace-one)"))
STATE_OF_THE_ART = {"mst": "MST (McKenna et al. 2021)", "aim": "AIM (McKenna et al. 2022)"}
#: the papers' methods by name; P3GM twice: the code's sampling prior (the Table VI reading) and the paper's (A-G6)
PAPERS_METHODS = {
    "privbayes": "PrivBayes",
    "dp-gm": "DP-GM",
    "p3gm": "P3GM (code: N(0, I) prior)",
    "p3gm-mog": "P3GM (paper: DP-MoG prior)",
    "ryan": "Ryan's",
    "dp-vae": "DP-VAE",
}
CSV_COLUMNS = ("dataset", "variant", "epsilon", "metric", "classifier", "mean", "sd", "n", "ci_low", "ci_high")


#: the recorded table's columns: (tidy metric, classifier, heading, with its interval)
RECORDED = (("auroc", "mean4", "AUROC", True), ("tvd2", "", "2-way TVD", False))


def method_label(variant: str) -> str:
    """The legend's name of a variant: the state of the art with its reference, the papers' methods by name."""
    base = split_variant(variant)[0]
    return STATE_OF_THE_ART.get(base) or PAPERS_METHODS.get(base, base)


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """One row per dataset, variant, target ε, metric and classifier drawn or listed (`PANELS`, `SPENT`): mean, sd,
    n over seeds and the `CONFIDENCE` t-interval (NaN bounds for one seed), in `CSV_COLUMNS`."""
    wanted = [(m, c) for m, c, _ in PANELS] + [(m, None) for m, _ in SPENT]
    rows = []
    for metric, classifier in wanted:
        picked = table[(table["metric"] == metric) & table["step"].isna()]
        if classifier is not None:
            picked = picked[picked["classifier"] == classifier]
        for (dataset, variant, epsilon), group in picked.groupby(["dataset", "variant", "epsilon"], sort=True):
            stats = SeedStats.of(group["value"].astype(float))
            low, high = stats.interval(CONFIDENCE)
            rows.append(
                {
                    "dataset": dataset,
                    "variant": variant,
                    "epsilon": float(epsilon),
                    "metric": metric,
                    "classifier": classifier or "",
                    "mean": stats.mean,
                    "sd": stats.sd,
                    "n": stats.n,
                    "ci_low": low,
                    "ci_high": high,
                }
            )
    return pd.DataFrame(rows, columns=list(CSV_COLUMNS))


def _panel(ax, points: pd.DataFrame, variants: list[str], table: pd.DataFrame, dataset: str) -> None:
    """One line per variant: the mean against ε, the t-interval as an error bar where there is one."""
    for i, variant in enumerate(variants):
        mine = points[points["variant"] == variant].sort_values("epsilon")
        if not len(mine):
            continue
        below = (mine["mean"] - mine["ci_low"]).fillna(0.0)
        above = (mine["ci_high"] - mine["mean"]).fillna(0.0)
        mark = not_dp_built(table, dataset=dataset, variant=variant)
        ax.errorbar(
            mine["epsilon"],
            mine["mean"],
            yerr=[below, above],
            marker="s" if split_variant(variant)[0] in STATE_OF_THE_ART else "o",
            linestyle="-" if split_variant(variant)[0] in STATE_OF_THE_ART else "--",
            capsize=3,
            color=f"C{i}",
            label=f"{method_label(variant)}{' ' + mark if mark else ''} (n={int(mine['n'].max())})",
        )


@register_renderer("today/adult", handles=("datasets", "epsilons"))
def today_adult(ctx: RenderContext) -> None:
    """AUROC, AUPRC and 2-way TVD against ε per method, one row of panels per dataset; the summary as CSV."""
    table = ctx.tables.get(ctx.experiment)
    if table is None or not len(table):
        table = pd.DataFrame(columns=TIDY_COLUMNS)
    points = summary(table)
    variants = ctx.variants()
    datasets = list(ctx.config.experiments[ctx.experiment].datasets)
    apply_style()
    fig, axes = pyplot().subplots(
        len(datasets), len(PANELS), figsize=(4.2 * len(PANELS), 3.6 * len(datasets) + 0.9), squeeze=False
    )
    delta = ctx.config.delta
    for row_axes, dataset in zip(axes, datasets):
        for ax, (metric, classifier, label) in zip(row_axes, PANELS):
            mine = points[
                (points["dataset"] == dataset)
                & (points["metric"] == metric)
                & (points["classifier"] == (classifier or ""))
            ]
            ax.set(xscale="log", xlabel=f"target ε (δ = {delta:g})", ylabel=label, title=dataset_label(dataset))
            if not len(mine):
                ax.text(0.5, 0.5, "no runs in this build", ha="center", va="center", transform=ax.transAxes)
                continue
            _panel(ax, mine, variants, table, dataset)
            grid = sorted(set(mine["epsilon"]))
            ax.set_xticks(grid)
            ax.set_xlim(grid[0] / 1.6, grid[-1] * 1.6)  # one ε too: the points off the frame
            ax.get_xaxis().set_major_formatter(pyplot().matplotlib.ticker.FormatStrFormatter("%g"))
    drawn = [ax for ax in axes.flat if ax.get_legend_handles_labels()[0]]
    if drawn:  # one legend for every panel (the same methods), above them
        fig.legend(
            *drawn[0].get_legend_handles_labels(), loc="upper center", ncol=3, fontsize=7, bbox_to_anchor=(0.5, 0.95)
        )
    fig.suptitle(
        "Today (the project's own comparison, not a reproduction): the tabular state of the art (MST, AIM) beside "
        "the papers' methods",
        fontsize=9,
    )
    notes = [
        f"Mean over seeds, bars: {CONFIDENCE:.0%} t-interval (none for one seed). ε: each run's target, met by its "
        "headline accounting (add/remove-one, the papers' claim); the sound (replace-one) ε each run spends is "
        f"larger and in the CSV beside this figure and each run's {LEDGER} (docs/mst-aim.md).",
        "AUROC/AUPRC: classifiers trained on the synthetic records, tested on the real test split (P3GM Table VI); "
        "TVD: all 2-way marginals against the real training split, 5 bins per column (P3GM Table VIII).",
    ]
    if any(not_dp_built(table, dataset=d) for d in datasets):
        notes.append(BUILT_NOT_DP_NOTE)
    fig.tight_layout(rect=(0, 0.06 * math.ceil(len(notes) / 2), 1, 0.88))
    fig.text(0.01, 0.005, "\n".join(notes), fontsize=6, va="bottom", wrap=True)
    save_figure(fig, ctx.prefix)
    atomic_write(f"{ctx.prefix}.csv", lambda tmp: points.to_csv(tmp, index=False, float_format="%.6g"))


def recorded_markdown(rows: pd.DataFrame) -> str:
    """The today page's recorded rows (`reproductions.read_reproductions` of reproductions/today.csv) of Adult as a
    markdown table: per variant (the state of the art first, then the papers' methods) its seeds and, at each ε, the
    AUROC (the mean of the four classifiers, ">50K" positive) as mean [`CONFIDENCE` t-interval] (none for one seed)
    and the 2-way TVD's mean; '-' where nothing is recorded."""
    rows = rows[(rows["item"] == "adult") & (rows["setting"] == "")]
    if rows.empty:
        return "(nothing recorded yet)"
    stats = seed_summary(rows.assign(value=rows["value"].astype(float)), ["method", "metric", "classifier", "epsilon"])
    epsilons = sorted(stats["epsilon"].unique())
    order = [*STATE_OF_THE_ART, *PAPERS_METHODS]
    variants = sorted(stats["method"].unique(), key=lambda v: (order.index(v) if v in order else len(order), v))
    heads = [
        f"{head} ε {eps:g}" if i == 0 else f"ε {eps:g}" for _, _, head, _ in RECORDED for i, eps in enumerate(epsilons)
    ]
    lines = ["| method | seeds | " + " | ".join(heads) + " |", "|---" * (len(heads) + 2) + "|"]
    for variant in variants:
        mine = stats[stats["method"] == variant]
        cells, seeds = [], sorted(set(mine["n"]))
        for metric, classifier, _, with_interval in RECORDED:
            for eps in epsilons:
                cell = mine[(mine["metric"] == metric) & (mine["classifier"] == classifier) & (mine["epsilon"] == eps)]
                cells.append(_cell(SeedStats.of_row(cell.iloc[0]), with_interval) if len(cell) else "-")
        n = f"{seeds[0]}" if len(seeds) == 1 else f"{seeds[0]}-{seeds[-1]}"
        lines.append(f"| {method_label(variant)} | {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _cell(stats: SeedStats, with_interval: bool) -> str:
    low, high = stats.interval(CONFIDENCE)
    if not with_interval or not math.isfinite(low):
        return f"{stats.mean:.3f}"
    return f"{stats.mean:.3f} [{low:.3f}, {high:.3f}]"
