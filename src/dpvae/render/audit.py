"""The project's own item audit/dpsgd: claimed ε vs the one-run audit's ε̂, per DP-SGD engine and method.

No published numbers: the claims are the runs' own ledgers (engines: the paper accounting they are
calibrated to; methods: the ledger's headline ε). Each point is one audited run: a filled marker at the
95 % lower bound ε̂, a hollow one at the central estimate (confidence ½), a bar between them, a tick at the
most its canaries could show; the dashed diagonal is ε̂ = claimed ε (a point above it would refute the
claim). The figure's tidy data (the audit rows of every run) is written beside it as CSV.
"""

from __future__ import annotations

import pandas as pd

from dpvae.analyses.tidy import TIDY_COLUMNS
from dpvae.files import atomic_write
from dpvae.render.base import RenderContext, register_renderer
from dpvae.render.output import apply_style, pyplot, save_figure

METRICS = ("eps_lower", "eps_point", "eps_max_certifiable", "eps_claimed", "eps_sound", "engine_eps_paper",
           "engine_eps_sound", "noise_multiplier", "canaries", "audit_seconds")
ENGINE_LABELS = {"dpsgd": "standard DP-SGD", "partial": "partial-model", "termwise": "term-wise",
                 "micro": "micro aggregation", "batch": "batch aggregation"}


def audit_points(tables: dict[str, pd.DataFrame]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(tidy audit rows, one row per audited run with its label and ε columns)."""
    frames = [t for t in tables.values() if not t.empty]
    rows = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=TIDY_COLUMNS)
    rows = rows[rows["metric"].isin(METRICS)].reset_index(drop=True)
    keys = ["experiment", "dataset", "variant", "method", "epsilon", "seed"]
    wide = rows.fillna({"dataset": ""}).pivot_table(index=keys, columns="metric", values="value").reset_index()
    engines = wide["variant"].str.startswith("engine:")
    wide["kind"] = engines.map({True: "engine", False: "method"})
    wide["label"] = [ENGINE_LABELS.get(m, m) if e else f"{v} ({d})"
                     for e, m, v, d in zip(engines, wide["method"], wide["variant"], wide["dataset"])]
    return rows, wide


def _panel(ax, points: pd.DataFrame, title: str) -> None:
    top = max(points["eps_claimed"].max(), points["eps_max_certifiable"].max()) * 1.15
    ax.plot([0, top], [0, top], ls="--", color="0.4", lw=1, label="ε̂ = claimed ε")
    palette = pyplot().get_cmap("tab10")
    for i, (label, group) in enumerate(points.groupby("label", sort=False)):
        color = palette(i % 10)
        x = group["eps_claimed"] * (1 + 0.04 * (i - len(points["label"].unique()) / 2))  # dodge
        ax.vlines(x, group["eps_lower"], group["eps_point"], color=color, lw=1.5)
        ax.scatter(x, group["eps_lower"], color=color, s=28, zorder=3, label=label)
        ax.scatter(x, group["eps_point"], facecolors="white", edgecolors=color, s=28, zorder=3)
        ax.scatter(x, group["eps_max_certifiable"], color=color, marker="_", s=60, zorder=3)
    ax.set(xlim=(0, top), ylim=(0, top), xlabel="claimed ε (ledger)", ylabel="audited ε̂", title=title)
    ax.legend(fontsize=6, loc="upper left")


@register_renderer("audit/dpsgd")
def audit_dpsgd(ctx: RenderContext) -> None:
    rows, wide = audit_points(ctx.tables)
    apply_style()
    panels = [(kind, wide[wide["kind"] == kind]) for kind in ("engine", "method") if (wide["kind"] == kind).any()]
    fig, axes = pyplot().subplots(1, max(len(panels), 1), figsize=(4.2 * max(len(panels), 1), 4), squeeze=False)
    titles = {"engine": "DP-SGD engines (small model, canaries through the model)",
              "method": "private methods (own training, canaries on the engine)"}
    for ax, (kind, points) in zip(axes[0], panels):
        _panel(ax, points, titles[kind])
    delta = ctx.config.get("delta")
    fig.suptitle(f"One-run canary audit (Steinke et al. 2023) at δ = {delta:g}: filled = 95 % lower bound, "
                 "hollow = central estimate, tick = most the canaries can show", fontsize=7, y=1.02)
    save_figure(fig, ctx.prefix)
    atomic_write(f"{ctx.prefix}.csv", lambda tmp: rows.to_csv(tmp, index=False, float_format="%.6g"))
