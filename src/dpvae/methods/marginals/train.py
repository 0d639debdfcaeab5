"""Fitting and sampling PrivBayes and Ryan's method: discretise, fit on the codes, decode the samples."""

from __future__ import annotations

import io
import json
import os
import pickle

import numpy as np

from dpvae.data.store import save_npz
from dpvae.errors import ConfigError
from dpvae.methods.base import RunContext
from dpvae.methods.marginals.accounting import calibrate, privbayes_ledger, ryan_ledger
from dpvae.privacy.ledger import Ledger
from dpvae.progress import Progress


def train_privbayes(ctx: RunContext) -> Ledger:
    from dpvae import randomness
    from dpvae.methods.marginals import privbayes
    from dpvae.methods.marginals.discretize import build_discretizer

    p, data = ctx.params, ctx.data
    classes = len(data.meta.get("label_names") or np.unique(data.train.y))
    discretizer = build_discretizer(data.train.x, data.meta, classes, p.histogram_bins, p.pixel_bins)
    codes = discretizer.encode(data.train.x, data.train.y)
    secret = randomness.is_secret(ctx.spec)
    ledger, half = privbayes_ledger(codes.shape[1], p.degree, ctx.epsilon, ctx.delta, "domain" in data.meta, secret)
    network = Progress("privbayes network", codes.shape[1] - 1, "attributes", lambda _: ledger, epsilon_planned=True)
    model = privbayes.fit(
        codes, discretizer.sizes, p.degree, half, half, ctx.rng("privbayes"), p.max_candidates, network, secret
    )
    discretizer.save(ctx.model_dir / "discretizer.json")
    privbayes.save(model, ctx.model_dir / "network.npz")
    return ledger


def sample_privbayes(ctx: RunContext, n: int | None) -> dict[str, np.ndarray]:
    from dpvae.methods.marginals import privbayes
    from dpvae.methods.marginals.discretize import Discretizer

    model_dir = ctx.model_dir
    model = privbayes.load(model_dir / "network.npz")
    discretizer = Discretizer.load(model_dir / "discretizer.json")
    rng = ctx.rng("privbayes-sample")
    codes = privbayes.sample(model, len(ctx.data.train.y) if n is None else n, rng)
    x, y = discretizer.decode(codes, rng)
    return {"x": x, "y": y}


def _use_float64_jax() -> None:
    """float64 jax, and no persistent compilation cache: mbi compiles hundreds of small programs a fit (527 in an
    AIM release on Adult) and warns that the cache is counterproductive; an AIM release with it took 1,499 s wall
    where one without took 604 s under cProfile (2 Dec 2026, 2-core CPU, ε = 1, seeds 1 and 0). It would also write
    outside the run."""
    os.environ.setdefault("JAX_ENABLE_X64", "1")
    import jax

    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_enable_compilation_cache", False)


def train_ryan(ctx: RunContext) -> Ledger:
    if ctx.spec.data_identity is not None:  # a declared dataset (the config's `datasets`, `dpvae synth`)
        dataset, why = ctx.spec.dataset, ctx.method.needs_public_data
        raise ConfigError(f"method 'ryan' cannot take declared dataset '{dataset}': {why}")
    _use_float64_jax()
    from dpvae.methods.marginals import match3
    from dpvae.methods.marginals.discretize import build_discretizer

    p, data = ctx.params, ctx.data
    rng = ctx.rng("ryan")
    n = len(data.train.y)
    public = np.zeros(n, dtype=bool)
    public[rng.choice(n, size=max(1, round(p.public_fraction * n)), replace=False)] = True
    classes = len(data.meta.get("label_names") or np.unique(data.train.y))
    discretizer = build_discretizer(
        data.train.x, data.meta, classes, p.bins, p.pixel_bins, range_data=data.train.x[public]
    )
    codes = discretizer.encode(data.train.x, data.train.y)
    cliques = match3.select_marginals(codes[public], discretizer.sizes, p.triple_threshold)
    if not p.label_marginals:  # the label is the last code column
        cliques = match3.without_attribute(cliques, codes.shape[1] - 1)
    sigma = calibrate(ctx.epsilon, ctx.delta)
    measured = match3.measure(codes[~public], discretizer.sizes, cliques, sigma, rng)
    spent = ryan_ledger(sigma, ctx.delta, ctx.epsilon, p.public_fraction, "domain" in data.meta)  # the releases made
    model = match3.estimate(
        measured, p.iterations, Progress("ryan estimate", p.iterations, "iterations", lambda _: spent)
    )
    discretizer.save(ctx.model_dir / "discretizer.json")
    _save_mbi_model(model, ctx.model_dir / "model.npz")
    save_npz(ctx.model_dir / "supports.npz", {f"arr_{i}": s for i, s in enumerate(measured.supports)})
    (ctx.model_dir / "selection.json").write_text(
        json.dumps(
            {
                "cliques": [list(map(int, c)) for c in cliques],
                "sigma": sigma,
                "n_public": int(public.sum()),
                "n_measured": int((~public).sum()),
            }
        )
    )
    return spent


