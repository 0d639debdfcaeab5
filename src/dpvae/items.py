"""Every figure and table of the four papers (and the project's own items: the privacy audit, the "today"
comparison): the one list of papers and item ids, and what each item reads.

An item is rendered from the tidy tables of its experiments (one per experiment and dataset, or one per
analysis) plus, for qualitative figures, per-run artifacts. Whether it can be built is derived from the
registries (`dpvae.status`), never declared here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dpvae.errors import TargetError
from dpvae.registry import did_you_mean

PAPERS = ("privae", "lvae", "p3gm", "dp2vae")  # the papers (each with its published numbers)
SECTIONS = (*PAPERS, "audit", "today")  # first path segment of every item: the papers and the project's own


#: The audit item's experiments (analyses): the engine-level audit and every private method audited through
#: its own training entry point (docs/audit.md).
AUDIT_EXPERIMENTS = ("audit_engines", "audit_methods")
#: The "today" item's experiment: the tabular state of the art (MST, AIM) beside the papers' methods on Adult
#: (docs/mst-aim.md); the project's own comparison, not a reproduction: no published number, no scorecard cell.
TODAY_EXPERIMENT = "today_adult"


@dataclass(frozen=True)
class Item:
    paper: str
    id: str
    kind: str  # "table" | "figure"
    title: str
    experiments: tuple[str, ...] = ()
    # what each experiment is to the renderer, in `experiments`' order: named where it must tell them apart
    roles: tuple[str, ...] = ()
    datasets: tuple[str, ...] = ()  # restrict to these datasets of the experiments (empty = all)
    artifacts: tuple[str, ...] = ()  # per-run metric artifacts read by the renderer (e.g. sample_grid)
    extra_outputs: tuple[str, ...] = ()  # a figure's tidy data beside it ("csv")

    def __post_init__(self) -> None:
        if self.roles and (len(self.roles) != len(self.experiments) or len(set(self.roles)) != len(self.roles)):
            raise ValueError(f"item {self.key}: roles {self.roles} are not one distinct role per experiment")

    @property
    def key(self) -> str:
        return f"{self.paper}/{self.id}"

    def experiment_for(self, role: str) -> str:
        """The experiment that plays `role` in this item (`roles`); a ValueError naming the item's roles if none."""
        if role not in self.roles:
            raise ValueError(f"item {self.key} has no experiment in role '{role}'; its roles: {', '.join(self.roles)}")
        return self.experiments[self.roles.index(role)]

    @property
    def outputs(self) -> tuple[str, ...]:
        return ("pdf", "csv", "tex") if self.kind == "table" else ("pdf", "png", *self.extra_outputs)


LVAE_ARTIFACTS = ("sample_grid", "mc_attack", "elbo_attack", "outlier_exposure", "privacy_tradeoff")


