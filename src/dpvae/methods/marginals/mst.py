"""MST (McKenna, Miklau & Sheldon 2021, "Winning the NIST Contest: A scalable and general approach to
differentially private synthetic data", §4), written from the paper on the project's integer codes
(`discretize.py`), with private-pgm (`mbi` 2.x) for estimation and sampling.

1. *Round 1* (rho/3): every 1-way marginal, weighted 1/sqrt(d) so that the round has L2-sensitivity 1, plus
   N(0, sigma^2); cells measured below 3 sigma/w are merged into one cell per attribute (domain compression:
   post-processing of the release).
2. *Selection* (rho/3): the model estimated from round 1 alone (independent attributes) gives every pair (a, b)
   an L1 error |M_ab(D) - M_ab(model)|_1 on the compressed domain; Kruskal's maximum spanning tree with each of its
   d - 1 edges picked by the exponential mechanism (eps0 = sqrt(8 (rho/3) / (d - 1)), score sensitivity 1) among
   the pairs that join two components.
3. *Round 2* (rho/3): the d - 1 selected 2-way marginals, weighted 1/sqrt(d - 1), plus N(0, sigma^2).
4. *Estimation and sampling*: mirror descent over the marginal polytope on every measurement (`match3.estimate`),
   `MarkovRandomField.synthetic_data`, merged cells re-expanded uniformly (`match3.expand`).

Shared with AIM (`aim.py`): `exponential_mechanism`, the compressed 1-way round.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from dpvae.methods.marginals.match3 import Clique, histogram
from dpvae.privacy import canaries


def round_weight(count: int) -> float:
    """The weight of each of `count` marginals measured in one release: 1/sqrt(count), so that one record (1 in one
    cell of each) moves the weighted set by L2 norm 1 under add/remove-one, sqrt(2) under replace-one."""
    return 1.0 / np.sqrt(count)


def l1_error(data: np.ndarray, model: np.ndarray) -> float:
    """The selection score of a marginal: |data - model|_1 (one record moves it by 1 added or removed, 2 replaced)."""
    return float(np.abs(data - model).sum())


def _noise(rng: np.random.Generator):
    return lambda shape, std: std * rng.standard_normal(shape)


def exponential_mechanism(scores: np.ndarray, epsilon: float, sensitivity: float, rng: np.random.Generator) -> int:
    """An index drawn with probability proportional to exp(epsilon * score / (2 * sensitivity)): epsilon-DP (and
    epsilon-bounded-range) when a neighbour moves every score by at most `sensitivity`."""
    logits = 0.5 * epsilon / sensitivity * np.asarray(scores, dtype=np.float64)
    logits -= logits.max()
    p = np.exp(logits)
    return int(rng.choice(len(p), p=p / p.sum()))


@dataclass(frozen=True)
class OneWay:
    """Round 1 on the compressed domain: its measurements (mbi `LinearMeasurement`s), per attribute the original
    cells kept (`supports`) and the original -> compressed code maps (`mappings`)."""

    measurements: list
    supports: list[np.ndarray]
    mappings: list[np.ndarray]

    @property
    def sizes(self) -> np.ndarray:
        return np.array([int(m.max()) + 1 for m in self.mappings], dtype=np.int64)

    def compress(self, codes: np.ndarray) -> np.ndarray:
        return np.column_stack([m[codes[:, a]] for a, m in enumerate(self.mappings)])


def measure_one_way(
    codes: np.ndarray, sizes: np.ndarray, sigma: float, rng: np.random.Generator, name: str, compress: bool = True
) -> OneWay:
    """Every 1-way marginal weighted 1/sqrt(d) plus N(0, sigma^2) (one unit-L2-sensitivity Gaussian release), its
    cells measured below 3 sigma merged into one (all kept with `compress` False, or when none would be merged)."""
    from mbi import Domain, LinearMeasurement

    d = codes.shape[1]
    weight = round_weight(d)
    measured, supports, mappings = [], [], []
    for a in range(d):
        y = canaries.release(weight * histogram(codes, (a,), sizes), sigma, _noise(rng), sensitivity=weight, name=name)
        support = (y >= 3 * sigma) if compress else np.ones(len(y), dtype=bool)
        if support.sum() >= len(y) - 1:  # merging at most one cell changes nothing
            support = np.ones(len(y), dtype=bool)
        mapping = np.full(int(sizes[a]), int(support.sum()), dtype=np.int64)
        mapping[support] = np.arange(int(support.sum()))
        supports.append(support)
        mappings.append(mapping)
        measured.append(LinearMeasurement(y / weight, (a,), stddev=sigma / weight))
    full = Domain(range(d), [int(s) for s in sizes])
    compressed = [m.compress({a: mappings[a]}, full) for a, m in enumerate(measured)]
    return OneWay(compressed, supports, mappings)


def measure_cliques(
    compressed: np.ndarray, sizes: np.ndarray, cliques: list[Clique], sigma: float, rng: np.random.Generator, name: str
) -> list:
    """The cliques' marginals weighted 1/sqrt(len(cliques)) plus N(0, sigma^2): one unit-L2-sensitivity release."""
    from mbi import LinearMeasurement

    weight = round_weight(len(cliques))
    out = []
    for clique in cliques:
        hist = histogram(compressed, clique, sizes)
        y = canaries.release(weight * hist, sigma, _noise(rng), sensitivity=weight, name=name)
        out.append(LinearMeasurement(y / weight, clique, stddev=sigma / weight))
    return out