def sample_ryan(ctx: RunContext, n: int | None) -> dict[str, np.ndarray]:
    _use_float64_jax()
    import mbi

    from dpvae.methods.marginals import match3
    from dpvae.methods.marginals.discretize import Discretizer

    model = mbi.load(ctx.model_dir / "model.npz")
    with np.load(ctx.model_dir / "supports.npz") as stored:
        supports = [stored[f"arr_{i}"] for i in range(len(stored.files))]
    discretizer = Discretizer.load(ctx.model_dir / "discretizer.json")
    rng = ctx.rng("ryan-sample")
    rows = len(ctx.data.train.y) if n is None else n
    np.random.seed(ctx.seed_for("ryan-mbi-sample"))  # mbi's synthetic_data draws from numpy's global RNG
    columns = model.synthetic_data(rows=rows).to_dict()
    compressed = np.column_stack([columns[a] for a in model.domain.attributes]).astype(np.int64)
    codes = match3.expand(compressed, supports, rng)
    x, y = discretizer.decode(codes, rng)
    return {"x": x, "y": y}


def _table_codes(ctx: RunContext, bins: int):
    """The run's training records as integer codes on the declared domain's bins (`build_discretizer`) and the
    discretizer; whether the bin edges come from a recorded (public) domain."""
    from dpvae.methods.marginals.discretize import build_discretizer

    data = ctx.data
    classes = len(data.meta.get("label_names") or np.unique(data.train.y))
    discretizer = build_discretizer(data.train.x, data.meta, classes, bins, 2)
    return discretizer, discretizer.encode(data.train.x, data.train.y), "domain" in data.meta


def _save_mbi_model(model, path) -> None:
    """`mbi.save`'s file (`mbi.load` reads it) in the same bytes for the same model. Its .npz members carry the time,
    and its pickled tree structure what a model went through: which equal objects are shared (a resumed fit's clique
    tuples are copies) and each `Domain`'s cached `config` (filled by use). The members are written again with fixed
    times and the structure pickled without the memo, a Domain by its fields alone."""
    import mbi

    saved = io.BytesIO()
    mbi.save(model, saved)
    with np.load(io.BytesIO(saved.getvalue())) as members:
        arrays = {name: members[name] for name in members.files}
    structure = io.BytesIO()
    pickler = _CanonicalPickler(structure)
    pickler.dump(pickle.loads(arrays["_treedef"].tobytes()))
    arrays["_treedef"] = np.frombuffer(structure.getvalue(), dtype=np.uint8)
    save_npz(path, arrays)


class _CanonicalPickler(pickle.Pickler):
    """No memo (every object in full, whatever is shared); an mbi `Domain` by (attributes, shape, labels)."""

    def __init__(self, file) -> None:
        super().__init__(file)
        self.fast = True

    def reducer_override(self, obj):
        from mbi import Domain

        if type(obj) is Domain:
            return Domain, (obj.attributes, obj.shape, obj.labels)
        return NotImplemented


