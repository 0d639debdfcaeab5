"""What DP2-VAE's items share: labels, dataset names, our means beside the published and recorded cells, the
protocol notes, epsilons, and the sample-grid panels of its figures.

Every number of ours states the protocol it was measured with (FID sample count and reference, classifier
protocol, accounting).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from dpvae.render.base import RenderContext, paper_dataset
from dpvae.render.common import in_order, is_standin, matching, run_files
from dpvae.render.output import PAPER_LABEL, apply_style, pyplot, save_figure
from dpvae.reproductions import NOT_DP_MARK, REPRODUCTIONS_DIR, not_dp_notes
from dpvae.runs import is_private
from dpvae.schema import format_eps

#: how the tables print each method id of the published numbers (an id without a label prints as itself)
LABELS = {
    "real": "Real data",
    "dp-cgan": "DP-CGAN",
    "dp-merf": "DP-MERF",
    "g-pate": "G-PATE",
    "datalens": "DataLens",
    "gs-wgan": "GS-WGAN",
    "dp-sinkhorn-m1": "DP-Sinkhorn (m=1)",
    "dp-sinkhorn-m3": "DP-Sinkhorn (m=3)",
    "dp2vae": "Ours (DP2-VAE)",
    "pate-gan": "PATE-GAN",
}
DATASETS = {"mnist": "MNIST", "fashion-mnist": "FMNIST", "celeba": "CelebA"}
BENCH = "dpimagebench"
#: FID of real training images against the test split at 60,000 and 10,000 images (workflow/campaigns/
#: dp2vae_real_fid.py): what the FID sample count of a protocol does, measured on real images
REAL_FID_STUDY = REPRODUCTIONS_DIR / "studies" / "dp2vae_real_fid.csv"


# ------------------------------------------------------------------------------------------------ helpers


def in_paper_order(datasets) -> list[str]:
    """Our dataset ids in the paper's column order (MNIST, Fashion-MNIST, CelebA)."""
    order = list(DATASETS)
    return sorted(
        dict.fromkeys(datasets), key=lambda d: (order.index(paper_dataset(d)) if paper_dataset(d) in order else 9, d)
    )


def dataset_name(dataset: str) -> str:
    """The paper's name of one of our dataset ids (MNIST, FMNIST, CelebA), else the id itself."""
    return DATASETS.get(paper_dataset(dataset), dataset)


def scale_label(ctx: RenderContext) -> str:
    return f"ours ({ctx.config.scale} scale)"


def ours_means(table: pd.DataFrame) -> pd.DataFrame:
    """Our tidy rows, one value per (dataset, variant, metric, classifier) (mean over seeds)."""
    if table.empty:
        return pd.DataFrame(columns=["dataset", "variant", "method", "epsilon", "metric", "classifier", "value"])
    table = table.assign(classifier=table["classifier"].fillna(""), epsilon=table["epsilon"].astype(float))
    keys = ["dataset", "variant", "method", "epsilon", "metric", "classifier"]
    return table.groupby(keys, as_index=False, dropna=False)["value"].mean()


def value_of(frame: pd.DataFrame, **key) -> float:
    """The first value of the rows matching `key` (NaN if none)."""
    hit = matching(frame, **key)
    return float(hit["value"].iloc[0]) if len(hit) else math.nan


def paper_epsilon(ctx: RenderContext, experiment: str) -> str:
    """The epsilon(s) the paper ran the experiment at (its `paper_setting`), as the tables print them."""
    return ", ".join(format_eps(e) for e in ctx.config.experiments[experiment].paper_setting.epsilons)


def printed_epsilon(published: pd.DataFrame, method: str, paper_eps: str) -> str:
    """A published row's epsilon: 'inf' where the paper prints `method` without one (non-private: the real data,
    workflow/resources/published/README.md), else the experiment's paper epsilon(s) `paper_eps`."""
    return "inf" if published.loc[published["method"] == method, "epsilon"].isna().all() else paper_eps


def paper_datasets(ctx: RenderContext, experiment: str) -> list[str]:
    """The papers' names of the datasets the paper ran the experiment on (its `paper_setting`)."""
    return list(ctx.config.experiments[experiment].paper_setting.datasets)


def method_of(ctx: RenderContext, variant: str) -> str:
    return ctx.config.variants[variant].method


