"""The method registry: every method any experiment names, implemented or planned.

A planned method keeps its runs in the DAG (so every figure and table is a target) and fails loudly if a
job actually runs it. Implementing a method = writing a `Method` subclass and listing it in `_IMPLEMENTED`.
"""

from __future__ import annotations

from dpvae.methods.base import Method, PlannedMethod
from dpvae.methods.real import RealData

_IMPLEMENTED: tuple[type[Method], ...] = (RealData,)

_PLANNED: tuple[tuple[str, str, bool, str], ...] = (
    # name, paper, private, description
    ("privae", "privae", True, "PriVAE: conv/MLP VAE trained with term-wise DP-SGD or the aggregation baselines"),
    ("vae-conv", "privae", False, "non-private conv VAE (+ batch-wise divergence) of Mathieu et al."),
    ("lvae", "lvae", True, "LVAE conv VAE: plain, DP-SGD, or Lipschitz-constrained decoder"),
    ("p3gm", "p3gm", True, "P3GM: DP-PCA + DP-EM encoder, DP-SGD decoder"),
    ("vae-mlp", "p3gm", False, "non-private MLP VAE with N(0, I) prior (P3GM's VAE)"),
    ("dp-vae", "p3gm", True, "MLP VAE trained end to end with DP-SGD"),
    ("privbayes", "p3gm", True, "PrivBayes (DataSynthesizer, correlated-attribute mode)"),
    ("ryan", "p3gm", True, "Ryan McKenna's NIST-2018 marginal method on private-pgm (mbi)"),
    ("dp-gm", "p3gm", True, "DP-GM: DP kernel k-means + per-cluster DP-SGD VAEs"),
    ("dp2vae", "dp2vae", True, "DP2-VAE: non-private pre-trained encoders, DP decoder"),
    ("dp-merf", "dp2vae", True, "DP-MERF: random-feature mean embeddings, one Gaussian release"),
    ("gs-wgan", "dp2vae", True, "GS-WGAN: gradient-sanitised WGAN with 1000 discriminators"),
)


def _build() -> dict[str, Method]:
    methods: dict[str, Method] = {cls.name: cls() for cls in _IMPLEMENTED}
    for name, paper, private, description in _PLANNED:
        methods.setdefault(name, PlannedMethod(name, paper, private, description))
    return methods


METHODS: dict[str, Method] = _build()


def get_method(name: str) -> Method:
    try:
        return METHODS[name]
    except KeyError:
        raise ValueError(f"unknown method '{name}' (known: {', '.join(sorted(METHODS))})") from None
