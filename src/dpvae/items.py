"""Every figure and table of the four papers: what it reads and whether it can be built yet.

An item is rendered from the tidy tables of its experiments (one per experiment and dataset, or one per
analysis) plus, for qualitative figures, per-run artifacts. Its status is derived, never declared:
an item is *done* when its renderer and every method, metric and analysis it needs are implemented.
"""

from __future__ import annotations

from dataclasses import dataclass

PAPERS = ("privae", "lvae", "p3gm", "dp2vae")


@dataclass(frozen=True)
class Item:
    paper: str
    id: str
    kind: str                      # "table" | "figure"
    title: str
    experiments: tuple[str, ...] = ()
    datasets: tuple[str, ...] = ()  # restrict to these datasets of the experiments (empty = all)
    artifacts: tuple[str, ...] = ()  # per-run metric artifacts read by the renderer (e.g. sample_grid)

    @property
    def key(self) -> str:
        return f"{self.paper}/{self.id}"

    @property
    def outputs(self) -> tuple[str, ...]:
        return ("pdf", "csv", "tex") if self.kind == "table" else ("pdf", "png")


def _items() -> tuple[Item, ...]:
    T, F = "table", "figure"
    return (
        Item("privae", "table1", T, "Sensitivity and noise scale of DP-SGD variants", ("privae_table1",)),
        Item("privae", "fig1", F, "Sparsity task on Fashion-MNIST vs epsilon", ("privae_sparsity",)),
        Item("privae", "fig2", F, "Pinwheel clustering with and without KL(p||q)", ("privae_clustering",),
             artifacts=("pinwheel_scatter",)),
        Item("lvae", "fig1", F, "VAE: membership-inference trade-off and samples", ("lvae_mia",),
             artifacts=("sample_grid",)),
        Item("lvae", "fig2", F, "VAE-DPSGD: membership-inference trade-off and samples", ("lvae_mia",),
             artifacts=("sample_grid",)),
        Item("lvae", "fig3", F, "LVAE: membership-inference trade-off and samples", ("lvae_mia",),
             artifacts=("sample_grid",)),
        Item("p3gm", "table1", T, "Contrast with competitors"),
        Item("p3gm", "table2", T, "Table of symbols"),
        Item("p3gm", "table3", T, "Datasets", ("p3gm_table3",)),
        Item("p3gm", "table4", T, "DP-SGD hyper-parameters", ("p3gm_table4",)),
        Item("p3gm", "table5", T, "Kaggle Credit: VAE, PGM and P3GM per classifier", ("p3gm_credit_components",)),
        Item("p3gm", "table6", T, "Tabular datasets at (1, 1e-5): AUROC and AUPRC", ("p3gm_tabular",)),
        Item("p3gm", "table7", T, "MNIST and Fashion-MNIST at (1, 1e-5): CNN accuracy", ("p3gm_images",)),
        Item("p3gm", "table8", T, "2-way marginal total-variation distance", ("p3gm_tabular",)),
        Item("p3gm", "fig1", F, "Schematic: a data holder releases a DP generative model"),
        Item("p3gm", "fig2", F, "MNIST samples", ("p3gm_images",), datasets=("mnist-p3gm",),
             artifacts=("sample_grid",)),
        Item("p3gm", "fig3", F, "Schematic: VAE vs P3GM's two phases"),
        Item("p3gm", "fig4", F, "Kaggle Credit AUROC / AUPRC vs epsilon", ("p3gm_credit_eps",)),
        Item("p3gm", "fig5", F, "MNIST accuracy vs DP-PCA components", ("p3gm_pca_dim",)),
        Item("p3gm", "fig6", F, "AUROC vs data dimensionality", ("p3gm_dimension",)),
        Item("p3gm", "fig7", F, "Learning efficiency of P3GM, DP-VAE and P3GM(AE)", ("p3gm_efficiency",)),
        Item("p3gm", "fig8", F, "Utility vs privacy-budget allocation", ("p3gm_allocation",)),
        Item("p3gm", "fig9", F, "Epsilon vs sigma_s: RDP composition vs baseline", ("p3gm_composition",)),
        Item("dp2vae", "table1", T, "MNIST / Fashion-MNIST at (10, 1e-5)", ("dp2vae_eps10",)),
        Item("dp2vae", "table2", T, "MNIST / Fashion-MNIST / CelebA at (1, 1e-5)", ("dp2vae_eps1",)),
        Item("dp2vae", "fig1", F, "Samples at (10, 1e-5)", ("dp2vae_eps10",), artifacts=("sample_grid",)),
        Item("dp2vae", "fig2", F, "Samples at (1, 1e-5)", ("dp2vae_eps1", "dp2vae_gswgan_eps1"),
             datasets=("mnist", "fashion-mnist"), artifacts=("sample_grid",)),
        Item("dp2vae", "fig3", F, "CelebA samples at (1, 1e-5)", ("dp2vae_eps1",), datasets=("celeba32",),
             artifacts=("sample_grid",)),
        Item("dp2vae", "fig4", F, "GS-WGAN with and without pre-training", ("dp2vae_gswgan_ablation",),
             artifacts=("sample_grid",)),
        Item("dp2vae", "fig5", F, "DP2-VAE with and without pre-training", ("dp2vae_ablation",),
             artifacts=("sample_grid",)),
        Item("dp2vae", "fig6", F, "Schematic: two-stage training"),
        Item("dp2vae", "fig7", F, "CelebA at (10, 1e-5)", ("dp2vae_celeba_eps10",), artifacts=("sample_grid",)),
        Item("dp2vae", "fig8", F, "DP2-VAE at (0.2, 1e-5)", ("dp2vae_eps02",), artifacts=("sample_grid",)),
        Item("dp2vae", "fig9", F, "FID vs learning rate", ("dp2vae_lr",), artifacts=("sample_grid",)),
    )


