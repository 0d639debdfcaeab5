"""One renderer per item id. Each reads only tidy tables, per-run artifacts and published numbers.

`RENDERERS[key]` is a function of a `RenderContext`; an item without an entry is not done yet.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pandas as pd

from dpvae.items import Item
from dpvae.render import schematic
from dpvae.render.output import PAPER_LABEL, save_figure, save_table
from dpvae.render.published import load_published, published_text_table


@dataclass
class RenderContext:
    item: Item
    prefix: str                                   # figures/<paper>/<item>
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)   # experiment -> tidy table
    artifacts: list[str] = field(default_factory=list)
    config: dict = field(default_factory=dict)    # the experiments and variants the item uses

    def published(self) -> pd.DataFrame:
        frame = load_published(self.item.paper)
        return frame[frame["item"] == self.item.id]


def paper_dataset(dataset: str) -> str:
    """The dataset name the published CSVs use for one of our dataset ids."""
    for suffix in ("-p3gm", "-32", "-lvae", "-dropna", "-full"):
        dataset = dataset.removesuffix(suffix)
    return "celeba" if dataset == "celeba32" else ("twogauss" if dataset.startswith("twogauss") else dataset)


def _side_by_side(reproduced: pd.DataFrame, published: pd.DataFrame, metrics: dict[str, str],
                  index: str = "dataset") -> pd.DataFrame:
    """One row per `index` value; for each metric a reproduced column and a 'paper' column."""
    published = published.assign(key=published[index])
    table = pd.DataFrame({index: list(dict.fromkeys(reproduced[index]))})
    key = table[index].map(paper_dataset) if index == "dataset" else table[index]
    for metric, label in metrics.items():
        ours = reproduced[reproduced["metric"] == metric].set_index(index)["value"]
        theirs = published[published["metric"] == metric].set_index("key")["value"]
        table[label] = table[index].map(ours)
        table[f"{label} ({PAPER_LABEL})"] = key.map(theirs)
    return table


def privae_table1(ctx: RenderContext) -> None:
    """Sensitivity and noise scale: the paper's formulas, their values, sound bounds and engine measurements,
    and the epsilon of the paper's accounting beside the sound one."""
    from dpvae.analyses.privae_table1 import FORMULAS

    values = ctx.tables["privae_table1"].pivot_table(index="method", columns="metric", values="value")
    rows = []
    for method, (loss, sensitivity, noise) in FORMULAS.items():
        v = values.loc[method]
        rows.append({"method": method, f"L ({PAPER_LABEL})": loss, f"l2-sensitivity ({PAPER_LABEL})": sensitivity,
                     "= value": v["sensitivity"], "sound add/remove bound": v["sensitivity_sound"],
                     "measured: remove one": v["sensitivity_measured_remove"],
                     "measured: replace one": v["sensitivity_measured_replace"],
                     f"noise scale ({PAPER_LABEL})": noise, "= value ": v["noise_scale"],
                     "exact noise std": v["noise_std"]})
    params = ctx.config["experiments"]["privae_table1"]["params"]
    sigma, kappa = values.loc["term-wise", "sigma"], values.loc["term-wise", "kappa"]
    target = params["epsilon"]
    termwise = values.loc["term-wise"]
    kappas = "; ".join(
        f"kappa {option} = {termwise[f'kappa_{option}']:.4g}: paper {termwise[f'epsilon_paper_kappa_{option}']:.4g}, "
        f"sound {termwise[f'epsilon_sound_kappa_{option}']:.4g}" for option in ("paper", "sqrt5", "tight"))
    aggregation = "; ".join(
        f"{method}: paper {values.loc[method, 'epsilon_paper']:.4g}, sound {values.loc[method, 'epsilon_sound']:.4g}"
        for method in ("micro agg.", "batch agg."))
    save_table(pd.DataFrame(rows), ctx.prefix, "PriVAE Table 1 - sensitivity and noise scale of DP-SGD variants", [
        f"B = {params['batch_size']}, b = {params['groups']}, C1 = {params['clip_sample']}, C2 = {params['clip_batch']}, "
        f"C = {params['clip']}; sigma = {sigma:.4g} for ({target:g}, {ctx.config['delta']:g}) over "
        f"{params['epochs']:g} epochs (classic RDP conversion), kappa = {kappa:.4g} (the paper's closed form).",
        "Measured: the largest change of the pre-noise aggregate when one record of a real Fashion-MNIST batch is "
        "removed, or replaced by another real record (other records keep their noise, prior draws and sub-group "
        "labels), on the PriVAE conv VAE at initialisation. Sound bound: add/remove-one for every realised Poisson "
        "batch, where a record that leaves a shared unit (the batch, a sub-group) changes that unit instead of "
        "removing it: 2C per changed unit, so micro 2BC (its sum is divided by max(n, B) for a batch of n), batch "
        "2C, term-wise C1 + 2 C2.",
        f"Epsilon at this setting (target {target:g}), the paper's accounting beside the sound one. {aggregation}. "
        f"Term-wise (sigma' = kappa*sigma; paper = Theorem 2's two halves at delta/2, sound = the released gradient "
        f"as one Gaussian mechanism with sensitivity C1/B + 2 C2/b): {kappas}.",
        "Exact noise std: per coordinate of the averaged gradient; the paper's term-wise noise scale adds the two "
        "halves' standard deviations, an upper bound of the exact value kappa*sigma*sqrt((C1/B)^2 + (C2/b)^2).",
    ])


