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


def _schematic(draw: Callable[[], object]) -> Callable[[RenderContext], None]:
    return lambda ctx: save_figure(draw(), ctx.prefix)


RENDERERS: dict[str, Callable[[RenderContext], None]] = {
    "p3gm/table1": p3gm_table1,
    "p3gm/table2": p3gm_table2,
    "p3gm/table3": p3gm_table3,
    "p3gm/table4": p3gm_table4,
    "p3gm/fig1": _schematic(schematic.p3gm_release),
    "p3gm/fig3": _schematic(schematic.p3gm_phases),
    "dp2vae/fig6": _schematic(schematic.dp2vae_stages),
}