def generators(ctx: RenderContext, experiment: str) -> list[str]:
    """The experiment's private variants (the real-data one generates nothing), in the paper's method order."""
    private = [v for v in ctx.variants(experiment) if is_private(ctx.config, v)]
    order = in_order(dict.fromkeys(method_of(ctx, v) for v in private), LABELS)
    return [v for method in order for v in private if method_of(ctx, v) == method]


def run_points(ctx: RenderContext, experiment: str) -> list[tuple[str, str]]:
    """(dataset, epsilon label of its runs' paths) of every configured dataset and epsilon of the experiment."""
    exp = ctx.config.experiments[experiment]
    return [(d, format_eps(e)) for d in exp.datasets for e in exp.epsilons]


def pct(value: float) -> float:
    return round(100 * value, 1) if not math.isnan(value) else math.nan


def sources(published: pd.DataFrame, method: str) -> list[tuple[str, pd.DataFrame]]:
    """(row label, rows) for each published source of `method`: the paper (or 'cited from ...') and DPImageBench."""
    rows = published[published["method"] == method]
    out = []
    for source, part in rows.groupby(["source", "cited_from"], sort=False):
        kind, cited = source
        if kind == BENCH:
            out.append(("DPImageBench (Gong et al. 2025), its protocol", part))
        elif cited:
            out.append((f"{PAPER_LABEL}, cited from {cited}", part))
        else:
            out.append((PAPER_LABEL, part))
    return out


def recorded_cells(ctx: RenderContext, method: str, setting: str = "") -> pd.DataFrame:
    """Recorded paper-scale cells of `method` (reproductions/dp2vae.csv), 'value' = their mean over seeds."""
    rec = ctx.recorded()
    rec = rec[(rec["method"] == method) & (rec["setting"].fillna("") == setting)]
    return rec.assign(value=rec["mean"])


def recorded_label(recorded: pd.DataFrame) -> str:
    """The label of recorded cells: their devices, and a dagger where a row is not DP (`recorded_protocol_notes`
    gives the reason)."""
    devices = ";".join(sorted({d for d in recorded["devices"].astype(str) if d and d != "nan"}))
    mark = f" {NOT_DP_MARK}" if (recorded["not_dp"].fillna("") != "").any() else ""
    return f"ours, recorded at paper scale ({devices or 'device unknown'}){mark}"


def recorded_protocol_notes(ctx: RenderContext) -> list[str]:
    """The protocol of the item's recorded rows, read from their own protocol cells (FID's and the classifiers'
    sample counts and training), one line per protocol naming the methods recorded with it: a table whose rows
    were measured differently says so, and the reasons of rows not DP. None at paper scale, where the items show the
    build's own runs instead."""
    if ctx.config.scale == "paper":
        return []
    rec = ctx.recorded()
    if rec.empty:
        return []
    names = (
        "fid_n_samples",
        "fid_reference_n",
        "classifier_n_train",
        "classifier_repeats",
        "classifier_max_epochs",
        "classifier_patience",
    )
    by_protocol: dict[tuple, list[str]] = {}
    for method, part in rec.groupby("method", sort=False):
        values = tuple(
            "/".join(f"{v:,.0f}" for v in sorted(part.loc[part["metric"] == name, "mean"].unique())) or "?"
            for name in names
        )
        by_protocol.setdefault(values, []).append(LABELS.get(method, method))
    return [*not_dp_notes(rec["not_dp"])] + [
        f"Recorded rows of {', '.join(methods)}: FID of {fid_n} generated images against {ref} real test images; "
        f"LR once, MLP and CNN {repeats} training(s) each (<= {epochs} epochs, patience {patience}) on {n_train} "
        "synthetic images."
        for (fid_n, ref, n_train, repeats, epochs, patience), methods in by_protocol.items()
    ]


