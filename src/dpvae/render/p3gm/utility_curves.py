"""P3GM's utility curves: Fig. 4 (vs epsilon) and Fig. 8 (vs the budget allocation), one function; Fig. 6
(vs the data dimension)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from dpvae.render.base import RenderContext, paper_dataset, register_renderer
from dpvae.render.common import dataset_label, is_standin, real_dataset
from dpvae.render.output import save_figure
from dpvae.render.p3gm.shared import errorbar_lines, experiment_frame, is_missing, no_data


@dataclass(frozen=True)
class UtilityFigure:
    """What Fig. 4 and Fig. 8 differ in: AUROC and AUPRC (mean of 4 classifiers) per dataset against `x`."""

    x: str  # the tidy column on the x axis
    xlabel: Callable[[RenderContext], str]
    log_x: bool
    row_height: float  # inches per dataset
    notebook_x: Callable[[pd.DataFrame], pd.Series]  # the x of the reference notebook's printed points
    notebook_label: str
    notebook_on_standins: bool  # whether a stand-in's panels show the real dataset's notebook points
    title: Callable[[RenderContext, list[str]], str]
    title_size: int
    setting_notes: bool  # whether the figure states how the configured setting differs from the paper's


def utility_figure(ctx: RenderContext, figure: UtilityFigure) -> None:
    """One row of two panels (AUROC, AUPRC) per dataset: ours (mean ± sd over seeds) and the notebook's points."""
    from dpvae.render.output import apply_style, pyplot

    apply_style()
    table, datasets = experiment_frame(ctx, ctx.experiment)
    published = ctx.published()
    # the reference notebook's printed points of the paper's own method (`shared.is_ours`: published as the paper)
    notebook = published[(published["source"] == "reference-code") & (published["method"] == ctx.item.paper)]
    notebook = notebook.assign(x=figure.notebook_x(notebook))
    fig, axes = pyplot().subplots(len(datasets), 2, figsize=(10, figure.row_height * len(datasets)), squeeze=False)
    for row_axes, dataset in zip(axes, datasets):
        for ax, metric in zip(row_axes, ("auroc", "auprc")):
            ax.set(
                xlabel=figure.xlabel(ctx),
                ylabel=f"{metric.upper()} (mean of 4 classifiers)",
                title=f"{dataset_label(dataset)} - {metric.upper()}",
            )
            if figure.log_x:
                ax.set(xscale="log")
            if is_missing(table, dataset):
                no_data(ax, dataset)
                continue
            rows = table[table["dataset"] == dataset]
            errorbar_lines(ax, rows, lambda r: float(r[figure.x]), metric, "mean4", ctx.variants())
            points = notebook[(notebook["metric"] == metric) & (notebook["dataset"] == paper_dataset(dataset))]
            if len(points) and (figure.notebook_on_standins or not is_standin(dataset)):
                points = points.sort_values("x")
                ax.plot(points["x"], points["value"], "s--", color="grey", label=figure.notebook_label)
            ax.legend(fontsize=7)
    fig.suptitle(figure.title(ctx, datasets), fontsize=figure.title_size)
    fig.tight_layout()
    setting = ctx.setting(ctx.experiment) if figure.setting_notes else None
    if setting is not None and not setting.is_paper:
        fig.text(0.5, 1.03, "\n".join(setting.notes()), ha="center", va="bottom", fontsize=7, color="#b00020")
    save_figure(fig, ctx.prefix)


def _standin_suffix(datasets: list[str], text: str) -> str:
    return text if any(is_standin(d) for d in datasets) else ""


def _fig4_title(ctx: RenderContext, datasets: list[str]) -> str:
    if ctx.setting(ctx.experiment).is_paper or all(paper_dataset(real_dataset(d)) == "credit" for d in datasets):
        suffix = _standin_suffix(datasets, " - STAND-IN DATA (generated, not Kaggle Credit)")
        return f"P3GM Fig. 4 - Kaggle Credit utility vs $\\varepsilon$ (mean ± sd over seeds){suffix}"
    names = ", ".join(dataset_label(d) for d in datasets)
    return f"P3GM Fig. 4's layout - {names}: utility vs $\\varepsilon$ (mean ± sd over seeds)"


FIG4 = UtilityFigure(
    x="epsilon",
    xlabel=lambda ctx: f"$\\varepsilon$ ($\\delta$ = {ctx.config.delta:g})",
    log_x=True,
    row_height=3.8,
    notebook_x=lambda points: points["epsilon"],
    notebook_label="P3GM, reference notebook (authors' printed values)",  # the notebook ran Kaggle Credit only
    notebook_on_standins=True,
    title=_fig4_title,
    title_size=10,
    setting_notes=True,
)
FIG8 = UtilityFigure(
    x="point",
    xlabel=lambda ctx: "encoder share of the budget (sweep label, epsilon_balance.sh)",
    log_x=False,
    row_height=3.6,
    notebook_x=lambda points: points["setting"].str.removeprefix("ratio=").astype(float),
    notebook_label="reference notebook (Kaggle Credit; ratio 0.9 run broken)",
    notebook_on_standins=False,
    title=lambda ctx, datasets: (
        "P3GM Fig. 8 - utility vs privacy-budget allocation (total $\\varepsilon$ = 1; the text says Adult, "
        "the code ran Kaggle Credit)" + _standin_suffix(datasets, " - STAND-IN DATA for credit")
    ),
    title_size=9,
    setting_notes=False,
)


@register_renderer("p3gm/fig4", handles=("datasets", "epsilons"))
def p3gm_fig4(ctx: RenderContext) -> None:
    """Kaggle Credit AUROC and AUPRC (mean of 4 classifiers) vs epsilon: P3GM, DP-GM, PrivBayes; on other data
    each panel is titled with its dataset and the notebook's Credit curve is drawn on Credit panels only."""
    utility_figure(ctx, FIG4)


@register_renderer("p3gm/fig8")
def p3gm_fig8(ctx: RenderContext) -> None:
    """AUROC / AUPRC vs the share of the budget spent by the encoding phase (total epsilon = 1), per dataset."""
    utility_figure(ctx, FIG8)


@register_renderer("p3gm/fig6")
def p3gm_fig6(ctx: RenderContext) -> None:
    """AUROC (mean of 4 classifiers) vs data dimension on two-Gaussian data at epsilon = 1."""
    from dpvae.render.output import apply_style, pyplot

    apply_style()
    table, datasets = experiment_frame(ctx, ctx.experiment)
    variants = ctx.variants()
    dims = sorted(int(d.removeprefix("twogauss-d")) for d in datasets)
    fig, ax = pyplot().subplots(figsize=(5.6, 3.8))
    errorbar_lines(ax, table, lambda r: int(str(r["dataset"]).removeprefix("twogauss-d")), "auroc", "mean4", variants)
    ax.set(
        xscale="log",
        xlabel="data dimension d (class 0 ~ N(-1, I_d), class 1 ~ N(+1, I_d))",
        ylabel="AUROC (mean of 4 classifiers)",
        title="P3GM Fig. 6 - AUROC vs dimensionality ($\\varepsilon$ = 1)",
    )
    ax.set_xticks(dims)
    ax.get_xaxis().set_major_formatter(pyplot().matplotlib.ticker.ScalarFormatter())
    ax.legend(fontsize=7)
    ax.text(0.01, 0.01, "the paper prints no numbers for this figure", transform=ax.transAxes, fontsize=6, color="grey")
    save_figure(fig, ctx.prefix)
