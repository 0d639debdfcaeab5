"""DP2-VAE's sample figures: Figs 1-3 and 7 (ours beside the paper's cited baselines, which it shows as
images only) and Fig. 8 (DP2-VAE at its smallest epsilon)."""

from __future__ import annotations

from dpvae.items import item_datasets
from dpvae.render.base import RenderContext, paper_dataset, register_renderer
from dpvae.render.common import dataset_label
from dpvae.render.dp2vae.shared import (
    DATASETS,
    LABELS,
    cited_panel,
    generators,
    in_paper_order,
    method_of,
    protocol_notes,
    run_panel,
    sample_figure,
    sample_grids,
    standin_note,
    value_of,
)
from dpvae.schema import format_eps


def _datasets(ctx: RenderContext, grids: dict, experiments: list[str]) -> list[str]:
    """The datasets with sample grids, in the paper's order; without any, those the item's experiments run."""
    shown = in_paper_order(d for (d, _, _) in grids)
    return shown or in_paper_order(d for e in experiments for d in item_datasets(ctx.item, ctx.config, e))


def _qualitative(
    ctx: RenderContext,
    experiments: list[str],
    cited: list[tuple[str, str]],
    title: str,
    extra: list[str] = (),
) -> None:
    """Rows = methods (cited placeholders first, then the generators of each experiment at each of its
    epsilons), columns = datasets."""
    grids = sample_grids(ctx)
    datasets = _datasets(ctx, grids, experiments)
    rows = []
    for label, source in cited:
        rows.append([cited_panel(f"{label} - {DATASETS.get(paper_dataset(d), d)}", source) for d in datasets])
    for experiment in experiments:
        for variant in generators(ctx, experiment):
            for eps in ctx.config.experiments[experiment].epsilons:
                label = LABELS.get(method_of(ctx, variant), variant)
                rows.append(
                    [
                        run_panel(
                            ctx,
                            grids,
                            experiment,
                            d,
                            variant,
                            format_eps(eps),
                            f"{label} - {dataset_label(d, DATASETS)}",
                        )
                        for d in datasets
                    ]
                )
    notes = ["Row r of each grid: samples of the r-th class (class-conditional generation, z ~ prior)."]
    notes += standin_note(datasets) + list(extra)
    sample_figure(ctx, rows, title, notes)


@register_renderer("dp2vae/fig1")
def dp2vae_fig1(ctx: RenderContext) -> None:
    cited = [
        ("DP-CGAN", "[41] Cao et al. 2021"),
        ("GS-WGAN", "[41] Cao et al. 2021"),
        ("DP-Sinkhorn", "[41] Cao et al. 2021"),
        ("G-PATE", "[18]"),
        ("DataLens", "[40]"),
    ]
    _qualitative(ctx, [ctx.experiment], cited, "DP2-VAE Fig. 1 - samples at (10, 1e-5)")


@register_renderer("dp2vae/fig2")
def dp2vae_fig2(ctx: RenderContext) -> None:
    cited = [("G-PATE", "[18]"), ("DataLens", "[40]")]
    extra = [
        "GS-WGAN: its epsilon = 10 configuration with fewer iterations, the count solved with its authors' "
        "accountant (autodp) for epsilon = 1 (A-D10)."
    ]
    experiments = [ctx.experiment_for("gs-wgan"), ctx.experiment_for("main")]  # GS-WGAN's row first
    _qualitative(ctx, experiments, cited, "DP2-VAE Fig. 2 - samples at (1, 1e-5)", extra)


@register_renderer("dp2vae/fig3")
def dp2vae_fig3(ctx: RenderContext) -> None:
    _qualitative(
        ctx,
        [ctx.experiment],
        [("DataLens", "[40]")],
        "DP2-VAE Fig. 3 - CelebA (gender-conditional: row 1 female, row 2 male) at (1, 1e-5)",
    )


@register_renderer("dp2vae/fig7")
def dp2vae_fig7(ctx: RenderContext) -> None:
    published = ctx.published()
    fid = value_of(published, method="dp2vae", metric="fid")
    acc = value_of(published, method="dp2vae", metric="accuracy")
    _qualitative(
        ctx,
        [ctx.experiment],
        [("DataLens", "[40]"), ("DP-Sinkhorn (10, 1e-6)", "[41]")],
        "DP2-VAE Fig. 7 - CelebA at (10, 1e-5)",
        [f"Paper (Appendix E.1): Ours FID {fid:g}, CNN accuracy {100 * acc:.1f} %."],
    )


#: Fig. 8's panel label of a method (it shows the paper's own method only), else its table label
SHORT_LABELS = {"dp2vae": "Ours"}


def _short_label(ctx: RenderContext, variant: str) -> str:
    method = method_of(ctx, variant)
    return SHORT_LABELS.get(method, LABELS.get(method, variant))


@register_renderer("dp2vae/fig8")
def dp2vae_fig8(ctx: RenderContext) -> None:
    grids = sample_grids(ctx)
    datasets = _datasets(ctx, grids, [ctx.experiment])
    rows = [
        [
            run_panel(
                ctx,
                grids,
                ctx.experiment,
                d,
                variant,
                format_eps(eps),
                f"{_short_label(ctx, variant)} - {dataset_label(d, DATASETS)}",
            )
            for d in datasets
        ]
        for variant in ctx.variants()
        for eps in ctx.config.experiments[ctx.experiment].epsilons
    ]
    notes = [
        "The paper prints its (0.2, 1e-5) numbers inside the figure image only (not in the text): no paper values."
    ]
    sample_figure(
        ctx,
        rows,
        "DP2-VAE Fig. 8 - DP2-VAE at (0.2, 1e-5)",
        notes + standin_note(datasets) + protocol_notes(ctx, ctx.experiment),
    )