def protocol_notes(ctx: RenderContext, experiment: str) -> list[str]:
    """FID and classifier protocol of our numbers, from the tidy table (sample counts) and the configuration."""
    table = ctx.tables.get(experiment, pd.DataFrame())
    notes = []
    if not table.empty and (table["metric"] == "fid_n_samples").any():
        n = int(table.loc[table["metric"] == "fid_n_samples", "value"].max())
        ref = int(table.loc[table["metric"] == "fid_reference_n", "value"].max())
        notes.append(
            f"Our FID: torch-fidelity InceptionV3 pool3 (offline TF-ported weights), images as uint8, grey "
            f"repeated to RGB, TF1-bilinear resize to 299; {n} generated images (class-balanced) against "
            f"{ref} real test images (the paper uses 60,000 generated; its reference set is not stated). "
            "Real data row = the training split against the same test reference."
        )
    if not table.empty and (table["metric"] == "accuracy").any():

        def setting(name: str) -> str:
            values = table.loc[table["metric"] == f"classifier_{name}", "value"]
            return "?" if values.empty else "/".join(f"{v:,.0f}" for v in sorted(values.unique()))

        notes.append(
            "Our accuracies (%): LR = scikit-learn LogisticRegression() defaults; MLP 784-100-C and the paper's "
            f"2-conv CNN with Adam, batch 512, early stopping (patience {setting('patience')}, <= "
            f"{setting('max_epochs')} epochs) on 10 % of the synthetic set; mean of {setting('repeats')} "
            f"training(s) on {setting('n_train')} synthetic images; tested on {setting('n_test')} real test "
            "images (paper: 5 runs, 60,000 synthetic images, <= 300 epochs, patience 10)."
        )
    notes += fid_size_notes(ctx.config.experiments[experiment].datasets)
    if not table.empty and (table["metric"] == "epsilon_spent").any():
        notes.append(
            "epsilon: the paper's accounting (DP2-VAE: pyvacy Eps(K, sigma, T, delta), q = 1/K; DP-MERF: one "
            "Gaussian release, replace-one sensitivity 2/n); '(sound)' = an upper bound for what the code "
            "releases (DP2-VAE: every per-example gradient of a step depends on the drawn subset through its "
            "non-privately trained encoder)."
        )
    return notes


def fid_size_notes(datasets: list[str], study: Path = REAL_FID_STUDY) -> list[str]:
    """Per dataset of `datasets` the study measured (`REAL_FID_STUDY`, TF1 resize): FID of all its training
    images, of the first 10,000 and of each block of 10,000 against the test split; none without the study."""
    if not study.is_file():
        return []
    rows = pd.read_csv(study)
    rows = rows[(rows["resize"] == "tf1") & rows["dataset"].isin([paper_dataset(d) for d in datasets])]
    notes = []
    for dataset, part in rows.groupby("dataset", sort=True):
        whole, first = (part[part["generated"].str.fullmatch(rf"train\[:{n}\]")] for n in (60000, 10000))
        blocks = part[part["blocks"] > 1]
        if whole.empty or first.empty or blocks.empty:
            continue
        block = blocks.iloc[0]
        notes.append(
            f"FID's sample size on real {DATASETS.get(dataset, dataset)} images (TF1 resize, against the 10,000 test "
            f"images; {study.parent.name}/{study.name}, {whole['device'].iloc[0]}): all 60,000 training images "
            f"{whole['fid'].iloc[0]:.2f}, the first 10,000 {first['fid'].iloc[0]:.2f}, {int(block['blocks'])} "
            f"blocks of 10,000 {block['fid']:.2f} +- {block['sd']:.2f}: the 10,000-image protocol reads "
            f"{first['fid'].iloc[0] - whole['fid'].iloc[0]:.2f} higher on real images."
        )
    return notes


def epsilons_text(ours: pd.DataFrame, dataset: str | None, variant: str, **where) -> str:
    """The run's spent epsilon (paper accounting, sound in brackets); dataset None: from any dataset's runs."""
    key = {"variant": variant, **({} if dataset is None else {"dataset": dataset}), **where}
    paper = value_of(ours, metric="epsilon_spent", **key)
    other = [value_of(ours, metric=m, **key) for m in ("epsilon_spent_sound", "epsilon_spent_strict")]
    other = [v for v in other if not math.isnan(v)]
    if math.isnan(paper):
        return "inf"
    return f"{paper:.3g}" + (f" ({other[0]:.3g} sound)" if other else "")


# ------------------------------------------------------------------------------------------------ figures


def sample_grids(ctx: RenderContext) -> dict[tuple[str, str, str], dict]:
    """(dataset, variant, eps) -> the run's sample grid arrays (x, y, rows, cols)."""
    grids = {}
    for run, artifact in run_files(ctx.artifacts, "sample_grid.npz"):
        with np.load(artifact) as loaded:
            grids[(run.dataset, run.variant, run.eps)] = dict(loaded)
    return grids