def _items() -> tuple[Item, ...]:
    T, F = "table", "figure"
    return (
        Item("privae", "table1", T, "Sensitivity and noise scale of DP-SGD variants", ("privae_table1",)),
        Item("privae", "fig1", F, "Sparsity task on Fashion-MNIST vs epsilon", ("privae_sparsity",)),
        Item(
            "privae",
            "fig2",
            F,
            "Pinwheel clustering with and without KL(p||q)",
            ("privae_clustering",),
            artifacts=("pinwheel_scatter",),
        ),
        Item(
            "lvae",
            "fig1",
            F,
            "VAE: membership-inference trade-off and samples",
            ("lvae_mia",),
            artifacts=LVAE_ARTIFACTS,
        ),
        Item(
            "lvae",
            "fig2",
            F,
            "VAE-DPSGD: membership-inference trade-off and samples",
            ("lvae_mia",),
            artifacts=LVAE_ARTIFACTS,
        ),
        Item(
            "lvae",
            "fig3",
            F,
            "LVAE: membership-inference trade-off and samples",
            ("lvae_mia", "lvae_spectral"),
            artifacts=LVAE_ARTIFACTS,
        ),
        Item("p3gm", "table1", T, "Contrast with competitors"),
        Item("p3gm", "table2", T, "Table of symbols"),
        Item("p3gm", "table3", T, "Datasets", ("p3gm_table3",)),
        Item("p3gm", "table4", T, "DP-SGD hyper-parameters", ("p3gm_table4",)),
        Item("p3gm", "table5", T, "Kaggle Credit: VAE, PGM and P3GM per classifier", ("p3gm_credit_components",)),
        Item("p3gm", "table6", T, "Tabular datasets at (1, 1e-5): AUROC and AUPRC", ("p3gm_tabular",)),
        Item("p3gm", "table7", T, "MNIST and Fashion-MNIST at (1, 1e-5): CNN accuracy", ("p3gm_images",)),
        Item("p3gm", "table8", T, "2-way marginal total-variation distance", ("p3gm_tabular",)),
        Item("p3gm", "fig1", F, "Schematic: a data holder releases a DP generative model"),
        Item(
            "p3gm", "fig2", F, "MNIST samples", ("p3gm_images",), datasets=("mnist-p3gm",), artifacts=("sample_grid",)
        ),
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
        Item(
            "dp2vae",
            "fig2",
            F,
            "Samples at (1, 1e-5)",
            ("dp2vae_eps1", "dp2vae_gswgan_eps1"),
            roles=("main", "gs-wgan"),
            datasets=("mnist", "fashion-mnist"),
            artifacts=("sample_grid",),
        ),
        Item(
            "dp2vae",
            "fig3",
            F,
            "CelebA samples at (1, 1e-5)",
            ("dp2vae_eps1",),
            datasets=("celeba32", "celeba32-standin"),
            artifacts=("sample_grid",),
        ),
        Item(
            "dp2vae",
            "fig4",
            F,
            "GS-WGAN with and without pre-training",
            ("dp2vae_gswgan_ablation",),
            artifacts=("sample_grid",),
        ),
        Item(
            "dp2vae",
            "fig5",
            F,
            "DP2-VAE with and without pre-training",
            ("dp2vae_ablation",),
            artifacts=("sample_grid",),
        ),
        Item("dp2vae", "fig6", F, "Schematic: two-stage training"),
        Item("dp2vae", "fig7", F, "CelebA at (10, 1e-5)", ("dp2vae_celeba_eps10",), artifacts=("sample_grid",)),
        Item("dp2vae", "fig8", F, "DP2-VAE at (0.2, 1e-5)", ("dp2vae_eps02",), artifacts=("sample_grid",)),
        Item("dp2vae", "fig9", F, "FID vs learning rate", ("dp2vae_lr",), artifacts=("sample_grid",)),
        Item(
            "audit",
            "dpsgd",
            F,
            "Empirical privacy audit: claimed epsilon vs one-run lower bound per DP-SGD engine and private method",
            AUDIT_EXPERIMENTS,
            roles=("engines", "methods"),
            extra_outputs=("csv",),
        ),
        Item(
            "today",
            "adult",
            F,
            "Today: MST and AIM beside the papers' methods on UCI Adult - AUROC, AUPRC and 2-way TVD vs epsilon",
            (TODAY_EXPERIMENT,),
            extra_outputs=("csv",),
        ),
    )


ITEMS: dict[str, Item] = {item.key: item for item in _items()}
#: Item ids as a regular expression (Snakemake's `item` wildcard): the papers' tableN / figN and the others.
ITEM_ID_PATTERN = "|".join([r"(table|fig)\d+", *sorted({i.id for i in ITEMS.values() if i.paper not in PAPERS})])


def get_item(key: str) -> Item:
    """The item '<paper>/<id>'; a TargetError naming the paper's valid ids (or the papers) otherwise."""
    if key in ITEMS:
        return ITEMS[key]
    paper, _, item_id = key.partition("/")
    if paper not in SECTIONS:
        raise TargetError(
            f"no paper '{paper}'{did_you_mean(paper, list(SECTIONS))}; the papers are: "
            f"{', '.join(PAPERS)} (and the project's own: {', '.join(SECTIONS[len(PAPERS) :])})"
        )
    ids = [i.id for i in ITEMS.values() if i.paper == paper]
    raise TargetError(
        f"no item '{item_id}' in paper '{paper}'{did_you_mean(item_id, ids)}; its items are: {', '.join(ids)}"
    )


def item_ids(paper: str | None = None) -> list[str]:
    """The item ids of one paper (or of all papers, without duplicates), in paper order."""
    return list(dict.fromkeys(i.id for i in ITEMS.values() if paper in (None, i.paper)))


def items_with_id(item_id: str) -> list[Item]:
    """The items called `item_id` across papers (figures/<item_id>.pdf gathers them)."""
    return [item for item in ITEMS.values() if item.id == item_id]


def item_datasets(item: Item, config: Any, experiment: str) -> list[str]:
    """The datasets of `experiment` the item renders: its own restriction, minus those the configuration
    (a `Config`, or a renderer's context) lists as unreachable (`data.unreachable`: the item then says so
    instead of showing a number)."""
    from dpvae.config_types import as_config

    config = as_config(config)
    datasets = config.experiments[experiment].datasets
    unreachable = set(config.data.unreachable)
    return [d for d in datasets if (not item.datasets or d in item.datasets) and d not in unreachable]
