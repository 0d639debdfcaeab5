"""PrivBayes: the vectorised correlated mode matches DataSynthesizer's own functions, and its ledger is pure ε-DP."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from DataSynthesizer.lib.PrivBayes import construct_noisy_conditional_distributions, exponential_mechanism, worker
from DataSynthesizer.lib.utils import mutual_information as library_mutual_information

from dpvae.methods.marginals import privbayes as pb
from dpvae.methods.marginals.accounting import privbayes_ledger
from dpvae.methods.marginals.counts import JointCounter, combine, mutual_information_table
from support.dp_accounting_check import rederive


@pytest.fixture(scope="module")
def coded():
    rng = np.random.default_rng(0)
    sizes = np.array([2, 3, 4, 2, 3])
    codes = np.column_stack([rng.integers(0, s, 600) for s in sizes])
    codes[:, 1] = (codes[:, 0] + rng.integers(0, 2, 600)) % 3  # a dependence to find
    frame = pd.DataFrame(codes.astype(str), columns=[str(i) for i in range(len(sizes))])
    return codes, sizes, frame


def test_mutual_information_equals_the_librarys(coded):
    codes, sizes, frame = coded
    for child, parents in [(1, (0,)), (1, (0, 2)), (4, (3, 2))]:
        table = JointCounter(codes, sizes).tables([(child, parents)])[0]
        ours = mutual_information_table(table)
        theirs = library_mutual_information(frame[str(child)], frame[[str(p) for p in parents]])
        assert ours == pytest.approx(theirs, abs=1e-12)


def test_popcount_and_bincount_counts_agree(coded):
    codes, sizes, _ = coded
    counter = JointCounter(codes, sizes)
    candidates = [(1, (0,)), (3, (0, 4)), (2, (1, 3)), (4, (2, 1))]
    for (child, parents), table in zip(candidates, counter.tables(candidates)):
        joint, size = combine(codes, parents, sizes)
        expected = np.bincount(joint * sizes[child] + codes[:, child], minlength=size * sizes[child])
        assert np.array_equal(table.ravel(), expected)


def test_candidates_and_selection_probabilities_are_the_librarys(coded):
    codes, sizes, frame = coded
    chosen, rest = [0, 2, 3], [1, 4]
    ours = pb._candidates(rest, chosen, 2, None, np.random.default_rng(0))
    pairs, infos = [], []
    for child in map(str, rest):
        for split in range(len(chosen) - 1):
            p, m = worker((child, [str(v) for v in chosen], 2, split, frame))
            pairs += p
            infos += m
    assert ours == [(int(c), tuple(int(v) for v in p)) for c, p in pairs]
    info = [mutual_information_table(t) for t in JointCounter(codes, sizes).tables(ours)]
    binary = {a: bool(sizes[a] <= 2) for a in range(len(sizes))}
    ours_p = pb.selection_probabilities(0.5, info, ours, binary, len(codes), len(sizes))
    theirs_p = exponential_mechanism(0.5, infos, pairs, {str(k): v for k, v in binary.items()}, len(codes), len(sizes))
    assert np.allclose(ours_p, theirs_p)


def test_limited_candidates_are_distinct_and_data_independent():
    rng = np.random.default_rng(1)
    picked = pb._candidates(list(range(10, 40)), list(range(10)), 2, 25, rng)
    assert len(picked) == len(set(picked)) == 25
    assert all(c >= 10 and len(p) == 2 and max(p) < 10 for c, p in picked)


def test_noise_free_conditionals_equal_the_librarys(coded):
    codes, sizes, frame = coded
    root, network = 2, [(0, (2,)), (1, (2, 0)), (3, (0, 1)), (4, (1, 3))]
    tables, scale = pb.noisy_conditionals(codes, sizes, root, network, 0.0, np.random.default_rng(0))
    theirs = construct_noisy_conditional_distributions(
        [[str(c), [str(p) for p in ps]] for c, ps in network], pd.DataFrame(codes, columns=frame.columns), 0
    )
    assert scale == 0 and np.allclose(tables[0][0], theirs[str(root)])
    for table, (child, parents) in zip(tables[1:], network):
        for config in itertools.product(*[range(sizes[p]) for p in parents]):
            key = str([config[0]]) if len(parents) == 1 else str(list(config))
            assert np.allclose(
                table[np.ravel_multi_index(config, [sizes[p] for p in parents])], theirs[str(child)][key]
            )


def test_sampling_follows_the_fitted_model(coded):
    codes, sizes, _ = coded
    model = pb.fit(codes, sizes, 2, 1e6, 1e6, np.random.default_rng(0))  # ~no noise: the empirical model
    drawn = pb.sample(model, 40000, np.random.default_rng(1))
    for a in range(len(sizes)):
        assert np.allclose(
            np.bincount(drawn[:, a], minlength=sizes[a]) / 40000,
            np.bincount(codes[:, a], minlength=sizes[a]) / len(codes),
            atol=0.02,
        )

    def joint(c: np.ndarray) -> np.ndarray:
        return np.bincount(c[:, 0] * 3 + c[:, 1], minlength=6) / len(c)

    assert np.allclose(joint(drawn), joint(codes), atol=0.02)  # the planted dependence survives


def test_ledger_is_pure_and_spends_exactly_the_target():
    ledger, half = privbayes_ledger(n_attributes=15, degree=2, epsilon=1.0, delta=1e-5)
    assert ledger.paper.accountant == "pure" and ledger.epsilon <= 1.0
    assert ledger.epsilon == pytest.approx(1.0, abs=1e-8) and half == pytest.approx(0.5, abs=1e-8)
    assert ledger.sound.epsilon == pytest.approx(1.5, abs=1e-8)  # replace-one doubles the count sensitivity
    structure, conditionals = ledger.paper.mechanisms
    assert (structure.steps, conditionals.steps) == (14, 13)
    assert rederive(ledger.to_dict()) == pytest.approx(ledger.epsilon, rel=1e-6)
