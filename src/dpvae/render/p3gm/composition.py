"""P3GM's Fig. 9: epsilon vs sigma_s of Theorem 4's composition and of the baseline accounting."""

from __future__ import annotations

from dpvae.render.base import RenderContext, register_renderer
from dpvae.render.output import save_figure


@register_renderer("p3gm/fig9")
def p3gm_fig9(ctx: RenderContext) -> None:
    """Epsilon vs sigma_s: Theorem 4's RDP composition below the zCDP + moments-accountant baseline."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    from dpvae.render.output import apply_style

    apply_style()
    table = ctx.tables[ctx.experiment]
    labels = {
        "baseline": "baseline (Gaussian PCA + zCDP EM + moments SGD)",
        "rdp-classic": "RDP composition, Theorem 4 (classic conversion)",
        "rdp-improved": "RDP composition, Theorem 4 (improved conversion, reference code)",
    }
    table = table.assign(accounting=table["method"].map(labels), K=table["variant"])
    fig, ax = plt.subplots(figsize=(6.2, 3.8))
    sns.lineplot(
        table,
        x="point",
        y="value",
        hue="accounting",
        style="K",
        markers=True,
        dashes=True,
        ax=ax,
        hue_order=list(labels.values()),
    )
    params = ctx.config.experiments[ctx.experiment].params
    ax.set(
        xlabel="DP-SGD noise multiplier $\\sigma_s$",
        ylabel=f"$\\varepsilon$ at $\\delta$ = {ctx.config.delta:g}",
        title=(
            f"P3GM Fig. 9 - composition (N={params['n_train']}, B={params['batch_size']}, "
            f"{params['epochs']} epochs, $\\sigma_p$={params['sigma_pca']}, $\\sigma_e$={params['sigma_em']}, "
            f"$T_e$={params['em_iters']})"
        ),
    )
    ax.title.set_fontsize(8)
    ax.legend(fontsize=6)
    save_figure(fig, ctx.prefix)
