"""DP2-VAE's ablations: Fig. 4 (GS-WGAN with and without pre-training) and Fig. 5 (DP2-VAE with and without
pre-training), each at its experiment's one dataset and epsilon (the paper's: MNIST at (10, 1e-5))."""

from __future__ import annotations

import math

import pandas as pd

from dpvae.render.base import RenderContext, register_renderer
from dpvae.render.common import in_order
from dpvae.render.dp2vae.shared import (
    epsilons_text,
    ours_means,
    protocol_notes,
    recorded_cells,
    run_panel,
    run_points,
    sample_figure,
    sample_grids,
    value_of,
)
from dpvae.reproductions import ITEM_SETTINGS

#: the panel label of each variant of Fig. 4, in the paper's order
GSWGAN_PANELS = {"gs-wgan-nopretrain": "(a) GS-WGAN w/o pre-training", "gs-wgan": "(b) GS-WGAN with pre-training"}
#: the panel label of each variant of Fig. 5, in the paper's order
DP2VAE_PANELS = {"dp2vae-nopretrain": "(a) w/o pre-training", "dp2vae": "(b) with pre-training"}


def _one_point(ctx: RenderContext) -> tuple[str, str]:
    """(dataset, epsilon label) of the item's experiment, which an ablation figure draws at one point."""
    points = run_points(ctx, ctx.experiment)
    if len(points) != 1:
        raise ValueError(
            f"{ctx.item.key} draws one dataset at one epsilon; experiments.{ctx.experiment} configures "
            f"{', '.join(f'{d} at {e}' for d, e in points) or 'none'}"
        )
    return points[0]


@register_renderer("dp2vae/fig4")
def dp2vae_fig4(ctx: RenderContext) -> None:
    grids = sample_grids(ctx)
    dataset, eps = _one_point(ctx)
    variants = in_order(ctx.variants(), GSWGAN_PANELS)
    rows = [[run_panel(ctx, grids, ctx.experiment, dataset, v, eps, GSWGAN_PANELS.get(v, v)) for v in variants]]
    ours = ours_means(ctx.tables.get(ctx.experiment, pd.DataFrame()))
    notes = [
        "Paper: (a) produces no digits, (b) digits. GS-WGAN defaults: sigma 1.07, B 32, K discriminators, "
        "5 critic steps, gradient penalty 10, Bernoulli latent, ResNet generator."
    ]
    notes += [f"{v}: {_gswgan_eps(ours, dataset, v)}" for v in variants]
    sample_figure(ctx, rows, "DP2-VAE Fig. 4 - GS-WGAN ablation at (10, 1e-5), MNIST", notes)


def _gswgan_eps(ours: pd.DataFrame, dataset: str, variant: str) -> str:
    authors = value_of(ours, dataset=dataset, variant=variant, metric="epsilon_authors")
    return (
        f"epsilon {epsilons_text(ours, dataset, variant)} (project accountant), {authors:.3g} (authors' autodp)"
        if not math.isnan(authors)
        else epsilons_text(ours, dataset, variant)
    )


@register_renderer("dp2vae/fig5")
def dp2vae_fig5(ctx: RenderContext) -> None:
    grids = sample_grids(ctx)
    published = ctx.published()
    dataset, eps = _one_point(ctx)
    rows = []
    for variant in in_order(ctx.variants(), DP2VAE_PANELS):
        setting = ITEM_SETTINGS[(ctx.item.paper, ctx.item.id)](variant)  # the published cell's key
        fid = value_of(published, setting=setting, metric="fid")
        acc = value_of(published, setting=setting, metric="accuracy")
        label = DP2VAE_PANELS.get(variant, variant)
        title, grid, missing = run_panel(ctx, grids, ctx.experiment, dataset, variant, eps, label)
        recorded = recorded_cells(ctx, ctx.published_method(variant), setting)
        if not recorded.empty and ctx.config.scale != "paper":
            rec_fid = value_of(recorded, metric="fid")
            rec_acc = value_of(recorded, metric="accuracy", classifier="cnn")
            title += f"\nrecorded paper scale: FID {rec_fid:.1f}, CNN {100 * rec_acc:.1f}%"
        rows.append((f"{title}\npaper: FID {fid:g}, CNN {100 * acc:.1f}%", grid, missing))
    sample_figure(
        ctx, [rows], "DP2-VAE Fig. 5 - DP2-VAE ablation at (10, 1e-5), MNIST", protocol_notes(ctx, ctx.experiment)
    )
