"""P3GM's transcribed and configuration items: Tables I-IV and the schematics (Figs 1 and 3)."""

from __future__ import annotations

from dpvae.render.base import RenderContext, register_renderer, side_by_side
from dpvae.render.output import PAPER_LABEL, save_figure, save_table
from dpvae.render.published import published_text_table

#: Table I's column of each method of the transcription (p3gm_table1.csv), in the paper's column order
TABLE1_COLUMNS = {
    "privbayes": "PrivBayes",
    "ryan": "Ryan's",
    "dp-vae": "VAE with DP-SGD",
    "dp-gm": "DP-GM",
    "p3gm": "P3GM",
}


@register_renderer("p3gm/table1")
def p3gm_table1(ctx: RenderContext) -> None:
    """The paper's contrast with its competitors, transcribed: one column per method, in `TABLE1_COLUMNS`."""
    text = published_text_table("p3gm_table1")
    table = text.pivot(index="feature", columns="method", values="value").loc[text["feature"].unique()].reset_index()
    table = table[["feature", *TABLE1_COLUMNS]].rename(columns={"feature": "", **TABLE1_COLUMNS})
    notes = sorted({f for f in text["footnote"] if f})
    save_table(
        table,
        ctx.prefix,
        "P3GM Table I - contrast with competitors (transcribed)",
        [f"({PAPER_LABEL}) {n}" for n in notes],
    )


@register_renderer("p3gm/table2")
def p3gm_table2(ctx: RenderContext) -> None:
    table = published_text_table("p3gm_table2").rename(columns={"symbol": "Symbol", "meaning": "Meaning"})
    save_table(table, ctx.prefix, "P3GM Table II - table of symbols (transcribed)", escape=False)


@register_renderer("p3gm/table3")
def p3gm_table3(ctx: RenderContext) -> None:
    ours = ctx.tables[ctx.experiment]
    table = side_by_side(
        ours,
        ctx.published(),
        {"n_records": "N", "n_features": "#feature", "n_classes": "#class", "pct_positive": "% positive"},
    )
    save_table(
        table,
        ctx.prefix,
        "P3GM Table III - datasets: statistics of the prepared data vs the paper",
        [
            "N counts train + test records of the prepared dataset; #feature excludes the label (the paper counts it "
            "for Adult and ESR).",
            "The reference code subsamples Kaggle Credit (492 frauds + 10,000 normal rows) and keeps Adult's '?' rows "
            "(docs/papers.md A-G1, A-G13); the 'credit-full' and 'adult-dropna' datasets follow the paper's text.",
        ],
    )


@register_renderer("p3gm/table4")
def p3gm_table4(ctx: RenderContext) -> None:
    ours = ctx.tables[ctx.experiment]
    table = side_by_side(
        ours, ctx.published(), {"sigma_s": "sigma_s", "lr": "lr", "epochs": "#epochs", "batch_size": "batch"}
    )
    save_table(table, ctx.prefix, "P3GM Table IV - DP-SGD hyper-parameters: this configuration vs the paper")


@register_renderer("p3gm/fig1")
def p3gm_fig1(ctx: RenderContext) -> None:
    from dpvae.render import schematic

    save_figure(schematic.p3gm_release(), ctx.prefix)


@register_renderer("p3gm/fig3")
def p3gm_fig3(ctx: RenderContext) -> None:
    from dpvae.render import schematic

    save_figure(schematic.p3gm_phases(), ctx.prefix)
