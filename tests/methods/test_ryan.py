"""Ryan's Match3: selection on public data, noise calibrated with the project's accountant, compression maps."""

from __future__ import annotations

import numpy as np
import pytest

from dpvae.methods.marginals import match3
from dpvae.methods.marginals.accounting import calibrate, ryan_accounting, ryan_ledger
from dpvae.privacy.ledger import Ledger
from support.dp_accounting_check import rederive


def chain(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A -> B -> C strongly dependent, D independent (binary)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2, n)
    b = np.where(rng.random(n) < 0.9, a, 1 - a)
    c = np.where(rng.random(n) < 0.9, b, 1 - b)
    d = rng.integers(0, 2, n)
    return np.column_stack([a, b, c, d]), np.array([2, 2, 2, 2])


def test_selection_takes_the_maximum_spanning_tree_of_mutual_information():
    codes, sizes = chain(4000, 0)
    cliques = match3.select_marginals(codes, sizes, threshold=0.1)
    pairs = [c for c in cliques if len(c) == 2]
    assert (0, 1) in pairs and (1, 2) in pairs and (0, 2) not in pairs


def test_triples_need_dependence_beyond_the_tree():
    codes, sizes = chain(4000, 0)
    assert all(len(c) == 2 for c in match3.select_marginals(codes, sizes, threshold=0.1))  # B separates A and C
    # A xor C determines B's neighbour pair: a triple the pairs cannot explain
    rng = np.random.default_rng(1)
    a, c = rng.integers(0, 2, 4000), rng.integers(0, 2, 4000)
    b = a ^ c
    codes = np.column_stack([a, b, c])
    assert match3.triple_score(codes, np.array([2, 2, 2]), 1, 0, 2) > 0.1


def test_sigma_meets_the_target_and_is_rederived():
    sigma = calibrate(1.0, 1e-5)
    accounting = ryan_accounting(sigma, 1e-5)
    assert accounting.epsilon <= 1.0 and accounting.epsilon == pytest.approx(1.0, rel=1e-6)
    assert rederive(accounting.to_dict()) == pytest.approx(accounting.epsilon, rel=1e-6)


def test_the_ledger_is_marked_not_dp_naming_the_public_share():
    """The public slice is private data read without noise: no sound accounting, the share named."""
    ledger = ryan_ledger(calibrate(1.0, 1e-5), 1e-5, 1.0, 0.1)
    assert ledger.sound is None and ledger.not_dp.startswith("not DP: a random 0.1 of the private training split")
    assert Ledger.from_dict(ledger.to_dict()) == ledger and ledger.epsilon <= 1.0


def test_measurement_compresses_small_cells_and_expansion_inverts_it():
    rng = np.random.default_rng(0)
    codes = np.column_stack([rng.choice(6, 5000, p=[0.5, 0.492, 0.002, 0.002, 0.002, 0.002]), rng.integers(0, 2, 5000)])
    measured = match3.measure(codes, np.array([6, 2]), [(0, 1)], sigma=15.0, rng=rng)
    assert measured.supports[0].tolist() == [True, True, False, False, False, False]
    assert measured.compressed_sizes.tolist() == [3, 2]
    back = match3.expand(np.array([[0, 1], [1, 0], [2, 1]]), measured.supports, rng)
    assert back[0].tolist() == [0, 1] and back[1].tolist() == [1, 0] and back[2, 0] in (2, 3, 4, 5)


def test_without_the_label_no_measured_marginal_holds_it_and_the_rest_stay():
    """`label_marginals: false` (the P3GM Ryan's study): the label, tied to A, is in a selected pair; dropped, no
    round-2 clique holds it and every other clique is kept in order."""
    codes, sizes = chain(4000, 0)
    label = np.where(np.random.default_rng(2).random(4000) < 0.95, codes[:, 0], 1 - codes[:, 0])
    codes, sizes = np.column_stack([codes, label]), np.append(sizes, 2)
    cliques = match3.select_marginals(codes, sizes, threshold=0.1)
    assert any(4 in clique for clique in cliques)
    kept = match3.without_attribute(cliques, 4)
    assert kept and all(4 not in clique for clique in kept)
    assert kept == [clique for clique in cliques if 4 not in clique] and (0, 1) in kept
