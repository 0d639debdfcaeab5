"""The project's own item audit/dpsgd: claimed ε vs the one-run audit's ε̂, per DP-SGD engine and method.

No published numbers: the claims are the runs' own ledgers (engines: the paper accounting they are
calibrated to; methods: the ledger's headline ε). Each row is one audited run: a filled marker at the
95 % lower bound ε̂, a hollow one at the central estimate (confidence ½), a bar between them, a cross at
the claimed ε and a tick at the most its canaries could show (a lower bound right of the cross would
refute the claim). The figure's tidy data (the audit rows of every run) is written beside it as CSV.
"""

from __future__ import annotations

import pandas as pd

from dpvae.analyses.tidy import TIDY_COLUMNS
from dpvae.files import atomic_write
from dpvae.render.base import RenderContext, register_renderer
from dpvae.render.output import apply_style, pyplot, save_figure

METRICS = (
    "eps_lower",
    "eps_point",
    "eps_max_certifiable",
    "eps_claimed",
    "eps_sound",
    "engine_eps_paper",
    "engine_eps_sound",
    "noise_multiplier",
    "canaries",
    "audit_seconds",
)
ENGINE_LABELS = {
    "dpsgd": "standard DP-SGD",
    "partial": "partial-model",
    "termwise": "term-wise",
    "micro": "micro aggregation",
    "batch": "batch aggregation",
}


def audit_points(tables: dict[str, pd.DataFrame]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(tidy audit rows, one row per audited run with its label and ε columns)."""
    frames = [t for t in tables.values() if not t.empty]
    rows = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=TIDY_COLUMNS)
    rows = rows[rows["metric"].isin(METRICS)].reset_index(drop=True)
    keys = ["experiment", "dataset", "variant", "method", "epsilon", "seed"]
    wide = rows.fillna({"dataset": ""}).pivot_table(index=keys, columns="metric", values="value").reset_index()
    engines = wide["variant"].str.startswith("engine:")
    wide["kind"] = engines.map({True: "engine", False: "method"})
    wide["label"] = [
        ENGINE_LABELS.get(m, m) if e else f"{v} ({d})"
        for e, m, v, d in zip(engines, wide["method"], wide["variant"], wide["dataset"])
    ]
    return rows, wide


def _panel(ax, points: pd.DataFrame, title: str, top: float, legend: bool) -> None:
    """One row per audited run (label, claimed ε): ε̂'s bar from the lower bound (filled) to the central
    estimate (hollow), the claim (×) and the most the canaries could show (|)."""
    points = points.sort_values(["label", "eps_claimed"]).reset_index(drop=True)
    y = list(range(len(points)))[::-1]
    ax.hlines(y, points["eps_lower"], points["eps_point"], color="C0", lw=2)
    ax.scatter(points["eps_lower"], y, color="C0", s=28, zorder=3, label="ε̂ (95 % lower bound)")
    ax.scatter(points["eps_point"], y, facecolors="white", edgecolors="C0", s=28, zorder=3, label="ε̂ (central)")
    ax.scatter(points["eps_claimed"], y, color="C3", marker="x", s=36, zorder=4, label="claimed ε (ledger)")
    ax.scatter(
        points["eps_max_certifiable"], y, color="0.5", marker="|", s=60, zorder=2, label="most the canaries can show"
    )
    ax.set_yticks(
        y, [f"{label}  (ε = {eps:.3g})" for label, eps in zip(points["label"], points["eps_claimed"])], fontsize=7
    )
    ax.set(xlim=(0, top), title=title)
    ax.set_title(title, fontsize=9)
    if legend:
        ax.legend(fontsize=6, loc="lower right")


@register_renderer("audit/dpsgd")
def audit_dpsgd(ctx: RenderContext) -> None:
    rows, wide = audit_points(ctx.tables)
    apply_style()
    panels = [(kind, wide[wide["kind"] == kind]) for kind in ("engine", "method") if (wide["kind"] == kind).any()]
    heights = [max(len(points), 2) for _, points in panels] or [2]
    fig, axes = pyplot().subplots(
        len(heights),
        1,
        figsize=(6.5, 1.2 + 0.28 * sum(heights) + 0.6 * len(heights)),
        squeeze=False,
        gridspec_kw={"height_ratios": heights},
        sharex=True,
    )
    titles = {
        "engine": "DP-SGD engines (small model, canaries through the model's clipping)",
        "method": "private methods (own training entry point, canaries on their engine or noisy release)",
    }
    top = 1.1 * max([wide[c].max() for c in ("eps_claimed", "eps_max_certifiable", "eps_point")] + [1.0])
    for i, (ax, (kind, points)) in enumerate(zip(axes[:, 0], panels)):
        _panel(ax, points, titles[kind], top, legend=i == 0)
    axes[-1, 0].set_xlabel(f"ε at δ = {ctx.config.delta:g}")
    methods = ctx.config.experiments.get(ctx.experiment_for("methods"))
    excluded = ((methods.params if methods else None) or {}).get("exclude") or []
    if excluded:
        fig.text(0.01, 0.005, f"left out at this scale: {', '.join(excluded)} (docs/audit.md)", fontsize=6)
    fig.suptitle(
        "One-run canary audit (Steinke et al. 2023): ε̂ never above the claim = no evidence against it "
        "(a lower bound, not a proof)",
        fontsize=8,
    )
    save_figure(fig, ctx.prefix)
    atomic_write(f"{ctx.prefix}.csv", lambda tmp: rows.to_csv(tmp, index=False, float_format="%.6g"))