ITEMS: dict[str, Item] = {item.key: item for item in _items()}


def get_item(key: str) -> Item:
    try:
        return ITEMS[key]
    except KeyError:
        raise ValueError(f"unknown item '{key}' (known: {', '.join(ITEMS)})") from None


def items_with_id(item_id: str) -> list[Item]:
    """The items called `item_id` across papers (figures/<item_id>.pdf gathers them)."""
    return [item for item in ITEMS.values() if item.id == item_id]


def item_datasets(item: Item, config: dict, experiment: str) -> list[str]:
    datasets = config["experiments"][experiment]["datasets"]
    return [d for d in datasets if not item.datasets or d in item.datasets]


def missing_parts(item: Item, config: dict) -> list[str]:
    """What keeps `item` from being built (empty = done)."""
    from dpvae.analyses import ANALYSES
    from dpvae.eval.registry import METRICS
    from dpvae.methods.registry import METHODS
    from dpvae.render.items import RENDERERS

    missing = [] if RENDERERS.get(item.key) else [f"renderer {item.key}"]
    for name in item.experiments:
        exp = config["experiments"][name]
        if "analysis" in exp:
            missing += [] if ANALYSES.get(exp["analysis"]) else [f"analysis {exp['analysis']}"]
            continue
        for variant in exp["variants"]:
            method = METHODS[config["variants"][variant]["method"]]
            missing += [] if method.implemented else [f"method {method.name}"]
        missing += [f"metric {m}" for m in exp["metrics"] if not METRICS[m].implemented]
    return sorted(set(missing))


def done_items(config: dict) -> list[Item]:
    return [item for item in ITEMS.values() if not missing_parts(item, config)]


def status_table(config: dict) -> str:
    """README's status table: every item, done / partial / not yet, and what it still needs."""
    from dpvae.render.items import RENDERERS

    lines = ["| item | title | status | still needed |", "|---|---|---|---|"]
    for item in ITEMS.values():
        missing = missing_parts(item, config)
        parts = len(item.experiments) + 1
        status = "done" if not missing else ("partial" if RENDERERS.get(item.key) or len(missing) < parts else "not yet")
        title = item.title.replace("|", "\\|")
        lines.append(f"| `{item.key}` | {title} | {status} | {', '.join(missing) or '-'} |")
    return "\n".join(lines)


STATUS_BEGIN, STATUS_END = "<!-- status:begin -->", "<!-- status:end -->"


def readme_with_status(readme: str, config: dict) -> str:
    """README text with the block between the status markers replaced by the current table."""
    head, rest = readme.split(STATUS_BEGIN, 1)
    _, tail = rest.split(STATUS_END, 1)
    return f"{head}{STATUS_BEGIN}\n{status_table(config)}\n{STATUS_END}{tail}"
