"""DP2-VAE Fig. 9: FID vs the stage-2 learning rate (the experiment's sweep), with a sample grid per point."""

from __future__ import annotations

from dpvae.render.base import RenderContext, register_renderer
from dpvae.render.dp2vae.shared import draw_panel, protocol_notes, sample_grids, scale_label
from dpvae.render.output import apply_style, pyplot, save_figure


@register_renderer("dp2vae/fig9")
def dp2vae_fig9(ctx: RenderContext) -> None:
    apply_style()
    plt = pyplot()
    table = ctx.tables[ctx.experiment]
    fid = table[table["metric"] == "fid"].assign(lr=lambda t: t["point"].astype(float)).sort_values("lr")
    grids = sample_grids(ctx)
    points = sorted({v.split("=", 1)[1] for (_, v, _) in grids}, key=float) or list(fid["point"].astype(str))
    fig = plt.figure(figsize=(max(6.0, 1.6 * len(points)), 5.0))
    ax = fig.add_axes((0.1, 0.45, 0.85, 0.45))
    ax.plot(fid["lr"], fid["value"], marker="o", label=scale_label(ctx))
    ax.set(
        xscale="log",
        xlabel="stage-2 learning rate",
        ylabel="FID (lower is better)",
        title="DP2-VAE Fig. 9 - FID vs learning rate, MNIST at (10, 1e-5)",
    )
    ax.title.set_fontsize(9)
    ax.legend(fontsize=7)
    for index, point in enumerate(points):
        sub = fig.add_axes((0.05 + index * 0.9 / len(points), 0.02, 0.85 / len(points), 0.3))
        grid = next((g for (d, v, e), g in grids.items() if v.endswith(f"={point}")), None)
        draw_panel(sub, grid, f"lr {point}")
    notes = [
        "Paper: too large or too small a learning rate hurts; 1e-4 is best on all three datasets (grid not "
        "given; [choice] 1e-5 ... 1e-3)."
    ] + protocol_notes(ctx, ctx.experiment)
    fig.text(0.01, -0.04, "\n".join(notes), fontsize=5.5, va="top", wrap=True)
    save_figure(fig, ctx.prefix)
