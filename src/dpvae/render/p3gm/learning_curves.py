"""P3GM's Fig. 7: learning efficiency of P3GM, DP-VAE and P3GM(AE) (curves over iterations and epochs)."""

from __future__ import annotations

from dpvae.render.base import RenderContext, paper_dataset, register_renderer
from dpvae.render.common import dataset_label, real_dataset
from dpvae.render.output import save_figure
from dpvae.render.p3gm.shared import LABELS
from dpvae.seeds import seed_summary


@register_renderer("p3gm/fig7")
def p3gm_fig7(ctx: RenderContext) -> None:
    """(a, b) reconstruction loss on MNIST / credit of the models a run kept at iterations spaced in log scale,
    on the test split (`dpvae.eval.learning_curve`; not the training batches' loss the paper plots, which a
    private run does not release); (c) MNIST CNN accuracy per epoch; (d) credit AUROC."""
    from dpvae.render.output import apply_style, pyplot

    apply_style()
    table = ctx.tables["p3gm_efficiency"]
    datasets = list(dict.fromkeys(table["dataset"])) if len(table) else []
    mnist = next((d for d in datasets if paper_dataset(real_dataset(d)) == "mnist"), None)
    credit = next((d for d in datasets if paper_dataset(real_dataset(d)) == "credit"), None)
    panels = [
        (mnist, "recon_loss", None, "(a) MNIST", "iteration", "reconstruction loss (test split)"),
        (credit, "recon_loss", None, "(b) Kaggle Credit", "iteration", "reconstruction loss (test split)"),
        (mnist, "accuracy", "cnn", "(c) MNIST", "epoch", "CNN accuracy"),
        (credit, "auroc", "mean4", "(d) Kaggle Credit", "epoch", "AUROC (mean of 4 classifiers)"),
    ]
    order = ["p3gm-efficiency", "dp-vae", "p3gm-ae"]
    fig, axes = pyplot().subplots(2, 2, figsize=(10, 7))
    for ax, (dataset, metric, classifier, title, xlabel, ylabel) in zip(axes.flat, panels):
        ax.set(
            title=title if dataset is None else title.split(") ")[0] + ") " + dataset_label(dataset),
            xlabel=xlabel,
            ylabel=ylabel,
        )
        if dataset is None:
            ax.text(
                0.5,
                0.5,
                "no run: the dataset is not in this build\n(Kaggle Credit is not reachable here)",
                ha="center",
                va="center",
                transform=ax.transAxes,
                fontsize=8,
            )
            continue
        rows = table[(table["dataset"] == dataset) & (table["metric"] == metric) & table["step"].notna()]
        if classifier is not None:
            rows = rows[rows["classifier"] == classifier]
        for variant in [v for v in order if v in set(rows["variant"])]:
            curve = seed_summary(rows[rows["variant"] == variant], ["step"], sort=True).set_index("step")
            (line,) = ax.plot(
                curve.index,
                curve["mean"],
                label=f"{LABELS[variant]} (n={int(curve['n'].max())})",
                marker="o",
                markersize=3 if metric == "recon_loss" else 6,
                lw=1 if metric == "recon_loss" else 1.5,
            )
            ax.fill_between(
                curve.index,
                curve["mean"] - curve["sd"].fillna(0),
                curve["mean"] + curve["sd"].fillna(0),
                color=line.get_color(),
                alpha=0.15,
                lw=0,
            )
        if metric == "recon_loss":
            ax.set(xscale="log", yscale="log")
        ax.legend(fontsize=7)
    fig.suptitle(
        "P3GM Fig. 7 - learning efficiency at $\\varepsilon$ = 1: P3GM vs DP-VAE vs P3GM(AE) (mean ± sd over seeds)",
        fontsize=10,
    )
    fig.tight_layout()
    save_figure(fig, ctx.prefix)
