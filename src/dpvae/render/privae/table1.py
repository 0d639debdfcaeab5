"""PriVAE Table 1: sensitivity and noise scale of the DP-SGD variants (its analysis' table)."""

from __future__ import annotations

import pandas as pd

from dpvae.render.base import RenderContext, register_renderer
from dpvae.render.output import PAPER_LABEL, save_table


@register_renderer("privae/table1")
def privae_table1(ctx: RenderContext) -> None:
    """Sensitivity and noise scale: the paper's formulas, their values, sound bounds and engine measurements,
    and the epsilon of the paper's accounting beside the sound one."""
    from dpvae.analyses.privae_table1 import FORMULAS

    values = ctx.tables[ctx.experiment].pivot_table(index="method", columns="metric", values="value")
    rows = []
    for method, (loss, sensitivity, noise) in FORMULAS.items():
        v = values.loc[method]
        rows.append(
            {
                "method": method,
                f"L ({PAPER_LABEL})": loss,
                f"l2-sensitivity ({PAPER_LABEL})": sensitivity,
                "= value": v["sensitivity"],
                "sound add/remove bound": v["sensitivity_sound"],
                "measured: remove one": v["sensitivity_measured_remove"],
                "measured: replace one": v["sensitivity_measured_replace"],
                f"noise scale ({PAPER_LABEL})": noise,
                "= value ": v["noise_scale"],
                "exact noise std": v["noise_std"],
            }
        )
    params = ctx.config.experiments[ctx.experiment].params
    sigma, kappa = values.loc["term-wise", "sigma"], values.loc["term-wise", "kappa"]
    target = params["epsilon"]
    termwise = values.loc["term-wise"]
    kappas = "; ".join(
        f"kappa {option} = {termwise[f'kappa_{option}']:.4g}: paper {termwise[f'epsilon_paper_kappa_{option}']:.4g}, "
        f"sound {termwise[f'epsilon_sound_kappa_{option}']:.4g}"
        for option in ("paper", "sqrt5", "tight")
    )
    aggregation = "; ".join(
        f"{method}: paper {values.loc[method, 'epsilon_paper']:.4g}, sound {values.loc[method, 'epsilon_sound']:.4g}"
        for method in ("micro agg.", "batch agg.")
    )
    save_table(
        pd.DataFrame(rows),
        ctx.prefix,
        "PriVAE Table 1 - sensitivity and noise scale of DP-SGD variants",
        [
            f"B = {params['batch_size']}, b = {params['groups']}, C1 = {params['clip_sample']}, "
            f"C2 = {params['clip_batch']}, "
            f"C = {params['clip']}; sigma = {sigma:.4g} for ({target:g}, {ctx.config.delta:g}) over "
            f"{params['epochs']:g} epochs (classic RDP conversion), kappa = {kappa:.4g} (the paper's closed form).",
            "Measured: the largest change of the pre-noise aggregate when one record of a real Fashion-MNIST batch is "
            "removed, or replaced by another real record (other records keep their noise, prior draws and sub-group "
            "labels), on the PriVAE conv VAE at initialisation. Sound bound: add/remove-one for every realised Poisson "
            "batch, where a record that leaves a shared unit (the batch, a sub-group) changes that unit instead of "
            "removing it: 2C per changed unit, so micro 2BC (its sum is divided by max(n, B) for a batch of n), batch "
            "2C, term-wise C1 + 2 C2.",
            f"Epsilon at this setting (target {target:g}), the paper's accounting beside the sound one. {aggregation}. "
            "Term-wise (sigma' = kappa*sigma; paper = Theorem 2's two halves at delta/2, sound = the released "
            f"gradient as one Gaussian mechanism with sensitivity C1/B + 2 C2/b): {kappas}. Every sound epsilon is "
            "under replace-one (a removal and an addition, each at the add/remove bound; Mironov 2017, Prop. 11).",
            "Exact noise std: per coordinate of the averaged gradient; the paper's term-wise noise scale adds the two "
            "halves' standard deviations, an upper bound of the exact value kappa*sigma*sqrt((C1/B)^2 + (C2/b)^2).",
        ],
    )
