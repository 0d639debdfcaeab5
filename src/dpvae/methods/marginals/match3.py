"""Ryan McKenna's NIST-2018 "Match3" method, generic (docs/papers.md §3.6; `rmckenna/match3.py` and
`select-queries.ipynb` of usnistgov/PrivacyEngCollabSpace), on today's private-pgm (`mbi` 2.x).

1. *Selection on public data* (`select_marginals`, used without privacy): pairwise mutual information →
   maximum spanning tree; for every node A, the pairs (B, C) of its tree neighbours whose
   |P(ABC) − P(AB)·P(AC)/P(A)|₁ ≥ `threshold` form a graph whose maximum spanning tree adds the pairs
   (B, C) and the triples (A, B, C).
2. *Round 1*: every 1-way marginal, each weighted 1/√d so that the round has L2-sensitivity 1, plus
   N(0, σ²); cells measured below 3σ are merged into one cell per attribute (domain compression).
3. *Round 2*: the selected marginals on the compressed domain, weighted 1/√m, plus N(0, σ²).
4. σ: the two rounds are two unit-sensitivity Gaussian mechanisms, calibrated to (ε, δ) (`calibrate`).
5. *Estimation*: mirror descent over the marginal polytope (mbi `MirrorDescent`, `LinearMeasurement`s
   with standard deviation σ/w); `MarkovRandomField.synthetic_data` draws the records; merged cells are
   re-expanded uniformly at random (match3's `reverse_data`).

mbi's attributes are the column indices (ints), not their strings: mbi iterates sets of attributes (e.g. the
conditioning columns of `synthetic_data`, mbi 2.0.0 markov_random_field.py:135-136, `tuple(used ∩ ...)`), whose
order for strings changes with PYTHONHASHSEED and so changed the samples between processes; an int's hash is itself.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from dpvae.methods.marginals.counts import JointCounter, combine, mutual_information_table
from dpvae.privacy import canaries
from dpvae.progress import Progress

Clique = tuple[int, ...]


# ---------------------------------------------------------------------------------------------- selection


def maximum_spanning_tree(n_nodes: int, weights: dict[tuple[int, int], float]) -> list[tuple[int, int]]:
    """Edges of a maximum spanning tree (forest) of an undirected weighted graph (networkx)."""
    import networkx as nx

    graph = nx.Graph()
    graph.add_nodes_from(range(n_nodes))
    graph.add_weighted_edges_from((a, b, w) for (a, b), w in weights.items())
    return sorted(tuple(sorted(e)) for e in nx.maximum_spanning_tree(graph).edges)


def triple_score(codes: np.ndarray, sizes: np.ndarray, a: int, b: int, c: int) -> float:
    """|P(ABC) − P(AB)·P(AC)/P(A)|₁ on the public records (select-queries.ipynb)."""
    n = len(codes)
    joint, size = combine(codes, (a, b, c), sizes)
    abc = np.bincount(joint, minlength=size).reshape(sizes[a], sizes[b], sizes[c]) / n
    ab, ac = abc.sum(axis=2, keepdims=True), abc.sum(axis=1, keepdims=True)
    pa = ab.sum(axis=1, keepdims=True)
    independent = np.divide(ab * ac, pa, out=np.zeros_like(abc), where=pa > 0)
    return float(np.abs(abc - independent).sum())


def select_marginals(public: np.ndarray, sizes: np.ndarray, threshold: float) -> list[Clique]:
    """Round-2 cliques from the public records: MST edges, then per node the (B, C) pairs and (A, B, C)
    triples of the maximum spanning tree over its tree neighbours with triple score >= `threshold`."""
    d = public.shape[1]
    counter = JointCounter(public, sizes)
    pairs = [(b, (a,)) for a, b in itertools.combinations(range(d), 2)]
    info = {(a, b): mutual_information_table(t) for (b, (a,)), t in zip(pairs, counter.tables(pairs))}
    tree = maximum_spanning_tree(d, info)
    neighbours: dict[int, list[int]] = {v: [] for v in range(d)}
    for a, b in tree:
        neighbours[a].append(b)
        neighbours[b].append(a)
    cliques: list[Clique] = list(tree)
    for a in range(d):
        scores = {}
        for b, c in itertools.combinations(sorted(neighbours[a]), 2):
            score = triple_score(public, sizes, a, b, c)
            if score >= threshold:
                scores[(b, c)] = score
        if not scores:
            continue
        nodes = sorted({v for pair in scores for v in pair})
        local = {(nodes.index(b), nodes.index(c)): s for (b, c), s in scores.items()}
        for i, j in maximum_spanning_tree(len(nodes), local):
            b, c = nodes[i], nodes[j]
            cliques += [(b, c), (a, b, c)]
    return list(dict.fromkeys(tuple(c) for c in cliques))


def without_attribute(cliques: list[Clique], attribute: int) -> list[Clique]:
    """The round-2 cliques that leave `attribute` out: round 1 still measures its 1-way marginal, so the estimate
    draws it independently of every other attribute (Ryan's `label_marginals: false`, a study of P3GM's row)."""
    return [clique for clique in cliques if attribute not in clique]


# --------------------------------------------------------------------------------------------- measuring


@dataclass(frozen=True)
class Measured:
    """Noisy measurements (mbi `LinearMeasurement`s on the compressed domain) and the compression maps."""

    measurements: list
    supports: list[np.ndarray]  # per attribute: the original cells measured above 3 sigma
    compressed_sizes: np.ndarray


def histogram(codes: np.ndarray, clique: Clique, sizes: np.ndarray) -> np.ndarray:
    joint, size = combine(codes, clique, sizes)
    return np.bincount(joint, minlength=size).astype(np.float64)


def measure(
    codes: np.ndarray,
    sizes: np.ndarray,
    round2: list[Clique],
    sigma: float,
    rng: np.random.Generator,
    max_domain: float = 1e6,
) -> Measured:
    """Rounds 1 and 2 of match3's `measure` (see the module docstring)."""
    from mbi import Domain, LinearMeasurement

    d = codes.shape[1]
    weight = 1.0 / np.sqrt(d)
    noise = lambda shape, std: std * rng.standard_normal(shape)  # noqa: E731  (canaries: an audited run only)
    round1, supports, mappings = [], [], []
    for a in range(d):
        y = canaries.release(weight * histogram(codes, (a,), sizes), sigma, noise, sensitivity=weight, name="match3")
        support = y >= 3 * sigma
        mapping = np.full(int(sizes[a]), int(support.sum()), dtype=np.int64)
        mapping[support] = np.arange(int(support.sum()))
        mappings.append(mapping)
        supports.append(support)
        round1.append(LinearMeasurement(y / weight, (a,), stddev=sigma / weight))
    compressed_sizes = np.array([int(m.max()) + 1 for m in mappings], dtype=np.int64)
    full = Domain(range(d), [int(s) for s in sizes])
    measurements = [m.compress({a: mappings[a]}, full) for a, m in zip(range(d), round1)]

    compressed = np.column_stack([mappings[a][codes[:, a]] for a in range(d)])
    kept = [c for c in round2 if np.prod([compressed_sizes[a] for a in c]) < max_domain]
    if kept:
        weight2 = 1.0 / np.sqrt(len(kept))
        for clique in kept:
            hist = histogram(compressed, clique, compressed_sizes)
            y = canaries.release(weight2 * hist, sigma, noise, sensitivity=weight2, name="match3")
            measurements.append(LinearMeasurement(y / weight2, clique, stddev=sigma / weight2))
    return Measured(measurements, supports, compressed_sizes)


