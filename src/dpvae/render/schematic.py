"""Schematic figures (P3GM Figs 1 and 3, DP2-VAE Fig 6) drawn simply as boxes and arrows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from dpvae.render.output import apply_style, pyplot

if TYPE_CHECKING:  # matplotlib loads when a schematic is drawn (the Snakefile imports every renderer module)
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

PRIVATE, PUBLIC, DATA = "#f4c7c3", "#c9daf8", "#d9ead3"


@dataclass(frozen=True)
class Box:
    """A labelled box centred at (x, y) in axes fractions; its size follows its text."""

    key: str
    text: str
    x: float
    y: float
    color: str = PUBLIC


def draw(ax: Axes, boxes: list[Box], arrows: list[tuple[str, str, str]], title: str = "") -> None:
    """Draw boxes and labelled arrows (source key, target key, label); arrows are clipped at the boxes."""
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.axis("off")
    if title:
        ax.set_title(title, fontsize=9, loc="left")
    texts = {
        b.key: ax.text(
            b.x,
            b.y,
            b.text,
            ha="center",
            va="center",
            fontsize=6.5,
            bbox={"boxstyle": "round,pad=0.45", "facecolor": b.color, "edgecolor": "0.3", "linewidth": 0.8},
        )
        for b in boxes
    }
    centres = {b.key: (b.x, b.y) for b in boxes}
    for src, dst, label in arrows:
        ax.annotate(
            "",
            xy=centres[dst],
            xytext=centres[src],
            arrowprops={
                "arrowstyle": "-|>",
                "color": "0.2",
                "linewidth": 0.8,
                "shrinkA": 1,
                "shrinkB": 1,
                "patchA": texts[src].get_bbox_patch(),
                "patchB": texts[dst].get_bbox_patch(),
            },
        )
        if label:
            (x0, y0), (x1, y1) = centres[src], centres[dst]
            ax.text(
                (x0 + x1) / 2,
                (y0 + y1) / 2 + 0.04,
                label,
                ha="center",
                va="bottom",
                fontsize=5.5,
                color="0.25",
                bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.5},
            )


def legend(fig: Figure) -> None:
    from matplotlib.patches import FancyBboxPatch

    handles = [FancyBboxPatch((0, 0), 1, 1, facecolor=c, edgecolor="0.3") for c in (DATA, PRIVATE, PUBLIC)]
    fig.legend(
        handles,
        ["sensitive data", "computed or trained with differential privacy", "public / released / non-private"],
        loc="lower center",
        ncol=3,
        fontsize=6,
        frameon=False,
    )


def p3gm_release() -> Figure:
    """P3GM Fig. 1: a data holder trains a DP generative model and shares it; users generate data."""
    apply_style()
    fig, ax = pyplot().subplots(figsize=(7, 2.6))
    draw(
        ax,
        [
            Box("data", "sensitive dataset\n(data holder)", 0.08, 0.55, DATA),
            Box("train", "train generative model\nwith differential privacy", 0.32, 0.55, PRIVATE),
            Box("model", "released model:\ndecoder p(x|z) + prior p(z)", 0.62, 0.55, PUBLIC),
            Box("user", "data user:\nsample z, decode x", 0.88, 0.75, PUBLIC),
            Box("synth", "synthetic dataset\n(any size)", 0.88, 0.3, PUBLIC),
        ],
        [
            ("data", "train", ""),
            ("train", "model", "(ε, δ)-DP"),
            ("model", "user", "share"),
            ("user", "synth", "generate"),
        ],
        "P3GM Fig. 1 - privacy-preserving data synthesis (schematic)",
    )
    legend(fig)
    return fig


def p3gm_phases() -> Figure:
    """P3GM Fig. 3: an end-to-end DP VAE vs P3GM's encoding and decoding phases."""
    apply_style()
    fig, (top, bottom) = pyplot().subplots(2, 1, figsize=(7.5, 4.6))
    draw(
        top,
        [
            Box("x", "x", 0.07, 0.5, DATA),
            Box("enc", "encoder\nμ_φ(x), σ_φ(x)", 0.3, 0.5, PRIVATE),
            Box("z", "z ~ N(μ, σ²)\nprior N(0, I)", 0.55, 0.5, PUBLIC),
            Box("dec", "decoder\np_θ(x|z)", 0.78, 0.5, PRIVATE),
            Box("xr", "x̃", 0.95, 0.5, PUBLIC),
        ],
        [("x", "enc", ""), ("enc", "z", ""), ("z", "dec", ""), ("dec", "xr", "")],
        "(a) DP-VAE: encoder and decoder trained end to end with DP-SGD",
    )
    draw(
        bottom,
        [
            Box("x", "x", 0.07, 0.5, DATA),
            Box("pca", "encoding phase 1:\nDP-PCA  μ(x) = f(x)\n(fixed)", 0.27, 0.75, PRIVATE),
            Box("em", "encoding phase 2:\nDP-EM mixture r_λ(z)\n= prior", 0.27, 0.25, PRIVATE),
            Box("sig", "decoding phase:\nσ_φ(x) by DP-SGD", 0.55, 0.75, PRIVATE),
            Box("dec", "decoding phase:\ndecoder by DP-SGD\n(KL to r_λ)", 0.55, 0.25, PRIVATE),
            Box("out", "release:\ndecoder + λ", 0.86, 0.5, PUBLIC),
        ],
        [
            ("x", "pca", ""),
            ("pca", "em", "f(x)"),
            ("pca", "sig", ""),
            ("sig", "dec", "z"),
            ("em", "dec", "prior"),
            ("dec", "out", ""),
        ],
        "(b) P3GM: the encoding phase is fixed before the decoding phase trains",
    )
    legend(fig)
    return fig


def dp2vae_stages() -> Figure:
    """DP2-VAE Fig. 6: stage 1 pre-trains K encoders non-privately; stage 2 trains a fresh decoder with DP."""
    apply_style()
    fig, (top, bottom) = pyplot().subplots(2, 1, figsize=(7.5, 4.4))
    draw(
        top,
        [
            Box("d", "training set split into\nK disjoint subsets D_1..D_K", 0.13, 0.5, DATA),
            Box(
                "enc",
                "for each k: encoder θ_k\n+ fresh decoder, Adam,\nbatch-gradient clipping (no noise)",
                0.45,
                0.5,
                PUBLIC,
            ),
            Box("keep", "keep θ_1..θ_K\ndiscard the decoders", 0.8, 0.5, PUBLIC),
        ],
        [("d", "enc", ""), ("enc", "keep", "")],
        "Stage 1 - non-private pre-training (embarrassingly parallel)",
    )
    draw(
        bottom,
        [
            Box("k", "draw k ~ Unif{1..K}\nbatch from D_k", 0.12, 0.5, DATA),
            Box("enc", "encoder θ_k\n(clipped, non-private update)", 0.38, 0.75, PUBLIC),
            Box("dec", "decoder φ (re-initialised)\nper-example clip C + Gaussian noise", 0.38, 0.25, PRIVATE),
            Box("rel", "release decoder φ\nε = Eps(K, σ, T, δ)", 0.8, 0.25, PUBLIC),
            Box("gen", "generate: z ~ N(0, I),\nlabel -> decoder", 0.8, 0.75, PUBLIC),
        ],
        [("k", "enc", ""), ("k", "dec", ""), ("enc", "dec", "z"), ("dec", "rel", "T steps"), ("rel", "gen", "")],
        "Stage 2 - differentially private decoder training",
    )
    legend(fig)
    return fig