def independent_marginals(measurements: list, sizes: np.ndarray) -> tuple[list[np.ndarray], float]:
    """The 1-way marginals of the model estimated from 1-way measurements alone, and its total: each noisy
    marginal projected onto {x >= 0, sum x = N} (Euclidean), N the measurements' inverse-variance weighted mean
    total. With no clique shared this is the least-squares estimate private-pgm computes over the marginal polytope."""
    totals = np.array([float(np.sum(m.noisy_measurement)) for m in measurements])
    variances = np.array([float(m.stddev) ** 2 * len(m.noisy_measurement) for m in measurements])
    total = max(float(np.sum(totals / variances) / np.sum(1 / variances)), 1.0)
    return [_simplex_projection(np.asarray(m.noisy_measurement, dtype=np.float64), total) for m in measurements], total


def _simplex_projection(y: np.ndarray, total: float) -> np.ndarray:
    """argmin_x |x - y|_2 subject to x >= 0, sum x = total (Duchi et al. 2008)."""
    u = np.sort(y)[::-1]
    cumulative = np.cumsum(u) - total
    index = np.arange(1, len(y) + 1)
    rho = np.nonzero(u - cumulative / index > 0)[0][-1]
    return np.maximum(y - cumulative[rho] / (rho + 1), 0.0)


def pair_errors(
    compressed: np.ndarray, sizes: np.ndarray, marginals: list[np.ndarray], total: float
) -> dict[Clique, float]:
    """Every pair's L1 error of the independent model (`marginals`, `total`: released) on the data's pair marginal."""
    errors = {}
    for a, b in itertools.combinations(range(compressed.shape[1]), 2):
        model = np.outer(marginals[a], marginals[b]).ravel() / total
        errors[a, b] = l1_error(histogram(compressed, (a, b), sizes), model)
    return errors


def select_tree(
    compressed: np.ndarray, sizes: np.ndarray, marginals: list[np.ndarray], total: float, epsilon: float, rng
) -> list[Clique]:
    """MST's selection: d - 1 exponential-mechanism picks of a maximum spanning tree, each among the pairs joining two
    components, scored by the L1 error of the independent model (`marginals`, `total`) on the data's pair marginal."""
    d = compressed.shape[1]
    errors = pair_errors(compressed, sizes, marginals, total)
    component = list(range(d))

    def root(v: int) -> int:
        while component[v] != v:
            v = component[v]
        return v

    tree: list[Clique] = []
    for _ in range(d - 1):
        candidates = [e for e in errors if root(e[0]) != root(e[1])]
        pick = candidates[exponential_mechanism(np.array([errors[e] for e in candidates]), epsilon, 1.0, rng)]
        component[root(pick[0])] = root(pick[1])
        tree.append(pick)
    return tree
