"""The membership-inference machinery: Hilprecht's MC scores against a brute-force loop, the attacked
targets (paired across variants, the outlier switch) and the distance helpers."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from dpvae.data.store import Prepared, Split
from dpvae.eval.base import EvalContext
from dpvae.eval.mc_attack import mc_scores
from dpvae.eval.membership import AttackOptions, count_within, nearest_distances, targets
from dpvae.runspec import RunSpec
from support.tolerances import assert_planted_fails


def brute_force_mc(queries: np.ndarray, synthetic: np.ndarray) -> tuple[np.ndarray, float]:
    """Hilprecht et al. Eq. 3-4 literally (domias `baselines.MC`, with <= and unsquared distances)."""
    distances = np.array([[np.linalg.norm(q - s) for s in synthetic] for q in queries])
    radius = np.median(distances.min(1))
    return (distances <= radius).sum(1) / len(synthetic), radius


def test_mc_scores_match_the_brute_force_definition():
    rng = np.random.default_rng(0)
    synthetic = (rng.random((300, 20)) > 0.5).astype(np.float32)
    queries = np.r_[synthetic[:15] + rng.normal(0, 0.05, (15, 20)), rng.random((25, 20))]
    scores, radius, nearest = mc_scores(queries, synthetic)
    expected, expected_radius = brute_force_mc(queries, synthetic)
    # float64 distances of 20 coordinates (exact to ~20 u ≈ 2e-15) against np.allclose's rtol 1e-5, atol 1e-8:
    # measured at most 8.9e-9 of it (seeds 0 and 1, 1 and 2 threads; benchmarks/measured/cpu-2026-12-01/)
    assert radius == pytest.approx(expected_radius)
    assert np.allclose(scores, expected)
    assert np.allclose(nearest, [min(np.linalg.norm(q - s) for s in synthetic) for q in queries])


def test_chunking_does_not_change_distances_or_counts():
    rng = np.random.default_rng(1)
    queries, pool = rng.random((7, 5)), rng.random((1000, 5))
    whole = nearest_distances(queries, pool, chunk=4096)
    # float64, 5 coordinates: chunking only regroups rows (measured bit-equal); np.allclose's default tolerance
    # absorbs another BLAS's blocking, and queries moved by 1e-3 lie far outside it
    assert np.allclose(nearest_distances(queries, pool, chunk=13), whole)
    assert_planted_fails(nearest_distances(queries + 1e-3, pool, chunk=13), whole, 1e-5, 1e-8)
    assert (count_within(queries, pool, 0.4, chunk=7) == count_within(queries, pool, 0.4, chunk=5000)).all()


def _context(seed: int, variant: str, outlier: str, n_members: int = 20) -> EvalContext:
    x = np.zeros((50, 1, 2, 2), dtype=np.float32)
    data = Prepared(
        Split(x, np.arange(50, dtype=np.int64)), Split(x[:30], np.zeros(30, dtype=np.int64)), {"outlier_index": 49}
    )
    spec = RunSpec.standalone(f"toy/{variant}/seed{seed}", ".", dataset="toy", variant=variant, seed=seed)
    run = SimpleNamespace(spec=spec, data=data)
    return EvalContext(run, AttackOptions(n_members=n_members, n_nonmembers=10, outlier=outlier), Path("."))


def test_every_variant_of_a_seed_is_attacked_on_the_same_records():
    first, second = targets(_context(0, "a", "random")), targets(_context(0, "b", "random"))
    assert (first.members == second.members).all() and (first.nonmembers == second.nonmembers).all()
    other = targets(_context(1, "a", "random"))
    assert not (first.members == other.members).all()


def test_the_outlier_switch():
    assert 49 in targets(_context(0, "a", "include")).members
    assert all(49 not in targets(_context(s, "a", "exclude", 49)).members for s in range(3))
    assert len(targets(_context(0, "a", "include")).members) == 20
    with pytest.raises(ValueError, match="ask for 60 members"):
        targets(_context(0, "a", "random", 60))


def test_frechet_distance_of_gaussian_fits():
    from dpvae.eval.frechet_pca import frechet_distance

    rng = np.random.default_rng(3)
    a = rng.normal(size=(20000, 3))
    assert frechet_distance(a, a) == pytest.approx(0, abs=1e-6)
    assert frechet_distance(a, a + [2.0, 0, 0]) == pytest.approx(4.0, rel=1e-6)
    # N(0, I) vs N(0, 4I): 3 * (1 + 4 - 2*2) = 3
    assert frechet_distance(a, 2 * rng.normal(size=(20000, 3))) == pytest.approx(3.0, rel=0.05)