def train_mst(ctx: RunContext) -> Ledger:
    _use_float64_jax()
    from dpvae.methods.marginals import match3, mst
    from dpvae.methods.marginals.accounting import calibrate_mst, mst_ledger, mst_selection_epsilon

    p = ctx.params
    discretizer, codes, public = _table_codes(ctx, p.bins)
    sizes, d = discretizer.sizes, codes.shape[1]
    sigma = calibrate_mst(ctx.epsilon, ctx.delta, d)
    ledger = mst_ledger(sigma, d, ctx.delta, ctx.epsilon, public)
    rng = ctx.rng("mst")
    one_way = mst.measure_one_way(codes, sizes, sigma, rng, "mst", p.compress)
    compressed, compressed_sizes = one_way.compress(codes), one_way.sizes
    marginals, total = mst.independent_marginals(one_way.measurements, compressed_sizes)
    tree = mst.select_tree(compressed, compressed_sizes, marginals, total, mst_selection_epsilon(sigma, d), rng)
    two_way = mst.measure_cliques(compressed, compressed_sizes, tree, sigma, rng, "mst")
    progress = Progress("mst estimate", p.iterations, "iterations", lambda _: ledger, epsilon_planned=True)
    measured = match3.Measured(one_way.measurements + two_way, one_way.supports, compressed_sizes)
    model = match3.estimate(measured, p.iterations, progress)
    discretizer.save(ctx.model_dir / "discretizer.json")
    _save_mbi_model(model, ctx.model_dir / "model.npz")
    save_npz(ctx.model_dir / "supports.npz", {f"arr_{i}": s for i, s in enumerate(one_way.supports)})
    return ledger


def sample_mbi(ctx: RunContext, n: int | None, stream: str) -> dict[str, np.ndarray]:
    """Records drawn from a saved private-pgm model (model.npz, supports.npz, discretizer.json): MST's and AIM's."""
    _use_float64_jax()
    import mbi

    from dpvae.methods.marginals import match3
    from dpvae.methods.marginals.discretize import Discretizer

    model = mbi.load(ctx.model_dir / "model.npz")
    with np.load(ctx.model_dir / "supports.npz") as stored:
        supports = [stored[f"arr_{i}"] for i in range(len(stored.files))]
    discretizer = Discretizer.load(ctx.model_dir / "discretizer.json")
    rng = ctx.rng(f"{stream}-sample")
    rows = len(ctx.data.train.y) if n is None else n
    # mbi's synthetic_data draws from numpy's global RNG: seeded here from the stream (any size: a secret seed is
    # wider than np.random.seed's 32 bits), put back afterwards
    saved = np.random.get_state()
    np.random.set_state(np.random.RandomState(np.random.MT19937(ctx.seed_for(f"{stream}-mbi-sample"))).get_state())
    try:
        columns = model.synthetic_data(rows=rows).to_dict()
    finally:
        np.random.set_state(saved)
    compressed = np.column_stack([columns[a] for a in model.domain.attributes]).astype(np.int64)
    x, y = discretizer.decode(match3.expand(compressed, supports, rng), rng)
    return {"x": x, "y": y}


def sample_mst(ctx: RunContext, n: int | None) -> dict[str, np.ndarray]:
    return sample_mbi(ctx, n, "mst")


def train_aim(ctx: RunContext) -> Ledger:
    _use_float64_jax()
    from dpvae.methods.checkpoint import Checkpoint
    from dpvae.methods.marginals import aim
    from dpvae.methods.marginals.accounting import aim_ledger, aim_rounds, calibrate_aim

    p = ctx.params
    discretizer, codes, public = _table_codes(ctx, p.bins)
    d = codes.shape[1]
    rounds = aim_rounds(p, d)
    noise = calibrate_aim(ctx.epsilon, ctx.delta, d, rounds)
    ledger = aim_ledger(noise, d, rounds, ctx.delta, ctx.epsilon, public)
    plan = aim.Plan(1 / (2 * noise**2), d, rounds)
    progress = Progress("aim rounds", rounds, "rounds (at most)", lambda _: ledger, epsilon_planned=True)
    model, budget = aim.fit(
        codes,
        discretizer.sizes,
        plan,
        p.degree,
        p.max_size,
        p.round_iterations,
        p.iterations,
        ctx.rng("aim"),
        progress,
        Checkpoint(ctx),
    )
    discretizer.save(ctx.model_dir / "discretizer.json")
    _save_mbi_model(model, ctx.model_dir / "model.npz")
    save_npz(
        ctx.model_dir / "supports.npz",
        {f"arr_{i}": np.ones(int(s), dtype=bool) for i, s in enumerate(discretizer.sizes)},
    )
    return ledger


def sample_aim(ctx: RunContext, n: int | None) -> dict[str, np.ndarray]:
    return sample_mbi(ctx, n, "aim")
