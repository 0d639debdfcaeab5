"""LVAE Figs 1-3 (Groß & Wunder; docs/papers.md §2), one model each, the variants of one kind from the item's
experiments.

Left: the membership-inference trade-off curves (type-I error α = non-members flagged, type-II error
β = members missed) of the Monte-Carlo attack (the paper's) and of the white-box ELBO attack, one line per
seed, with the diagonal (guessing); for VAE-DPSGD also the curves its guarantee implies — f_{ε,δ} of the
ledger's (ε, δ) (the paper's green curve), the tight curve of the actual mechanism (dp-accounting PLD) and the
Gaussian-DP curve of the CLT μ; for LVAE the f_{ε,δ} of the paper's analytic claim, marked as a claim.
Right: generated samples (first seed) and the planted white outlier beside its reconstruction and its
nearest generated sample, framed in yellow as in the paper. The paper publishes curves only, no numbers.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from dpvae.config_types import Variant
from dpvae.render.base import RenderContext, register_renderer
from dpvae.render.common import mean_sd, metric_stats, run_files
from dpvae.render.output import save_figure
from dpvae.seeds import SeedStats

ATTACKS = {
    "mia_mc": ("Monte-Carlo attack (Hilprecht et al.)", "#0072B2"),
    "mia_elbo": ("white-box ELBO attack", "#D55E00"),
}
YELLOW = "#F0C20C"


def _variant_kind(variant: Variant) -> str:
    """'vae', 'dpsgd' or 'lipschitz' from a variant's configuration."""
    if variant.params.get("constraint", "none") != "none":
        return "lipschitz"
    return "dpsgd" if variant.private is None or variant.private else "vae"


def _variants(ctx: RenderContext, kind: str) -> list[str]:
    """The item's variants of one kind, in the order of its experiments (items.py: the paper's first)."""
    names = dict.fromkeys(v for experiment in ctx.item.experiments for v in ctx.variants(experiment))
    return [v for v in names if _variant_kind(ctx.config.variants[v]) == kind]


def _artifacts(ctx: RenderContext, variant: str, name: str) -> dict[int, Path]:
    """seed -> the file `name` beside the metric artifacts of the variant's runs."""
    return dict(
        sorted({run.seed: file for run, file in run_files(ctx.artifacts, name) if run.variant == variant}.items())
    )


def _stat(table: pd.DataFrame, variant: str, metric: str) -> SeedStats:
    return metric_stats(table, metric, variant=variant)


def _fmt(stat: SeedStats, digits: int = 3) -> str:
    """'mean ± sd' over seeds (the legend says how many), 'n/a' without a number."""
    return mean_sd(stat, digits, missing="n/a", with_n=False)


