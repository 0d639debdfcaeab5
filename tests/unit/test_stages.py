"""The stage functions the rules call: train / sample write complete outputs, or nothing."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from dpvae import stages
from dpvae.data.registry import prepare_dataset
from dpvae.files import temporaries
from dpvae.params import MethodParams
from dpvae.runs import Run, run_spec
from dpvae.runspec import RunSpec


@pytest.fixture()
def pinwheel_spec(paper_config, tmp_path, monkeypatch) -> RunSpec:
    """The spec of a run of the `real` method on generated data, rooted in a temporary directory."""
    monkeypatch.chdir(tmp_path)
    prepare_dataset("pinwheel", tmp_path / "data")
    spec = run_spec(paper_config, Run("pinwheel", "real", "inf", 0))
    return replace(spec, data_root=str(tmp_path / "data"), params={"max_train": 100})


def test_train_and_sample_a_nonprivate_method(pinwheel_spec):
    model = stages.train(pinwheel_spec)
    run = Path(pinwheel_spec.run)
    assert model == run / "model" and (model / "model.json").is_file()
    assert json.loads((run / "privacy.json").read_text())["private"] is False
    meta = json.loads((run / "train.json").read_text())
    assert RunSpec.from_dict(meta["spec"]) == pinwheel_spec and meta["seconds"] >= 0
    assert json.dumps(meta["spec"], sort_keys=True, separators=(",", ":")) == pinwheel_spec.to_json()
    assert not temporaries(run / "model")
    assert meta["spec_sha256"] and meta["commit"] and meta["seed"] == 0
    with np.load(stages.sample(run, None)) as samples:
        assert samples["x"].shape == (100, 2) and samples["y"].shape == (100,)  # max_train subsample


def test_the_training_subsample_is_seeded(pinwheel_spec):
    stages.train(pinwheel_spec)
    stages.train(replace(pinwheel_spec, seed=1, run=pinwheel_spec.run + "-1"))
    first = np.load(stages.sample(pinwheel_spec.run, 10))["x"]
    again = np.load(stages.sample(pinwheel_spec.run, 10))["x"]
    other = np.load(stages.sample(pinwheel_spec.run + "-1", 10))["x"]
    assert np.array_equal(first, again) and not np.array_equal(first, other)


def test_train_json_names_the_commit_that_started_training(pinwheel_spec, monkeypatch):
    """A checkout that moves on while a long run trains must not relabel the run with the newer code."""
    checkout = {"commit": "abc-started"}
    method = stages.get_method(pinwheel_spec.method)
    train = method.train

    def train_while_the_checkout_moves_on(ctx):
        checkout["commit"] = "def-moved-on"
        return train(ctx)

    monkeypatch.setattr(stages, "git_commit", lambda: checkout["commit"])
    monkeypatch.setattr(method, "train", train_while_the_checkout_moves_on)
    stages.train(pinwheel_spec)
    assert json.loads((Path(pinwheel_spec.run) / "train.json").read_text())["commit"] == "abc-started"


class _Crasher:
    """A method that writes part of its model, then fails."""

    name, paper, private, description, implemented = "crasher", "test", False, "test double", True
    Params = MethodParams

    def train(self, ctx):
        ctx.model_dir.mkdir(parents=True, exist_ok=True)
        (ctx.model_dir / "weights.bin").write_bytes(b"half")
        raise RuntimeError("out of memory half-way")


def test_a_failing_method_leaves_no_model(pinwheel_spec, monkeypatch):
    from dpvae.methods.registry import METHODS

    monkeypatch.setitem(METHODS._entries, "crasher", _Crasher())
    spec = replace(pinwheel_spec, method="crasher")
    with pytest.raises(RuntimeError, match="half-way"):
        stages.train(spec)
    run = Path(spec.run)
    assert not (run / "model").exists() and not (run / "privacy.json").exists()


class _Overspender:
    """A private 'method' whose ledger spends more than any target."""

    name, paper, private, description, implemented = "overspender", "test", True, "test double", True
    Params = MethodParams

    def train(self, ctx):
        from dpvae.privacy.ledger import Accounting, Ledger, Mechanism

        ctx.model_dir.mkdir(parents=True, exist_ok=True)
        (ctx.model_dir / "weights.bin").write_bytes(b"0")
        return Ledger(Accounting((Mechanism("dpsgd", 0.5, 1.0, 100),), 1e-5), target_epsilon=1.0)


def test_a_run_past_its_target_epsilon_is_refused(pinwheel_spec, monkeypatch):
    from dpvae.errors import PrivacyBudgetExceeded
    from dpvae.methods.registry import METHODS

    monkeypatch.setitem(METHODS._entries, "overspender", _Overspender())
    spec = replace(pinwheel_spec, method="overspender", private=True, epsilon=1.0)
    with pytest.raises(PrivacyBudgetExceeded, match="target epsilon 1"):
        stages.train(spec)
    run = Path(spec.run)
    assert not (run / "model").exists() and not (run / "privacy.json").exists() and not list(run.glob(".model.*"))
