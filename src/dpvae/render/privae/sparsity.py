"""PriVAE Fig. 1: sparsity, log-likelihood and MMD vs epsilon, under the paper's and the sound calibration."""

from __future__ import annotations

import textwrap

import pandas as pd

from dpvae.config_types import Config
from dpvae.render.base import RenderContext, register_renderer
from dpvae.render.common import in_order
from dpvae.seeds import seed_summary

FIG1_METRICS = {
    "hoyer_sparsity": "(a) Sparsity (Hoyer)",
    "iwae_loglik": "(b) Test log-likelihood (IWAE)",
    "latent_mmd": "(c) MMD(q(z), p(z))",
}
FIG1_LABELS = {
    "privae-mmd": "PriVAE+MMD",
    "privae": "PriVAE",
    "vae-mmd": "VAE+MMD",
    "vae-sparse": "VAE",
    "micro-agg": "micro agg.",
    "batch-agg": "batch agg.",
    "privae-mmd-sound": "PriVAE+MMD",
    "micro-agg-sound": "micro agg.",
    "batch-agg-sound": "batch agg.",
}
FIG1_COLOURS = {
    "PriVAE+MMD": "C3",
    "PriVAE": "C0",
    "VAE+MMD": "C2",
    "VAE": "C7",
    "micro agg.": "C4",
    "batch agg.": "C1",
}
FIG1_CLAIMS = [  # (claim, metric, better variant, worse variant, higher is better)
    ("(a) PriVAE+MMD sparser than PriVAE", "hoyer_sparsity", "PriVAE+MMD", "PriVAE", True),
    ("(a) VAE+MMD sparser than PriVAE+MMD", "hoyer_sparsity", "VAE+MMD", "PriVAE+MMD", True),
    ("(c) PriVAE+MMD lower MMD than PriVAE", "latent_mmd", "PriVAE+MMD", "PriVAE", False),
    ("(b) PriVAE+MMD no higher log-likelihood than PriVAE", "iwae_loglik", "PriVAE", "PriVAE+MMD", True),
]


def _calibration(config: Config, variant: str) -> str:
    """'paper' or 'sound': how a variant's noise is calibrated (non-private and kappa-free rows: both); only the
    PriVAE method's `kappa` option calibrates its noise either way."""
    from dpvae.methods.privae import PriVAE  # here: importing the renderers needs no method registry

    spec = config.variants[variant]
    params = spec.params
    if spec.method != PriVAE.name:
        return "both"
    if params.get("engine", "termwise") == "termwise" and not params.get("clip_batch", 0):
        return "both"  # ordinary DP-SGD: the paper's and the sound accounting agree
    return "paper" if params.get("kappa", "paper") == "paper" else "sound"


def fig1_summary(table: pd.DataFrame) -> pd.DataFrame:
    """`seed_summary` (mean, sd, n) per (variant, epsilon, metric); non-private rows have epsilon NaN."""
    keep = table[
        table["metric"].isin(
            [
                *FIG1_METRICS,
                "epsilon_spent",
                "epsilon_spent_paper",
                "epsilon_spent_sound",
                "iwae_test_records",
                "iwae_k",
                "latent_mmd_per_record",
            ]
        )
    ]
    return seed_summary(keep, ["variant", "epsilon", "metric"], sort=True)


def _claim_lines(summary: pd.DataFrame, rows: dict[str, list[str]]) -> list[str]:
    """For each of the paper's claims and each calibration: at how many epsilons our means agree."""
    lines = []
    for row, variants in rows.items():
        by_label = {FIG1_LABELS[v]: v for v in variants}
        for claim, metric, better, worse, higher in FIG1_CLAIMS:
            if better not in by_label or worse not in by_label:
                continue
            values = summary[summary["metric"] == metric]
            a = values[values["variant"] == by_label[better]].set_index("epsilon")["mean"]
            b = values[values["variant"] == by_label[worse]].set_index("epsilon")["mean"]
            if a.index.isna().all():  # a non-private line: compare it with every epsilon of the other
                a = pd.Series(a.iloc[0], index=b.index)
            if b.index.isna().all():
                b = pd.Series(b.iloc[0], index=a.index)
            common = a.index.intersection(b.index).dropna()
            if common.empty:
                continue
            holds = (a[common] > b[common]) if higher else (a[common] < b[common])
            sign = ">" if higher else "<"
            lines.append(
                f"{row}: {claim} [{better} {sign} {worse}]: holds at {int(holds.sum())}/{len(common)} "
                f"epsilons ({better} - {worse} = {', '.join(f'{(a[e] - b[e]):+.3g}' for e in sorted(common))}"
                f" at epsilon {', '.join(f'{e:g}' for e in sorted(common))})"
            )
    return lines