def _tradeoff_panel(ax, ctx: RenderContext, table: pd.DataFrame, variants: list[str], kind: str) -> None:
    ax.plot([0, 1], [1, 0], color="0.5", ls="--", lw=1, label="random guessing")
    styles = ["-", ":"]
    for v_index, variant in enumerate(variants):
        suffix = f" [{variant}]" if len(variants) > 1 else ""
        for attack, (label, color) in ATTACKS.items():
            curves = _artifacts(ctx, variant, f"{attack}.npz")
            for i, path in enumerate(curves.values()):
                with np.load(path) as curve:
                    ax.plot(
                        curve["alpha"],
                        curve["beta"],
                        color=color,
                        lw=1.2,
                        alpha=0.8,
                        ls=styles[v_index % 2],
                        label=(
                            f"{label}{suffix}: AUC {_fmt(_stat(table, variant, f'{attack}_auc'))}, "
                            f"TPR@1%FPR {_fmt(_stat(table, variant, f'{attack}_tpr_at_1pct_fpr'))}"
                        )
                        if i == 0
                        else None,
                    )
    if kind == "dpsgd" and variants:
        guarantee = _artifacts(ctx, variants[0], "privacy_tradeoff.npz")
        if guarantee:
            with np.load(next(iter(guarantee.values()))) as g:
                eps, delta = float(g["epsilon"]), float(g["delta"])
                ax.plot(
                    g["alpha"],
                    g["eps_delta"],
                    color="#009E73",
                    lw=2,
                    label=f"f-DP bound of the ledger's (ε, δ) = ({eps:.3g}, {delta:.0e})",
                )
                ax.plot(
                    g["alpha"],
                    g["pld"],
                    color="#006B4F",
                    lw=1.5,
                    ls="--",
                    label="tight bound of the actual mechanism (PLD)",
                )
                if "gdp_clt" in g:
                    mu = _stat(table, variants[0], "gdp_mu_clt").mean
                    ax.plot(
                        g["alpha"],
                        g["gdp_clt"],
                        color="#56B4E9",
                        lw=1.2,
                        ls="-.",
                        label=f"Gaussian DP, CLT μ = {mu:.3f} (approximation)",
                    )
    if kind == "lipschitz" and variants:
        claim = _artifacts(ctx, variants[0], "privacy_tradeoff.npz")
        if claim:
            with np.load(next(iter(claim.values()))) as c:
                if "claimed_eps_delta" in c:
                    ax.plot(
                        c["alpha"],
                        c["claimed_eps_delta"],
                        color="#CC79A7",
                        lw=2,
                        label=f"paper's analytic claim ε = 2C = {float(c['claimed_epsilon']):.0f} "
                        "(a claim, not a guarantee)",
                    )
    ax.set(
        xlim=(0, 1),
        ylim=(0, 1),
        aspect="equal",
        xlabel="type-I error α (non-member flagged)",
        ylabel="type-II error β (member missed)",
    )
    ax.legend(fontsize=5.5, loc="lower left")


def _facts(table: pd.DataFrame, variant: str, kind: str) -> str:
    lines = [
        f"ε lower bound (95% CP, held-out threshold): MC {_fmt(_stat(table, variant, 'mia_mc_eps_lower_heldout'), 2)}, "
        f"ELBO {_fmt(_stat(table, variant, 'mia_elbo_eps_lower_heldout'), 2)}",
        f"outlier: recon. dist. {_fmt(_stat(table, variant, 'outlier_recon_distance'), 1)} "
        f"(typical {_fmt(_stat(table, variant, 'typical_recon_distance'), 1)}), nearest sample "
        f"{_fmt(_stat(table, variant, 'outlier_nn_synthetic_distance'), 1)} "
        f"(typical {_fmt(_stat(table, variant, 'typical_nn_synthetic_distance'), 1)})",
    ]
    lines.append(
        f"sample quality: Fréchet distance in PCA-50 space {_fmt(_stat(table, variant, 'frechet_pca'), 1)} "
        f"(real vs real {_fmt(_stat(table, variant, 'frechet_pca_real'), 1)})"
    )
    if kind == "dpsgd":
        lines.append(
            f"ledger ε: paper (headline, add/remove-one RDP) {_fmt(_stat(table, variant, 'epsilon_spent'), 3)}, "
            f"sound (replace-one) {_fmt(_stat(table, variant, 'epsilon_spent_sound'), 3)}; "
            f"PLD ε {_fmt(_stat(table, variant, 'pld_epsilon'), 3)}"
        )
    if kind == "lipschitz":
        lines.append(
            f"L = {_fmt(_stat(table, variant, 'claimed_lipschitz'), 1)}; measured max ‖J‖ "
            f"{_fmt(_stat(table, variant, 'measured_lipschitz_max'), 1)}"
        )
    return "\n".join(lines)


def _training(ctx: RenderContext, variants: list[str]) -> str:
    """The training setting of the shown variants (epochs, batch), which CPU overlays change."""
    parts = []
    for variant in variants:
        params = ctx.config.variants[variant].params
        parts.append(
            f"{params.get('epochs', '?'):g} epoch(s) at B = {params.get('batch_size', '?')}"
            if isinstance(params.get("epochs"), (int, float))
            else "epochs ?"
        )
    return ", ".join(dict.fromkeys(parts)) or "no variant"


