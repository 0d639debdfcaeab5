"""PrivBayes as DataSynthesizer's correlated-attribute mode runs it, vectorised (docs/papers.md §3.6).

DataSynthesizer (`DataDescriber.describe_dataset_in_correlated_attribute_mode(k, ε)`) does three things:

1. a 1-way histogram per attribute with ε-Laplace noise (`inject_laplace_noise...`); correlated-mode
   generation never reads these histograms (every parent configuration has a conditional, so the fallback
   that would use them never fires), so this step is **left out** here and costs nothing;
2. `greedy_bayes(ε/2)`: starting from a random root, d−1 times pick (child, parent set of size
   min(k, |V|)) among all candidates by the exponential mechanism on mutual information with PrivBayes'
   sensitivity (Lemma 1) — each pick is ε/(2(d−1))-DP. DataSynthesizer's own `exponential_mechanism` is
   called for the probabilities; the mutual information is computed on integer codes with bincount
   (sklearn's `mutual_info_score` on strings in the library; the same value in nats);
3. `construct_noisy_conditional_distributions(ε/2)`: d−k Laplace releases of (k+1)-way counts with scale
   (d−k)/(ε/2) (L1-sensitivity 1 under add/remove-one), negatives set to 0, normalised per parent
   configuration (uniform where all counts are 0).

Differences, all data-independent: domains come from the schema (the library uses the largest observed
code); with `max_candidates`, each step's exponential mechanism runs over that many uniformly drawn
candidates instead of all of them (the full search costs Σ_i (d−i)·C(i, k) mutual informations, infeasible
for 784 pixels; a data-independent candidate set keeps the mechanism's ε). Sampling is ancestral.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from dpvae import samplers
from dpvae.data.store import save_npz
from dpvae.methods.marginals.counts import JointCounter, combine, mutual_information_table
from dpvae.privacy import canaries
from dpvae.progress import Progress

Network = list[tuple[int, tuple[int, ...]]]  # (child, parents) in the order attributes were added


@dataclass(frozen=True)
class PrivBayesModel:
    """A fitted network: root, (child, parents) pairs, and the conditional tables.

    `tables[i]` belongs to the i-th attribute of `order` = [root, children...]: shape
    [prod(parent sizes), size] (the root's is [1, size]); rows are parent configurations in C order.
    """

    root: int
    network: Network
    tables: list[np.ndarray]
    sizes: np.ndarray

    @property
    def order(self) -> list[int]:
        return [self.root] + [child for child, _ in self.network]

    def parents_of(self) -> list[tuple[int, ...]]:
        return [()] + [parents for _, parents in self.network]


def _candidates(
    rest: list[int], chosen: list[int], n_parents: int, limit: int | None, rng: np.random.Generator
) -> list[tuple[int, tuple[int, ...]]]:
    """All (child, parent set) candidates as DataSynthesizer enumerates them, or `limit` drawn uniformly."""
    total = len(rest) * math.comb(len(chosen), n_parents)
    if limit is None or total <= limit:
        # DataSynthesizer's order: for each child, parent sets ending in V[split] with others from V[split+1:]
        out = []
        for child in rest:
            for split in range(len(chosen) - n_parents + 1):
                for others in combinations(chosen[split + 1 :], n_parents - 1):
                    out.append((child, (*others, chosen[split])))
        return out
    picked = set()
    while len(picked) < limit:
        child = rest[int(rng.integers(len(rest)))]
        parents = tuple(sorted(int(p) for p in rng.choice(chosen, size=n_parents, replace=False)))
        picked.add((child, parents))
    return sorted(picked)


def selection_probabilities(
    epsilon: float,
    info: list[float],
    candidates: list[tuple[int, tuple[int, ...]]],
    binary: dict[int, bool],
    n: int,
    d: int,
) -> np.ndarray:
    """DataSynthesizer's `exponential_mechanism`: p ∝ exp(MI / (2Δ)), Δ = (d−1)·S/ε with PrivBayes' MI
    sensitivity S (the library's `calculate_sensitivity`/`calculate_delta`); a max-shifted softmax, so
    large ε·N does not overflow as the library's plain exp does."""
    from DataSynthesizer.lib.PrivBayes import calculate_delta, calculate_sensitivity

    deltas = np.array(
        [
            calculate_delta(d, calculate_sensitivity(n, child, list(parents), binary), epsilon)
            for child, parents in candidates
        ]
    )
    logits = np.asarray(info) / (2 * deltas)
    weights = np.exp(logits - logits.max())
    return weights / weights.sum()


def greedy_network(
    codes: np.ndarray,
    sizes: np.ndarray,
    degree: int,
    epsilon: float,
    rng: np.random.Generator,
    max_candidates: int | None = None,
    progress: Progress | None = None,
) -> tuple[int, Network]:
    """DataSynthesizer's `greedy_bayes(dataset, k, epsilon)`: (root, [(child, parents), ...]); `progress` is
    advanced once a pick (d − 1 picks)."""
    n, d = codes.shape
    counter = JointCounter(codes, sizes)
    binary = {a: bool(sizes[a] <= 2) for a in range(d)}
    root = int(rng.integers(d))
    chosen, rest, network = [root], [a for a in range(d) if a != root], []
    progress = progress or Progress("privbayes network", d - 1, "attributes")
    while rest:
        n_parents = min(len(chosen), degree)
        candidates = _candidates(rest, chosen, n_parents, max_candidates, rng)
        info = [mutual_information_table(t) for t in counter.tables(candidates)]
        probabilities = selection_probabilities(epsilon, info, candidates, binary, n, d)
        child, parents = candidates[int(rng.choice(len(candidates), p=probabilities))]
        network.append((child, parents))
        chosen.append(child)
        rest.remove(child)
        progress.advance()
    return root, network


def _normalise_rows(counts: np.ndarray) -> np.ndarray:
    """DataSynthesizer's `normalize_given_distribution` per row: clip at 0, divide by the sum, uniform if 0."""
    counts = np.clip(counts, 0, None)
    sums = counts.sum(axis=1, keepdims=True)
    return np.where(sums > 0, counts / np.where(sums > 0, sums, 1), 1.0 / counts.shape[1])


def noisy_counts(
    codes: np.ndarray,
    columns: tuple[int, ...],
    sizes: np.ndarray,
    scale: float,
    rng: np.random.Generator,
    secret: bool = False,
    pool: samplers.Pool | None = None,
) -> np.ndarray:
    """Counts of the joint values of `columns` + Laplace(scale) noise (discrete in a release, `secret`, from `pool`
    if given), negatives set to 0; shape = their sizes."""
    combined, total = combine(codes, columns, sizes)
    counts = np.bincount(combined, minlength=total).astype(np.float64)
    if scale > 0:
        counts = canaries.release(
            counts,
            scale,
            lambda shape, b: samplers.laplace_noise(shape, b, secret=secret, rng=rng, pool=pool),  # L1 sensitivity 1
            sensitivity=1.0,
            name="PrivBayes conditionals",
        )
    return np.clip(counts, 0, None).reshape([int(sizes[c]) for c in columns])


def noisy_conditionals(
    codes: np.ndarray,
    sizes: np.ndarray,
    root: int,
    network: Network,
    epsilon: float,
    rng: np.random.Generator,
    secret: bool = False,
) -> tuple[list[np.ndarray], float]:
    """DataSynthesizer's `construct_noisy_conditional_distributions(bn, data, epsilon)`.

    Returns the tables (see `PrivBayesModel`) and the Laplace scale used on every release ((d−k)/ε).
    """
    d = codes.shape[1]
    k = len(network[-1][1])
    scale = (d - k) / epsilon if epsilon else 0.0
    first = (root, *[child for child, _ in network[:k]])
    pool = None
    if secret and scale > 0:  # every table's noise in one draw (the exact sampler's per-call cost paid once)
        cells = [first] + [(*parents, child) for child, parents in network[k:]]
        pool = samplers.Pool("laplace", scale, sum(int(np.prod(sizes[list(c)])) for c in cells), rng)
    joint = noisy_counts(codes, first, sizes, scale, rng, secret, pool)  # [sizes of root, c1, ..., ck]
    tables = [_normalise_rows(joint.sum(axis=tuple(range(1, k + 1))).reshape(1, -1))]
    for index, (child, parents) in enumerate(network):
        if index <= k - 1:
            # marginalise the first joint to (parents..., child), axes in `first` order
            keep = [first.index(a) for a in (*parents, child)]
            drop = tuple(a for a in range(k + 1) if a not in keep)
            counts = joint.sum(axis=drop) if drop else joint
            remaining = [a for a in range(k + 1) if a not in drop]
            counts = np.transpose(counts, [remaining.index(a) for a in keep])
        else:
            counts = noisy_counts(codes, (*parents, child), sizes, scale, rng, secret, pool)
        tables.append(_normalise_rows(counts.reshape(-1, int(sizes[child]))))
    return tables, scale


def fit(
    codes: np.ndarray,
    sizes: np.ndarray,
    degree: int,
    epsilon_structure: float,
    epsilon_conditionals: float,
    rng: np.random.Generator,
    max_candidates: int | None = None,
    progress: Progress | None = None,
    secret: bool = False,
) -> PrivBayesModel:
    """The network, then its noisy conditionals (`secret`: a release, discrete Laplace noise on the counts)."""
    root, network = greedy_network(codes, sizes, degree, epsilon_structure, rng, max_candidates, progress)
    tables, _ = noisy_conditionals(codes, sizes, root, network, epsilon_conditionals, rng, secret)
    return PrivBayesModel(root, network, tables, np.asarray(sizes, dtype=np.int64))


def sample(model: PrivBayesModel, n: int, rng: np.random.Generator) -> np.ndarray:
    """Ancestral sampling of `n` records: codes [n, d]."""
    codes, progress = (
        np.zeros((n, len(model.sizes)), dtype=np.int64),
        Progress("sampling", len(model.sizes), "attributes"),
    )
    for attribute, parents, table in progress.each(zip(model.order, model.parents_of(), model.tables)):
        rows, _ = combine(codes, parents, model.sizes) if parents else (np.zeros(n, dtype=np.int64), 1)
        cdf = np.cumsum(table, axis=1)[rows]
        codes[:, attribute] = np.minimum((rng.random(n)[:, None] > cdf).sum(axis=1), table.shape[1] - 1)
    return codes


def save(model: PrivBayesModel, path) -> None:
    arrays = {f"table{i}": t for i, t in enumerate(model.tables)}
    network = np.array(
        [[child, len(parents), *parents, *([-1] * (8 - len(parents)))] for child, parents in model.network]
    )
    save_npz(path, {"root": np.asarray(model.root), "network": network, "sizes": model.sizes, **arrays})


def load(path) -> PrivBayesModel:
    with np.load(path) as data:
        network = [(int(r[0]), tuple(int(p) for p in r[2 : 2 + r[1]])) for r in data["network"]]
        tables = [data[f"table{i}"] for i in range(len(network) + 1)]
        return PrivBayesModel(int(data["root"]), network, tables, data["sizes"])
