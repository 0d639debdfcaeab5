"""P3GM's image items: Table VII (CNN accuracy), Fig. 2 (MNIST samples), Fig. 5 (accuracy vs d_p)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from dpvae.render.base import RenderContext, register_renderer
from dpvae.render.common import BUILT_NOT_DP_NOTE, dataset_label, in_order, not_dp_built, run_of, summary_cell
from dpvae.render.output import PAPER_LABEL, save_figure, save_table
from dpvae.render.p3gm.shared import (
    LABELS,
    NOTEBOOK,
    UNREACHABLE,
    experiment_frame,
    is_missing,
    metric_summary,
    notebook_if_different,
    published_value,
    recorded_cell,
    spent_epsilon,
)
from dpvae.reproductions import NOT_DP_MARK, not_dp_notes
from dpvae.runs import is_private
from dpvae.seeds import seed_summary

#: the panel title of each variant Fig. 2 shows, in the paper's panel order ((a), (b), ...)
FIG2_PANELS = {
    "real": "real MNIST",
    "vae-mlp": "VAE (non-private)",
    "dp-vae": "DP-VAE",
    "dp-gm": "DP-GM",
    "p3gm": "P3GM",
}


@register_renderer("p3gm/table7")
def p3gm_table7(ctx: RenderContext) -> None:
    """MNIST and Fashion-MNIST at (1, 1e-5): CNN accuracy per method, ours beside the paper's; the experiment's
    variants in the paper's row order (`LABELS`' order), those it does not print last."""
    table, datasets = experiment_frame(ctx, ctx.experiment)
    published = ctx.published()
    summary = metric_summary(table, "accuracy", ["dataset", "variant"], "cnn")
    eps = spent_epsilon(table, ["dataset", "variant"])
    variants = in_order(ctx.variants(), LABELS)
    recorded = ctx.recorded()
    rows = []
    for dataset in datasets:
        for variant in variants:
            hit = summary[(summary["dataset"] == dataset) & (summary["variant"] == variant)]
            spent = eps[(eps["dataset"] == dataset) & (eps["variant"] == variant)]["eps"]
            method = ctx.published_method(variant)
            paper = published_value(published, dataset, method, "accuracy", "cnn")
            notebook = published_value(published, dataset, method, "accuracy", "cnn", source="reference-code")
            mark = not_dp_built(table, dataset=dataset, variant=variant)
            if ctx.config.scale != "paper":
                extra = {
                    "accuracy (ours, paper scale, recorded)": recorded_cell(
                        recorded, dataset, method, "accuracy", "cnn"
                    )
                }
            else:
                extra = {}
            rows.append(
                {
                    "dataset": dataset_label(dataset),
                    "method": f"{LABELS.get(variant, variant)} {mark}".strip(),
                    **extra,
                    "accuracy (ours)": UNREACHABLE if is_missing(table, dataset) else summary_cell(hit),
                    f"accuracy ({PAPER_LABEL})": paper,
                    f"accuracy ({NOTEBOOK})": notebook_if_different(paper, notebook),
                    "epsilon spent": float(spent.iloc[0]) if len(spent) else float("nan"),
                }
            )
    out = pd.DataFrame(rows)
    notes = [
        "ours: mean ± sd over seeds (n) of the CNN's real-test accuracy; the CNN is early-stopped on a held-out "
        "10 % of the synthetic set (the reference code stops on the real test set, option early_stopping: test).",
        "VAE is non-private; DP-VAE (Fig. 2 only) and real data are not in the paper's table. "
        "epsilon spent = the headline (paper) accounting of the run's privacy ledger (a DP guarantee only on a row "
        "without a dagger); '--' = non-private.",
        "Paper: Table VII; 'notebook' = the reference code's printed value where it differs from the paper's.",
    ]
    if out["method"].str.endswith(NOT_DP_MARK).any():
        notes.append(BUILT_NOT_DP_NOTE)
    if "accuracy (ours, paper scale, recorded)" in out:
        shown = out["accuracy (ours, paper scale, recorded)"].str.endswith(NOT_DP_MARK)
        notes += not_dp_notes(recorded["not_dp"]) if shown.any() else []
    save_table(out, ctx.prefix, "P3GM Table VII - image data at (1, 1e-5): CNN accuracy", notes)


@register_renderer("p3gm/fig2")
def p3gm_fig2(ctx: RenderContext) -> None:
    """MNIST sample grids (first seed of each): the experiment's variants that the paper's figure shows
    (`FIG2_PANELS`: (a) real, (b) VAE, (c) DP-VAE, (d) DP-GM, (e) P3GM), a private one's titled with its epsilon."""
    import numpy as np

    from dpvae.render.output import apply_style, pyplot

    apply_style()
    shown = [v for v in in_order(ctx.variants(), FIG2_PANELS) if v in FIG2_PANELS]
    panels = [(v, f"({chr(ord('a') + k)}) {FIG2_PANELS[v]}") for k, v in enumerate(shown)]
    grids = {}
    for path in sorted(ctx.artifacts, key=lambda a: run_of(a).seed):
        run = run_of(path)
        if run.variant not in grids:
            with np.load(Path(path).with_name("sample_grid.npz")) as grid:
                grids[run.variant] = {k: grid[k] for k in grid.files}
    eps = ctx.config.experiments[ctx.experiment].epsilons
    fig, axes = pyplot().subplots(1, len(panels), figsize=(3.0 * len(panels), 3.4))
    for ax, (variant, title) in zip(axes, panels):
        ax.axis("off")
        private = is_private(ctx.config, variant)
        ax.set_title(
            title + (f"\n$\\varepsilon$ = {eps[0]:g}, $\\delta$ = {ctx.config.delta:g}" if private else ""),
            fontsize=8,
        )
        if variant not in grids:
            ax.text(0.5, 0.5, "no run", ha="center", va="center", fontsize=8)
            continue
        grid = grids[variant]
        rows, cols = int(grid["rows"]), int(grid["cols"])
        images = np.clip(grid["x"].reshape(-1, 28, 28), 0.0, 1.0)
        canvas = np.ones((rows * 29 + 1, cols * 29 + 1))
        for k, image in enumerate(images[: rows * cols]):
            r, c = divmod(k, cols)
            canvas[1 + r * 29 : 1 + r * 29 + 28, 1 + c * 29 : 1 + c * 29 + 28] = image
        ax.imshow(canvas, cmap="gray", vmin=0, vmax=1, interpolation="nearest")
    fig.suptitle(
        "P3GM Fig. 2 - MNIST samples (row r: generated label r; pixels clipped to [0, 1] for display)",
        fontsize=9,
        y=1.02,
    )
    save_figure(fig, ctx.prefix)


