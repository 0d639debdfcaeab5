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

* `mst`, `aim` — the tabular state of the art beside the papers: MST (McKenna, Miklau & Sheldon 2021, the NIST
  2018 winner's successor) and AIM (McKenna et al. 2022), rho-zCDP selection and Gaussian measurement of marginals
  on the declared domain's bins, estimation and sampling by private-pgm (`mst.py`, `aim.py`; tables only). They
  live in this family because they share its discretisation, private-pgm estimation and domain compression
  (families are independent: import-linter).

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
    label_marginals: bool = param(
        True,
        "measure the selected marginals that hold the label; false: the label's 1-way marginal only, so the synthetic "
        "label is drawn independently of the features (a reading of P3GM's Ryan's row, reproductions/studies/)",
    )


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


@dataclass(frozen=True)
class MSTParams(MethodParams):
    bins: int = param(16, "equal-width bins of every continuous column on its declared bounds", minimum=2)
    compress: bool = param(True, "merge each attribute's cells measured below 3 sigma into one (MST's compression)")
    iterations: int = param(3000, "mirror-descent iterations of the private-pgm estimate", minimum=1)


def _table_only(facts: Facts) -> list[tuple[str, str]]:
    if len(facts.record_shape) != 1:
        return [("", "it takes tables only (one attribute per column; images have too many pixel attributes)")]
    return []


@register_method
class MST(Method):
    name = "mst"
    paper = "McKenna et al. 2021 (the tabular state of the art)"
    private = True
    description = "MST: Gaussian 1- and 2-way marginals, exponential-mechanism spanning tree, private-pgm (rho-zCDP)"
    Params = MSTParams
    kinds = ("table",)
    released = ("model.npz", "supports.npz")  # estimated from the Gaussian measurements; the tree is in the model
    data_scaling = (
        "Tables of d columns: d(d-1)/2 candidate pairs, d-1 measured; `bins` per continuous column on its declared "
        "bounds; nothing scales with N."
    )
    RESOURCES = Resources(threads=1, mem_mb=4000, runtime=30)

    def data_errors(self, params: MethodParams, facts: Facts) -> list[tuple[str, str]]:
        return _table_only(facts)

    train = forward("dpvae.methods.marginals.train", "train_mst")

    recompute_ledger = forward("dpvae.methods.marginals.accounting", "recompute_mst_ledger")

    def planned_ledger(self, params: MethodParams, spec: RunSpec, facts: Facts) -> Ledger:
        """d attributes (every column, then the label): sigma calibrated to the target for d - 1 picks."""
        from dpvae.data.domain import of_run
        from dpvae.methods.marginals.accounting import calibrate_mst, mst_ledger

        d = math.prod(facts.record_shape) + 1
        public = bool(spec.data_root) and of_run(spec) is not None
        return mst_ledger(calibrate_mst(spec.epsilon, spec.delta, d), d, spec.delta, spec.epsilon, public)

    sample = forward("dpvae.methods.marginals.train", "sample_mst")


@dataclass(frozen=True)
class AIMParams(MethodParams):
    bins: int = param(16, "equal-width bins of every continuous column on its declared bounds", minimum=2)
    degree: int = param(2, "the workload: every marginal of this many attributes (its downward closure: candidates)",
                        minimum=1)  # fmt: skip
    rounds: int | None = param(None, "T: the rounds the budget is planned for (null = 16 d, the paper's)", minimum=1)
    max_size: float = param(80.0, "MB: the largest junction tree of the model (the paper's 80)", exclusive_minimum=0)
    round_iterations: int = param(250, "mirror-descent iterations of each round's warm-started estimate", minimum=1)
    iterations: int = param(3000, "mirror-descent iterations of the final estimate", minimum=1)


@register_method
class AIM(Method):
    name = "aim"
    paper = "McKenna et al. 2022 (the tabular state of the art)"
    private = True
    description = (
        "AIM: workload-adaptive exponential-mechanism selection, Gaussian marginals, annealed budget, private-pgm"
    )
    Params = AIMParams
    kinds = ("table",)
    released = ("model.npz",)  # estimated from the Gaussian measurements (supports.npz: all cells, data-independent)
    data_scaling = (
        "Tables of d columns: the workload's downward closure (d + d(d-1)/2 candidates at degree 2) is scored every "
        "round, up to `rounds` (16 d) rounds each re-estimating the model; `bins` per continuous column on its "
        "declared bounds; nothing scales with N."
    )
    RESOURCES = Resources(threads=1, mem_mb=6000, runtime=120)

    def data_errors(self, params: MethodParams, facts: Facts) -> list[tuple[str, str]]:
        d = math.prod(facts.record_shape) + 1
        errors = _table_only(facts)
        if params.rounds is not None and params.rounds * 1.0 <= 0.9 * d:
            errors.append(("rounds", f"the {d} 1-way marginals at sigma0 = sqrt(T/(2 0.9 rho)) need T > 0.9 d"))
        return errors

    train = forward("dpvae.methods.marginals.train", "train_aim")

    recompute_ledger = forward("dpvae.methods.marginals.accounting", "recompute_aim_ledger")

    def planned_ledger(self, params: MethodParams, spec: RunSpec, facts: Facts) -> Ledger:
        """d attributes (every column, then the label), T rounds: the budget calibrated to the target."""
        from dpvae.data.domain import of_run
        from dpvae.methods.marginals.accounting import aim_ledger, aim_rounds, calibrate_aim

        d = math.prod(facts.record_shape) + 1
        rounds = aim_rounds(params, d)
        public = bool(spec.data_root) and of_run(spec) is not None
        noise = calibrate_aim(spec.epsilon, spec.delta, d, rounds)
        return aim_ledger(noise, d, rounds, spec.delta, spec.epsilon, public)

    sample = forward("dpvae.methods.marginals.train", "sample_aim")