# ------------------------------------------------------------------------------------ estimate and sample


def estimate(measured: Measured, iterations: int, progress: Progress | None = None):
    """Mirror descent on the measurements (mbi); returns a MarkovRandomField. `progress` (total: `iterations`) is
    advanced by mbi's callback, once a block of its iterations."""
    from mbi import Domain
    from mbi.estimation import CALLBACK_EVERY, MirrorDescent

    domain = Domain(range(len(measured.compressed_sizes)), [int(s) for s in measured.compressed_sizes])
    progress = progress or Progress("ryan estimate", iterations, "iterations")

    def advance(_: object) -> None:  # mbi's callback after each block of CALLBACK_EVERY iterations
        progress.advance(min(CALLBACK_EVERY, progress.total - progress.done))

    return MirrorDescent().estimate(domain, measured.measurements, iters=iterations, callback_fn=advance)


def expand(compressed: np.ndarray, supports: list[np.ndarray], rng: np.random.Generator) -> np.ndarray:
    """Compressed codes back to original codes; the merged cell becomes one of its values uniformly."""
    out = np.empty_like(compressed)
    for a, support in enumerate(supports):
        kept, merged = np.flatnonzero(support), np.flatnonzero(~support)
        column = compressed[:, a]
        is_merged = column >= len(kept)
        out[~is_merged, a] = kept[column[~is_merged]]
        if is_merged.any():
            out[is_merged, a] = rng.choice(merged, size=int(is_merged.sum()))
    return out
