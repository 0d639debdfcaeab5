"""The marginal-based competitors of P3GM (docs/papers.md §3.6), on integer-coded records (`discretize.py`).

* `privbayes` — PrivBayes as DataSynthesizer's correlated-attribute mode, pure ε-DP: ε/2 for the network (d−1
  exponential-mechanism picks) and ε/2 for the conditionals (d−k Laplace releases of (k+1)-way counts);
  DataSynthesizer's extra ε-Laplace 1-way histograms are left out because correlated-mode generation never
  reads them (`privbayes.py`), so the total is ε.
* `ryan` — Ryan McKenna's NIST-2018 marginal method ("Match3"), P3GM's "Ryan's": a public slice of the
  training split (10 %, used without privacy, as the paper says Ryan's needs) selects the marginals; the rest
  of the split is measured with two Gaussian releases calibrated with the project's accountant; private-pgm
  (`mbi`) estimates a graphical model and samples N records (`match3.py`). The slice is private data read
  without noise, so the ledger is marked not_dp, and a declared dataset (no public sample) is refused.

Here: typed parameters and registered methods (light imports); `train.py` fits and samples them (with the
algorithms in `privbayes.py` and `match3.py`), `accounting.py` holds their ledgers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from dpvae.methods.base import Method, Resources, forward, large_records
from dpvae.methods.registry import register_method
from dpvae.params import MethodParams, param
from dpvae.runspec import RunSpec

if TYPE_CHECKING:
    from dpvae.data.declared import Facts
    from dpvae.privacy.ledger import Ledger


@dataclass(frozen=True)
class PrivBayesParams(MethodParams):
    degree: int = param(2, "k: parents per attribute in the Bayesian network", minimum=1)
    histogram_bins: int = param(20, "bins of every continuous attribute", minimum=2)
    pixel_bins: int = param(2, "bins of image pixels (2 = binarised)", minimum=2)
    max_candidates: int | None = param(
        None,
        "candidates per network step, drawn uniformly (data-independent); null = all of them, as DataSynthesizer",
        minimum=1,
    )


@dataclass(frozen=True)
class RyanParams(MethodParams):
    public_fraction: float = param(
        0.1, "share of the training split used non-privately to select marginals", exclusive_minimum=0, maximum=0.5
    )
    bins: int = param(10, "equal-width bins of continuous attributes", minimum=2)
    triple_threshold: float = param(0.1, "L1 dependence above which a triple marginal is measured", minimum=0)
    iterations: int = param(
        7500, "mirror-descent iterations of the private-pgm estimate (match3: 7,500 for 0.3 < eps < 4)", minimum=1
    )
    pixel_bins: int = param(2, "bins of image pixels (2 = binarised)", minimum=2)


@register_method
class PrivBayes(Method):
    name = "privbayes"
    data_scaling = (
        "Any [d] records or images; nothing scales with N: `histogram_bins` per continuous column, "
        "`max_candidates` bounds the network search for many columns (set it above about 100 columns)."
    )
    paper = "p3gm"
    private = True
    description = "PrivBayes (DataSynthesizer's correlated-attribute mode, vectorised)"
    Params = PrivBayesParams
    released = ("network.npz",)  # the exponential mechanism's network and the Laplace conditionals
    RESOURCES = Resources(threads=1, mem_mb=3000, runtime=60)

    train = forward("dpvae.methods.marginals.train", "train_privbayes")

    recompute_ledger = forward("dpvae.methods.marginals.accounting", "recompute_privbayes_ledger")

    def planned_ledger(self, params: MethodParams, spec: RunSpec, facts: Facts) -> Ledger:
        """d attributes: every value of a record (a column or a pixel), then the label (`build_discretizer`); the
        edges' note from the prepared data's recorded domain where it is already prepared."""
        from dpvae import randomness
        from dpvae.data.domain import of_run
        from dpvae.methods.marginals.accounting import privbayes_ledger

        d = math.prod(facts.record_shape) + 1
        public = bool(spec.data_root) and of_run(spec) is not None
        secret = randomness.is_secret(spec)
        return privbayes_ledger(d, params.degree, spec.epsilon, spec.delta, public, secret)[0]

    sample = forward("dpvae.methods.marginals.train", "sample_privbayes")


@register_method
class Ryan(Method):
    name = "ryan"
    paper = "p3gm"
    private = True
    releases_n = "its public slice (public_fraction of the N training records) is used without privacy"
    description = "Ryan McKenna's NIST-2018 marginal method (public selection, Gaussian marginals, private-pgm)"
    Params = RyanParams
    released = ("model.npz", "supports.npz")  # from the Gaussian measurements (selection.json: the public slice)
    needs_public_data = (
        "it selects marginals and bin edges on a public sample of the data, which a declared dataset does not "
        "give (a public sample is not yet supported); on the papers' datasets it reads a slice of the training "
        "split without noise and its ledger says not_dp"
    )
    RESOURCES = Resources(threads=1, mem_mb=4000, runtime=120)

    def resources(self, params: MethodParams, facts: Facts | None) -> Resources:
        # (Fashion-)MNIST's 785 binarised attributes, measured on one core: XLA compiles mbi's junction-tree steps for
        # minutes before the first of 7,500 iterations; 520-1,310 CPU-s a run, peak RSS 5.6-9.1 GB
        return replace(self.RESOURCES, mem_mb=12000) if large_records(facts) else self.RESOURCES

    train = forward("dpvae.methods.marginals.train", "train_ryan")

    recompute_ledger = forward("dpvae.methods.marginals.accounting", "recompute_ryan_ledger")

    def planned_ledger(self, params: MethodParams, spec: RunSpec, facts: Facts) -> Ledger:
        """σ calibrated to the target alone: the data only says which marginals are measured (and, without a
        recorded domain, the bin edges)."""
        from dpvae.data.domain import of_run
        from dpvae.methods.marginals.accounting import calibrate, ryan_ledger

        sigma = calibrate(spec.epsilon, spec.delta)
        public = bool(spec.data_root) and of_run(spec) is not None
        return ryan_ledger(sigma, spec.delta, spec.epsilon, params.public_fraction, public)

    sample = forward("dpvae.methods.marginals.train", "sample_ryan")