@register_renderer("p3gm/fig5")
def p3gm_fig5(ctx: RenderContext) -> None:
    """MNIST CNN accuracy vs the number of DP-PCA components d_p: ours (mean ± sd) and the notebook's points."""
    from dpvae.render.output import apply_style, pyplot

    apply_style()
    table = ctx.tables[ctx.experiment]
    rows = table[(table["metric"] == "accuracy") & (table["classifier"] == "cnn")].copy()
    rows["d_p"] = rows["point"].astype(float)
    summary = seed_summary(rows, ["d_p"], sort=True)
    published = ctx.published()
    notebook = published[published["source"] == "reference-code"].copy()
    notebook["d_p"] = notebook["setting"].str.removeprefix("d_p=").astype(float)
    fig, ax = pyplot().subplots(figsize=(5.4, 3.6))
    ax.errorbar(
        summary["d_p"],
        summary["mean"],
        yerr=summary["sd"].fillna(0),
        marker="o",
        capsize=3,
        label=f"ours (mean ± sd over {int(summary['n'].max()) if len(summary) else 0} seeds)",
    )
    ax.plot(
        notebook.sort_values("d_p")["d_p"],
        notebook.sort_values("d_p")["value"],
        marker="s",
        linestyle="--",
        color="grey",
        label="reference notebook (20 runs; the authors' printed values)",
    )
    recorded = ctx.recorded()
    if ctx.config.scale != "paper" and len(recorded):
        paper_scale = recorded[
            (recorded["metric"] == "accuracy") & recorded["setting"].fillna("").str.startswith("d_p=")
        ]
        paper_scale = paper_scale.assign(d_p=paper_scale["setting"].str.removeprefix("d_p=").astype(float)).sort_values(
            "d_p"
        )
        ax.errorbar(
            paper_scale["d_p"],
            paper_scale["mean"],
            yerr=paper_scale["sd"].fillna(0),
            marker="^",
            capsize=3,
            linestyle=":",
            label="ours at paper scale (recorded, reproductions/p3gm.csv)",
        )
    ax.set(
        xscale="log",
        xlabel="number of DP-PCA components $d_p$",
        ylabel="CNN accuracy on real MNIST test",
        title="P3GM Fig. 5 - MNIST accuracy vs $d_p$ ($\\varepsilon$ = 1)",
    )
    ax.set_xticks(sorted(set(summary["d_p"]) | set(notebook["d_p"])))
    ax.get_xaxis().set_major_formatter(pyplot().matplotlib.ticker.ScalarFormatter())
    ax.legend(fontsize=7)
    save_figure(fig, ctx.prefix)