def p3gm_table1(ctx: RenderContext) -> None:
    text = published_text_table("p3gm_table1")
    table = text.pivot(index="feature", columns="method", values="value").loc[text["feature"].unique()].reset_index()
    order = ["privbayes", "ryan", "dp-vae", "dp-gm", "p3gm"]
    table = table[["feature"] + order].rename(columns={"feature": "", "privbayes": "PrivBayes", "ryan": "Ryan's",
                                                        "dp-vae": "VAE with DP-SGD", "dp-gm": "DP-GM",
                                                        "p3gm": "P3GM"})
    notes = sorted({f for f in text["footnote"] if f})
    save_table(table, ctx.prefix, "P3GM Table I - contrast with competitors (transcribed)",
               [f"({PAPER_LABEL}) {n}" for n in notes])


def p3gm_table2(ctx: RenderContext) -> None:
    table = published_text_table("p3gm_table2").rename(columns={"symbol": "Symbol", "meaning": "Meaning"})
    save_table(table, ctx.prefix, "P3GM Table II - table of symbols (transcribed)", escape=False)


def p3gm_table3(ctx: RenderContext) -> None:
    ours = ctx.tables["p3gm_table3"]
    table = _side_by_side(ours, ctx.published(), {"n_records": "N", "n_features": "#feature",
                                                  "n_classes": "#class", "pct_positive": "% positive"})
    save_table(table, ctx.prefix, "P3GM Table III - datasets: statistics of the prepared data vs the paper", [
        "N counts train + test records of the prepared dataset; #feature excludes the label (the paper counts it "
        "for Adult and ESR).",
        "The reference code subsamples Kaggle Credit (492 frauds + 10,000 normal rows) and keeps Adult's '?' rows "
        "(PAPERS.md A-G1, A-G13); the 'credit-full' and 'adult-dropna' datasets follow the paper's text.",
    ])


def p3gm_table4(ctx: RenderContext) -> None:
    ours = ctx.tables["p3gm_table4"]
    table = _side_by_side(ours, ctx.published(), {"sigma_s": "sigma_s", "lr": "lr", "epochs": "#epochs",
                                                  "batch_size": "batch"})
    save_table(table, ctx.prefix, "P3GM Table IV - DP-SGD hyper-parameters: this configuration vs the paper")


def p3gm_fig9(ctx: RenderContext) -> None:
    """Epsilon vs sigma_s: Theorem 4's RDP composition below the zCDP + moments-accountant baseline."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    from dpvae.render.output import apply_style

    apply_style()
    table = ctx.tables["p3gm_composition"]
    labels = {"baseline": "baseline (Gaussian PCA + zCDP EM + moments SGD)",
              "rdp-classic": "RDP composition, Theorem 4 (classic conversion)",
              "rdp-improved": "RDP composition, Theorem 4 (improved conversion, reference code)"}
    table = table.assign(accounting=table["method"].map(labels), K=table["variant"])
    fig, ax = plt.subplots(figsize=(6.2, 3.8))
    sns.lineplot(table, x="point", y="value", hue="accounting", style="K", markers=True, dashes=True, ax=ax,
                 hue_order=list(labels.values()))
    params = ctx.config["experiments"]["p3gm_composition"]["params"]
    ax.set(xlabel="DP-SGD noise multiplier $\\sigma_s$", ylabel=f"$\\varepsilon$ at $\\delta$ = {ctx.config['delta']:g}",
           title=(f"P3GM Fig. 9 - composition (N={params['n_train']}, B={params['batch_size']}, "
                  f"{params['epochs']} epochs, $\\sigma_p$={params['sigma_pca']}, $\\sigma_e$={params['sigma_em']}, "
                  f"$T_e$={params['em_iters']})"))
    ax.title.set_fontsize(8)
    ax.legend(fontsize=6)
    save_figure(fig, ctx.prefix)


def _schematic(draw: Callable[[], object]) -> Callable[[RenderContext], None]:
    return lambda ctx: save_figure(draw(), ctx.prefix)


RENDERERS: dict[str, Callable[[RenderContext], None]] = {
    "privae/table1": privae_table1,
    "p3gm/table1": p3gm_table1,
    "p3gm/table2": p3gm_table2,
    "p3gm/table3": p3gm_table3,
    "p3gm/table4": p3gm_table4,
    "p3gm/fig9": p3gm_fig9,
    "p3gm/fig1": _schematic(schematic.p3gm_release),
    "p3gm/fig3": _schematic(schematic.p3gm_phases),
    "dp2vae/fig6": _schematic(schematic.dp2vae_stages),
}
