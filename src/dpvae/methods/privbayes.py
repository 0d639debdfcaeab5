"""PrivBayes, as DataSynthesizer's correlated-attribute mode (P3GM's competitor; PAPERS.md §3.6).

Pure ε-DP: ε/2 for the network (d−1 exponential-mechanism picks) and ε/2 for the conditionals (d−k
Laplace releases of (k+1)-way counts); DataSynthesizer's extra ε-Laplace 1-way histograms are left out
because correlated-mode generation never reads them (`dpvae.baselines.privbayes`), so the total is ε.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpvae.methods.base import Method, Resources, RunContext
from dpvae.methods.registry import register_method
from dpvae.params import MethodParams, param

#: The two halves are shrunk by this factor so that their float sum never exceeds the target.
BUDGET_SAFETY = 1 - 1e-9
NOTES = (
    "pure epsilon-DP composition (delta = 0; the delta field is the run's and is not used): epsilon/2 for the "
    "Bayesian network (d-1 exponential-mechanism picks with PrivBayes' mutual-information sensitivity, "
    "DataSynthesizer's calculate_sensitivity/calculate_delta) + epsilon/2 for the conditionals (d-k Laplace "
    "releases of (k+1)-way counts, scale (d-k)/(epsilon/2), L1-sensitivity 1 under add/remove-one). "
    "DataSynthesizer's additional epsilon-Laplace 1-way histograms are not computed: correlated-mode "
    "generation never reads them. Strict: replace-one adjacency, under which a count histogram's "
    "L1-sensitivity is 2 (the conditionals then cost epsilon). Bin edges of continuous columns use the "
    "training split's observed min/max, as DataSynthesizer does (the data are min-max scaled by the preparers)."
)


@dataclass(frozen=True)
class PrivBayesParams(MethodParams):
    degree: int = param(2, "k: parents per attribute in the Bayesian network", minimum=1)
    histogram_bins: int = param(20, "bins of every continuous attribute", minimum=2)
    pixel_bins: int = param(2, "bins of image pixels (2 = binarised)", minimum=2)
    max_candidates: int | None = param(None, "candidates per network step, drawn uniformly (data-independent); "
                                             "null = all of them, as DataSynthesizer", minimum=1)


def privbayes_ledger(n_attributes: int, degree: int, epsilon: float, delta: float):
    """The pure-DP ledger of one fit, and the (structure, conditionals) budgets the fit must use."""
    from dpvae.privacy.ledger import Accounting, Ledger, Mechanism

    half = epsilon / 2 * BUDGET_SAFETY
    d, k = n_attributes, min(degree, n_attributes - 1)
    structure = Mechanism("PrivBayes network: exponential mechanism per added attribute (multiplier = 1/epsilon_i)",
                          noise_multiplier=(d - 1) / half, steps=d - 1)
    scale = (d - k) / half

    def conditionals(sensitivity: float) -> Mechanism:
        return Mechanism("PrivBayes conditionals: Laplace on (k+1)-way counts (multiplier = scale / L1-sensitivity)",
                         noise_multiplier=scale / sensitivity, steps=d - k, sensitivity=sensitivity)

    paper = Accounting((structure, conditionals(1.0)), delta, accountant="pure")
    strict = Accounting((structure, conditionals(2.0)), delta, adjacency="replace-one", accountant="pure")
    return Ledger(paper, strict, epsilon, NOTES), half


@register_method
class PrivBayes(Method):
    name = "privbayes"
    paper = "p3gm"
    private = True
    description = "PrivBayes (DataSynthesizer's correlated-attribute mode, vectorised)"
    Params = PrivBayesParams
    RESOURCES = Resources(threads=1, mem_mb=3000, runtime=60)

    def train(self, ctx: RunContext):
        from dpvae.baselines import privbayes
        from dpvae.baselines.discretize import build_discretizer

        p, data = ctx.params, ctx.data
        classes = len(data.meta.get("label_names") or np.unique(data.train.y))
        discretizer = build_discretizer(data.train.x, data.meta, classes, p.histogram_bins, p.pixel_bins)
        codes = discretizer.encode(data.train.x, data.train.y)
        ledger, half = privbayes_ledger(codes.shape[1], p.degree, ctx.epsilon, ctx.delta)
        model = privbayes.fit(codes, discretizer.sizes, p.degree, half, half, ctx.rng("privbayes"), p.max_candidates)
        discretizer.save(ctx.model_dir / "discretizer.json")
        privbayes.save(model, ctx.model_dir / "network.npz")
        return ledger

    def sample(self, ctx: RunContext, n: int | None) -> dict[str, np.ndarray]:
        from dpvae.baselines import privbayes
        from dpvae.baselines.discretize import Discretizer

        model_dir = ctx.model_dir
        model = privbayes.load(model_dir / "network.npz")
        discretizer = Discretizer.load(model_dir / "discretizer.json")
        rng = ctx.rng("privbayes-sample")
        codes = privbayes.sample(model, len(ctx.data.train.y) if n is None else n, rng)
        x, y = discretizer.decode(codes, rng)
        return {"x": x, "y": y}
