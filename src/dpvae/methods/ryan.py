"""Ryan McKenna's NIST-2018 marginal method ("Match3"), P3GM's "Ryan's" competitor (PAPERS.md §3.6).

A public slice of the training split (10 %, used without privacy, as the paper says Ryan's needs) selects
the marginals; the rest of the split is measured with two Gaussian releases calibrated with the project's
accountant; private-pgm (`mbi`) estimates a graphical model and samples N records (`baselines.match3`).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, replace

import numpy as np

from dpvae.methods.base import Method, Resources, RunContext
from dpvae.methods.registry import register_method
from dpvae.params import MethodParams, param

#: match3's `moments_calibration`: RDP orders 2..4095, TF-Privacy's (classic) conversion of 2018.
MATCH3_ORDERS = tuple(float(a) for a in range(2, 4096))
NOTES = (
    "two Gaussian releases (round 1: every 1-way marginal, round 2: the selected 2-/3-way marginals on the "
    "compressed domain), each weighted to L2-sensitivity 1 under add/remove-one (a record adds 1 to one cell "
    "of every histogram) with the same sigma, composed by RDP over match3's orders 2..4095 with the classic "
    "conversion (match3's moments_calibration). The public slice that selects the marginals and fixes the bin "
    "edges is excluded from the measured records and used without privacy protection, as P3GM describes "
    "Ryan's method. Strict: replace-one adjacency, under which each round's sensitivity is sqrt(2)."
)


@dataclass(frozen=True)
class RyanParams(MethodParams):
    public_fraction: float = param(0.1, "share of the training split used non-privately to select marginals", exclusive_minimum=0, maximum=0.5)
    bins: int = param(10, "equal-width bins of continuous attributes", minimum=2)
    triple_threshold: float = param(0.1, "L1 dependence above which a triple marginal is measured", minimum=0)
    iterations: int = param(7500, "mirror-descent iterations of the private-pgm estimate (match3: 7,500 for 0.3 < eps < 4)", minimum=1)
    pixel_bins: int = param(2, "bins of image pixels (2 = binarised)", minimum=2)


def ryan_mechanisms(sigma: float, replace_one: bool = False):
    from dpvae.privacy.ledger import Mechanism

    sensitivity = math.sqrt(2) if replace_one else 1.0
    return tuple(Mechanism(name, sigma / sensitivity, 1.0, 1, sensitivity) for name in (
        "Ryan round 1: all 1-way marginals (weighted to unit L2-sensitivity)",
        "Ryan round 2: selected marginals on the compressed domain (weighted to unit L2-sensitivity)"))


def ryan_accounting(sigma: float, delta: float, replace_one: bool = False):
    from dpvae.privacy.ledger import Accounting

    return Accounting(ryan_mechanisms(sigma, replace_one), delta, "replace-one" if replace_one else "add/remove-one",
                      "rdp", "classic", MATCH3_ORDERS)


def calibrate(epsilon: float, delta: float) -> float:
    """The smallest sigma (rounded up) whose two releases spend at most `epsilon`."""
    from dpvae.privacy.accounting import solve_noise_multiplier

    sigma = solve_noise_multiplier(lambda s: ryan_accounting(s, delta).epsilon, epsilon)
    while ryan_accounting(sigma, delta).epsilon > epsilon:
        sigma *= 1 + 1e-9
    return sigma


def _use_float64_jax() -> None:
    os.environ.setdefault("JAX_ENABLE_X64", "1")
    import jax

    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_enable_compilation_cache", False)


@register_method
class Ryan(Method):
    name = "ryan"
    paper = "p3gm"
    private = True
    description = "Ryan McKenna's NIST-2018 marginal method (public selection, Gaussian marginals, private-pgm)"
    Params = RyanParams
    RESOURCES = Resources(threads=1, mem_mb=4000, runtime=120)

    def resources(self, params: MethodParams, dataset: str) -> Resources:
        # (Fashion-)MNIST's 785 binarised attributes, measured on one core: XLA compiles mbi's junction-tree steps for
        # minutes before the first of 7,500 iterations; 520-1,310 CPU-s a run, peak RSS 5.6-9.1 GB
        return replace(self.RESOURCES, mem_mb=12000) if "mnist" in dataset else self.RESOURCES

    def train(self, ctx: RunContext):
        _use_float64_jax()
        from dpvae.baselines import match3
        from dpvae.baselines.discretize import build_discretizer
        from dpvae.privacy.ledger import Ledger

        p, data = ctx.params, ctx.data
        rng = ctx.rng("ryan")
        n = len(data.train.y)
        public = np.zeros(n, dtype=bool)
        public[rng.choice(n, size=max(1, round(p.public_fraction * n)), replace=False)] = True
        classes = len(data.meta.get("label_names") or np.unique(data.train.y))
        discretizer = build_discretizer(data.train.x, data.meta, classes, p.bins, p.pixel_bins,
                                        range_data=data.train.x[public])
        codes = discretizer.encode(data.train.x, data.train.y)
        cliques = match3.select_marginals(codes[public], discretizer.sizes, p.triple_threshold)
        sigma = calibrate(ctx.epsilon, ctx.delta)
        measured = match3.measure(codes[~public], discretizer.sizes, cliques, sigma, rng)
        model = match3.estimate(measured, p.iterations)
        discretizer.save(ctx.model_dir / "discretizer.json")
        import mbi

        mbi.save(model, ctx.model_dir / "model.npz")
        np.savez_compressed(ctx.model_dir / "supports.npz", *measured.supports)
        (ctx.model_dir / "selection.json").write_text(json.dumps(
            {"cliques": [list(map(int, c)) for c in cliques], "sigma": sigma, "n_public": int(public.sum()),
             "n_measured": int((~public).sum())}))
        return Ledger(ryan_accounting(sigma, ctx.delta), ryan_accounting(sigma, ctx.delta, replace_one=True),
                      ctx.epsilon, NOTES)

    def sample(self, ctx: RunContext, n: int | None) -> dict[str, np.ndarray]:
        _use_float64_jax()
        from dpvae.baselines import match3
        from dpvae.baselines.discretize import Discretizer

        import mbi

        model = mbi.load(ctx.model_dir / "model.npz")
        with np.load(ctx.model_dir / "supports.npz") as stored:
            supports = [stored[f"arr_{i}"] for i in range(len(stored.files))]
        discretizer = Discretizer.load(ctx.model_dir / "discretizer.json")
        rng = ctx.rng("ryan-sample")
        rows = len(ctx.data.train.y) if n is None else n
        np.random.seed(ctx.seed_for("ryan-mbi-sample"))     # mbi's synthetic_data draws from numpy's global RNG
        columns = model.synthetic_data(rows=rows).to_dict()
        compressed = np.column_stack([columns[str(a)] for a in range(len(discretizer.columns))]).astype(np.int64)
        codes = match3.expand(compressed, supports, rng)
        x, y = discretizer.decode(codes, rng)
        return {"x": x, "y": y}