def _samples_panel(fig, spec, ctx: RenderContext, variant: str) -> None:
    grids = _artifacts(ctx, variant, "sample_grid.npz")
    outliers = _artifacts(ctx, variant, "outlier.npz")
    inner = spec.subgridspec(2, 1, height_ratios=[4, 1.25], hspace=0.25)
    ax = fig.add_subplot(inner[0])
    ax.axis("off")
    if grids:
        with np.load(next(iter(grids.values()))) as g:
            rows, cols, images = int(g["rows"]), int(g["cols"]), g["x"]
        tiles = np.ones((rows * cols, 28, 28))
        tiles[: len(images)] = images.reshape(len(images), 28, 28)
        mosaic = tiles.reshape(rows, cols, 28, 28).transpose(0, 2, 1, 3).reshape(rows * 28, cols * 28)
        ax.imshow(mosaic, cmap="gray", vmin=0, vmax=1, interpolation="nearest")
        ax.set_title(f"generated samples (seed {next(iter(grids))})", fontsize=8)
    strip = inner[1].subgridspec(1, 3, wspace=0.15)
    if outliers:
        with np.load(next(iter(outliers.values()))) as o:
            shown = [
                ("white outlier", o["outlier"]),
                ("its reconstruction", o["reconstruction"] if "reconstruction" in o else None),
                ("nearest sample", o["nearest_synthetic"]),
            ]
        for i, (title, image) in enumerate(shown):
            a = fig.add_subplot(strip[i])
            a.set_xticks([]), a.set_yticks([])
            if image is not None:
                a.imshow(np.asarray(image).reshape(28, 28), cmap="gray", vmin=0, vmax=1)
            for side in a.spines.values():
                side.set_edgecolor(YELLOW), side.set_linewidth(2.5)
            a.set_title(title, fontsize=6)


def _figure(ctx: RenderContext, kind: str, title: str) -> None:
    from dpvae.render.output import apply_style, pyplot

    apply_style()
    plt = pyplot()
    frames = [f for f in ctx.tables.values() if len(f)]
    table = (
        pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["variant", "metric", "value", "seed"])
    )
    variants = _variants(ctx, kind)
    fig = plt.figure(figsize=(9.5, 5.2))
    outer = fig.add_gridspec(1, 2, width_ratios=[1.15, 1], wspace=0.12)
    ax = fig.add_subplot(outer[0])
    _tradeoff_panel(ax, ctx, table, variants, kind)
    if variants:
        ax.text(
            0.99,
            0.99,
            _facts(table, variants[0], kind),
            transform=ax.transAxes,
            ha="right",
            va="top",
            fontsize=5.5,
            bbox={"facecolor": "white", "alpha": 0.85, "edgecolor": "0.8"},
        )
        _samples_panel(fig, outer[1], ctx, variants[0])
    seeds = sorted({int(s) for s in table["seed"].dropna()}) if "seed" in table else []
    fig.suptitle(
        f"{title} ({', '.join(variants)}; {len(seeds)} seed(s); {_training(ctx, variants)}; "
        "paper: curves only, no numbers)",
        fontsize=9,
    )
    save_figure(fig, ctx.prefix)


@register_renderer("lvae/fig1")
def lvae_fig1(ctx: RenderContext) -> None:
    _figure(ctx, "vae", "LVAE Fig. 1 - VAE: attack trade-off and samples")


@register_renderer("lvae/fig2")
def lvae_fig2(ctx: RenderContext) -> None:
    _figure(ctx, "dpsgd", "LVAE Fig. 2 - VAE-DPSGD: attack trade-off, its guarantee, and samples")


@register_renderer("lvae/fig3")
def lvae_fig3(ctx: RenderContext) -> None:
    _figure(ctx, "lipschitz", "LVAE Fig. 3 - LVAE (Lipschitz decoder): attack trade-off and samples")