def mosaic(grid: dict) -> np.ndarray:
    """rows x cols images as one [H·rows, W·cols(, 3)] picture (row r = the r-th class present)."""
    x, rows, cols = grid["x"], int(grid["rows"]), int(grid["cols"])
    channels, height, width = x.shape[1:]
    full = np.ones((rows * cols, channels, height, width), dtype=np.float32)
    full[: len(x)] = x[: rows * cols]
    picture = full.reshape(rows, cols, channels, height, width).transpose(0, 3, 1, 4, 2)
    picture = picture.reshape(rows * height, cols * width, channels)
    return picture[..., 0] if channels == 1 else np.clip(picture, 0, 1)


def draw_panel(ax, grid: dict | None, title: str, placeholder: str = "") -> None:
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(title, fontsize=6)
    if grid is None:
        ax.set_facecolor("#eeeeee")
        ax.text(
            0.5,
            0.5,
            placeholder or "not run",
            ha="center",
            va="center",
            fontsize=6,
            wrap=True,
            transform=ax.transAxes,
            color="0.35",
        )
        return
    picture = mosaic(grid)
    ax.imshow(picture, cmap="gray" if picture.ndim == 2 else None, vmin=0, vmax=1, interpolation="nearest")


def numbers_text(ctx: RenderContext, experiment: str, dataset: str, variant: str) -> str:
    ours = ours_means(ctx.tables.get(experiment, pd.DataFrame()))
    fid = value_of(ours, dataset=dataset, variant=variant, metric="fid")
    acc = value_of(ours, dataset=dataset, variant=variant, metric="accuracy", classifier="cnn")
    parts = ([f"FID {fid:.1f}"] if not math.isnan(fid) else []) + (
        [f"CNN {100 * acc:.1f}%"] if not math.isnan(acc) else []
    )
    eps = epsilons_text(ours, dataset, variant)
    authors = value_of(ours, dataset=dataset, variant=variant, metric="epsilon_authors")
    eps_text = [f"eps {eps}"] if eps != "inf" else []
    if not math.isnan(authors):
        eps_text = [f"eps {eps} (ours), {authors:.3g} (authors' autodp)"]
    return "\n".join(filter(None, [", ".join(parts), *eps_text]))


def sample_figure(
    ctx: RenderContext, panels: list[list[tuple[str, dict | None, str]]], title: str, notes: list[str]
) -> None:
    """A grid of panels: panels[row][col] = (title, grid or None, placeholder text); rows without any grid
    (cited placeholders) are drawn short."""
    apply_style()
    plt = pyplot()
    n_rows, n_cols = len(panels), max(len(r) for r in panels)
    heights = [1.0 if any(p[1] is not None for p in row) else 0.3 for row in panels]
    fig, axes = plt.subplots(
        n_rows,
        n_cols,
        figsize=(3.0 * n_cols, 3.0 * sum(heights) + 0.8),
        squeeze=False,
        gridspec_kw={"height_ratios": heights},
    )
    for r, row in enumerate(panels):
        for c in range(n_cols):
            if c < len(row):
                draw_panel(axes[r][c], row[c][1], row[c][0], row[c][2])
            else:
                axes[r][c].axis("off")
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.35 / fig.get_figheight()))
    fig.suptitle(title, fontsize=9, x=0.01, y=1.0, ha="left", va="top")
    if notes:
        fig.text(0.01, -0.04, "\n".join(notes), fontsize=5.5, va="top", wrap=True)
    save_figure(fig, ctx.prefix)


def run_panel(
    ctx: RenderContext, grids: dict, experiment: str, dataset: str, variant: str, eps: str, label: str
) -> tuple[str, dict | None, str]:
    grid = grids.get((dataset, variant, eps))
    numbers = numbers_text(ctx, experiment, dataset, variant)
    return (f"{label}\n{numbers}" if numbers else label, grid, "run missing")


def cited_panel(label: str, source: str) -> tuple[str, None, str]:
    return (f"{label} (cited)", None, f"cited image ({source.split(' ')[0]}); not reproduced")


def standin_note(datasets) -> list[str]:
    return (
        [
            "CelebA panels ran on a generated stand-in dataset with CelebA32's schema (CelebA is not reachable "
            "here): stand-in data, not faces."
        ]
        if any(is_standin(d) for d in datasets)
        else []
    )