@register_renderer("privae/fig1", handles=("epsilons",))
def privae_fig1(ctx: RenderContext) -> None:
    """Sparsity, log-likelihood and MMD vs epsilon: the paper's calibration (top) and the sound one (bottom)."""
    from dpvae.render.output import apply_style, pyplot, save_figure

    apply_style()
    plt = pyplot()
    table = ctx.tables[ctx.experiment]
    summary = fig1_summary(table)
    ran = set(table["variant"])
    variants = in_order([v for v in ctx.variants() if v in ran], FIG1_LABELS)
    rows = {
        "paper's calibration": [v for v in variants if _calibration(ctx.config, v) in ("paper", "both")],
        "sound calibration": [v for v in variants if _calibration(ctx.config, v) in ("sound", "both")],
    }
    if not any(_calibration(ctx.config, v) == "sound" for v in variants):
        rows.pop("sound calibration")
    private_eps = sorted(e for e in summary["epsilon"].dropna().unique())
    span = (min(private_eps) / 1.3, max(private_eps) * 1.3) if private_eps else (0.5, 200)
    notes_height = 1.9
    fig = plt.figure(figsize=(12, 3.3 * len(rows) + notes_height))
    grid = fig.add_gridspec(len(rows) + 1, 3, height_ratios=[3.3] * len(rows) + [notes_height])
    axes = [[fig.add_subplot(grid[r, c]) for c in range(3)] for r in range(len(rows))]
    for r, (row, row_variants) in enumerate(rows.items()):
        for c, (metric, title) in enumerate(FIG1_METRICS.items()):
            ax = axes[r][c]
            for variant in row_variants:
                label = FIG1_LABELS.get(variant, variant)
                data = summary[(summary["variant"] == variant) & (summary["metric"] == metric)]
                if data.empty:
                    continue
                mean, std = data["mean"].to_numpy(), data["sd"].fillna(0).to_numpy()
                colour = FIG1_COLOURS.get(label)
                if data["epsilon"].isna().all():  # non-private: a horizontal line with its band
                    ax.axhline(mean[0], color=colour, linestyle="--", label=f"{label} (non-private)")
                    ax.axhspan(mean[0] - std[0], mean[0] + std[0], color=colour, alpha=0.12)
                    continue
                data = data.sort_values("epsilon")
                mean, std = data["mean"].to_numpy(), data["sd"].fillna(0).to_numpy()
                ax.plot(data["epsilon"], mean, marker="o", markersize=3, color=colour, label=label)
                ax.fill_between(data["epsilon"], mean - std, mean + std, color=colour, alpha=0.2)
            ax.set_xscale("log")
            ax.set_xlim(*span)
            ax.set_xlabel(r"privacy $\varepsilon$" + f" ($\\delta$ = {ctx.config.delta:g})")
            ax.set_title(f"{title}\n{row}", fontsize=8)
            if metric == "latent_mmd" and (scale := _per_record_scale(summary)):
                ax.secondary_yaxis("right", functions=(lambda v, s=scale: v * s, lambda v, s=scale: v / s)).set_ylabel(
                    "per test record (Mathieu's analyse.py; the paper's scale)", fontsize=6
                )
        axes[r][0].legend(fontsize=6, loc="best")
    seeds = int(summary[summary["metric"] == "hoyer_sparsity"]["n"].max() or 0)
    records = summary[summary["metric"] == "iwae_test_records"]["mean"]
    k = summary[summary["metric"] == "iwae_k"]["mean"]
    notes = [
        f"Mean of {seeds} seed(s) per point, band = +-1 std; non-private VAE / VAE+MMD (Adam) as dashed lines. "
        + (f"IWAE on the first {int(records.max())} test images" if len(records) else "")
        + (f", K = {int(k.max())} importance samples." if len(k) else "."),
        "Paper (Fig. 1, no numbers published): (a) PriVAE+MMD sparser than PriVAE, a gap to VAE+MMD remains; "
        "(b) PriVAE+MMD does not improve the log-likelihood (trade-off stronger than non-private); "
        "(c) PriVAE+MMD has lower MMD than PriVAE; micro/batch agg. are poor baselines.",
        *("Ours - " + line for line in _claim_lines(summary, rows)),
        *_epsilon_notes(summary, rows),
    ]
    text = fig.add_subplot(grid[len(rows), :])
    text.axis("off")
    text.text(
        0.0,
        1.0,
        "\n".join(textwrap.fill(n, 190, subsequent_indent="    ") for n in notes),
        fontsize=6.5,
        va="top",
        ha="left",
        transform=text.transAxes,
    )
    fig.suptitle("PriVAE Fig. 1 - sparsity task on Fashion-MNIST", fontsize=10)
    fig.tight_layout()
    save_figure(fig, ctx.prefix)


def _per_record_scale(summary: pd.DataFrame) -> float | None:
    """latent_mmd_per_record / latent_mmd (1 / the metric's batch size), if the table has both."""
    mmd = summary[summary["metric"] == "latent_mmd"]["mean"]
    per_record = summary[summary["metric"] == "latent_mmd_per_record"]["mean"]
    if mmd.empty or per_record.empty or not mmd.sum():
        return None
    return float(per_record.sum() / mmd.sum())


def _epsilon_notes(summary: pd.DataFrame, rows: dict[str, list[str]]) -> list[str]:
    """The spent epsilons of each private variant under the paper's and the sound accounting (max over runs)."""
    lines = []
    for variant in dict.fromkeys(v for vs in rows.values() for v in vs):
        spent = summary[summary["variant"] == variant]
        parts = []
        for metric, name in (("epsilon_spent_paper", "paper"), ("epsilon_spent_sound", "sound")):
            values = spent[spent["metric"] == metric]
            if not values.empty:
                ratio = (values["mean"] / values["epsilon"]).max()
                parts.append(f"{name} up to {ratio:.3g} x target")
        if parts:
            lines.append(f"Spent epsilon, {variant}: " + "; ".join(parts))
    return lines
