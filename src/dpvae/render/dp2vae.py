"""DP2-VAE's renderers (Jiang et al. 2022; PAPERS.md section 4)."""

from __future__ import annotations

from dpvae.render.base import RenderContext, register_renderer
from dpvae.render.output import save_figure


@register_renderer("dp2vae/fig6")
def dp2vae_fig6(ctx: RenderContext) -> None:
    from dpvae.render import schematic

    save_figure(schematic.dp2vae_stages(), ctx.prefix)
