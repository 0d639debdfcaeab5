"""DP2-VAE Fig. 6: the schematic of its two-stage training (no data)."""

from __future__ import annotations

from dpvae.render.base import RenderContext, register_renderer
from dpvae.render.output import save_figure


@register_renderer("dp2vae/fig6")
def dp2vae_fig6(ctx: RenderContext) -> None:
    from dpvae.render import schematic

    save_figure(schematic.dp2vae_stages(), ctx.prefix)
