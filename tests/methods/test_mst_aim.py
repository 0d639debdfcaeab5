"""MST's and AIM's pieces against their definitions: the exponential mechanism's distribution, MST's independent
model (private-pgm's estimate from 1-way measurements), AIM's candidates and weights, and the numpy variable
elimination AIM scores with against private-pgm's `project`."""

from __future__ import annotations

import os

import numpy as np
import pytest

from dpvae.methods.marginals import aim, mst
from dpvae.methods.marginals.match3 import histogram


@pytest.fixture(scope="module")
def mbi():
    os.environ.setdefault("JAX_ENABLE_X64", "1")
    import jax

    jax.config.update("jax_enable_x64", True)
    import mbi

    return mbi


def test_the_exponential_mechanism_draws_in_proportion_to_exp_eps_score_over_twice_the_sensitivity():
    scores, rng = np.array([0.0, 1.0, 3.0]), np.random.default_rng(0)
    draws = np.bincount([mst.exponential_mechanism(scores, 2.0, 2.0, rng) for _ in range(20_000)], minlength=3)
    expected = np.exp(scores / 2) / np.exp(scores / 2).sum()
    assert draws / draws.sum() == pytest.approx(expected, abs=0.015)


def test_aims_candidates_are_the_workloads_downward_closure_weighted_by_overlap():
    candidates = aim.workload_candidates(3, 2)
    assert set(candidates) == {(0,), (1,), (2,), (0, 1), (0, 2), (1, 2)}
    assert candidates[(0,)] == 2 and candidates[(0, 1)] == 4  # |r ∩ s| over s = (0,1), (0,2), (1,2): 2 + 1 + 1
    assert aim.selection_sensitivity(candidates) == 4


def _model(mbi, rng, sizes, cliques):
    codes = np.column_stack([rng.integers(0, s, 300) for s in sizes])
    measurements = [
        mbi.LinearMeasurement(
            histogram(codes, c, np.array(sizes)) + rng.normal(size=int(np.prod([sizes[a] for a in c]))), c
        )
        for c in cliques
    ]
    domain = mbi.Domain(range(len(sizes)), sizes)
    return mbi.estimation.MirrorDescent().estimate(domain, measurements, iters=100), measurements


def test_numpy_variable_elimination_is_private_pgms_projection(mbi):
    rng = np.random.default_rng(0)
    model, _ = _model(mbi, rng, [3, 4, 2, 5, 3], [(0,), (1,), (2,), (3,), (4,), (0, 1), (1, 2, 3), (3, 4)])
    for clique in [(0, 2), (0, 4), (2, 4), (1,), (0, 3, 4), (1, 2, 3)]:
        expected = np.asarray(model.project(clique).datavector())
        assert aim._marginal(model, clique) == pytest.approx(expected, rel=1e-8, abs=1e-8)


def test_msts_independent_model_is_private_pgms_estimate_from_one_way_measurements(mbi):
    rng = np.random.default_rng(1)
    sizes = [3, 4, 2]
    model, measurements = _model(mbi, rng, sizes, [(0,), (1,), (2,)])
    model = mbi.estimation.MirrorDescent().estimate(model.domain, measurements, iters=3000)
    marginals, total = mst.independent_marginals(measurements, np.array(sizes))
    assert total == pytest.approx(float(model.total))
    for a, marginal in enumerate(marginals):
        assert marginal == pytest.approx(np.asarray(model.project((a,)).datavector()), abs=1e-3)


@pytest.mark.parametrize("where", ["in the rounds", "in the final estimate"])
def test_a_killed_aim_fit_resumes_from_its_round_checkpoint_to_the_same_bytes(where, tmp_path, monkeypatch):
    """An AIM release at paper scale is an hour of rounds and a final estimate of minutes: killed after a checkpoint
    (round 2; or the one after the last round, in the final estimate), the resumed run measures only the rounds left
    (none) and ends with the model, samples and ledger of an uninterrupted run."""
    from pathlib import Path

    from mbi.estimation import MirrorDescent

    from dpvae import stages
    from dpvae.data.store import write_prepared
    from dpvae.methods.checkpoint import Checkpoint
    from dpvae.paths import checkpoint_file, ledger_file, model_path, prepared_dir
    from dpvae.runspec import RunSpec
    from support.neighbours import table_splits

    train, test = table_splits(200, 5)
    write_prepared(prepared_dir(tmp_path / "data", "toy"), train, test, {"label_names": ["a", "b"]})
    final_iterations = 10

    def spec(run: str) -> RunSpec:
        params = {"bins": 3, "rounds": 12, "round_iterations": 5, "iterations": final_iterations}
        return RunSpec.standalone(
            "toy/aim/eps1/seed0", tmp_path / run, scale="test", dataset="toy", method="aim", params=params,
            epsilon=1.0, delta=1e-5, device="cpu", data_root=tmp_path / "data",
        )  # fmt: skip

    def released(run: Path) -> dict[str, bytes]:
        stages.sample(str(run), 50)
        files = [ledger_file(run), *sorted(model_path(run).iterdir()), *sorted(run.glob("samples*"))]
        return {path.name: path.read_bytes() for path in files}

    chosen, estimate, selections, kill = aim.exponential_mechanism, MirrorDescent.estimate, [], []

    def counted(scores, epsilon, sensitivity, rng):  # one selection per round
        selections.append(1)
        if kill == ["round"] and len(selections) == 4:
            raise KeyboardInterrupt("killed in round 4")
        return chosen(scores, epsilon, sensitivity, rng)

    def estimated(self, *args, iters, **kwargs):
        if kill == ["final"] and iters == final_iterations:
            raise KeyboardInterrupt("killed in the final estimate")
        return estimate(self, *args, iters=iters, **kwargs)

    monkeypatch.setattr(aim, "exponential_mechanism", counted)
    monkeypatch.setattr(MirrorDescent, "estimate", estimated)
    whole, killed = spec("whole"), spec("killed")
    stages.train(whole)
    rounds = len(selections)
    assert rounds > 3
    selections.clear()
    kill.append("round" if where == "in the rounds" else "final")
    monkeypatch.setattr(Checkpoint, "due", lambda self, step: where == "in the rounds" and step == 1)  # after round 2
    with pytest.raises(KeyboardInterrupt):
        stages.train(killed)
    assert checkpoint_file(Path(killed.run)).is_file()
    selections.clear()
    kill.clear()
    stages.train(killed)
    left = rounds - 2 if where == "in the rounds" else 0
    assert len(selections) == left, "the resumed run measured only the rounds left"
    assert not checkpoint_file(Path(killed.run)).exists()
    assert released(Path(killed.run)) == released(Path(whole.run))
