"""The method-level audit (`dpvae.privacy.canaries`): Dirac canaries ride on the first engine of a real
training loop; honest runs stay below the claim, noise scaled by 0.1 is caught, for every engine kind;
the train stage writes audit.json for an audited variant and the `canary_audit` metric reads it."""

from __future__ import annotations

import contextlib
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from dpvae.methods.base import Method
from dpvae.paths import audit_file, ledger_file
from dpvae.privacy.canaries import CanarySession
from dpvae.privacy.dpsgd import DPSGD, poisson_sample
from dpvae.privacy.engine_audit import AuditSetting, build_engine, calibrate, step_inputs
from dpvae.privacy.ledger import Accounting, Ledger
from support.planted_bugs import scaled_noise

DELTA = 1e-5


class Autoencoder(nn.Module):
    def __init__(self, d: int = 2) -> None:
        super().__init__()
        self.encode, self.decode = nn.Linear(d, 8), nn.Linear(8, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # per-record squared error [B]
        return ((self.decode(torch.tanh(self.encode(x))) - x) ** 2).sum(1)


def train_toy(
    kind: str, x: torch.Tensor, epsilon: float = 1.0, rate: float = 0.1, steps: int = 40, seed: int = 0
) -> tuple[Autoencoder, Ledger]:
    """A method's DP-SGD loop in small: Poisson batches, one engine of `kind`, σ calibrated to ε (paper)."""
    torch.manual_seed(seed)
    model = Autoencoder(x.shape[1])
    setting = AuditSetting(kind, epsilon, rate, steps, canaries=2, records=len(x), groups=4)
    engine = build_engine(setting, model, 1.0, torch.Generator().manual_seed(seed))
    calibrate(engine, setting)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    sampling = torch.Generator().manual_seed(seed + 1)
    for _ in range(steps):
        batch = x[poisson_sample(len(x), rate, sampling)]
        optimizer.zero_grad(set_to_none=True)
        engine.step(*step_inputs(kind, model(batch), 4, sampling))
        optimizer.step()
    engine.close()
    return model, Ledger(Accounting(tuple(engine.mechanisms()), DELTA), target_epsilon=epsilon)


def data(n: int = 200) -> torch.Tensor:
    return torch.as_tensor(np.random.default_rng(0).normal(size=(n, 2)), dtype=torch.float32)


def audited(kind: str, bug: bool = False, canaries: int = 200) -> dict:
    torch.set_num_threads(1)
    session = CanarySession(canaries, seed=5)
    with session.active(), scaled_noise(0.1) if bug else contextlib.nullcontext():
        _, ledger = train_toy(kind, data())
    return session.record(ledger, DELTA)


@pytest.mark.parametrize("kind", ["dpsgd", "termwise", "micro", "batch"])
def test_honest_engines_stay_below_and_a_tenth_of_the_noise_is_caught(kind: str) -> None:
    honest, buggy = audited(kind), audited(kind, bug=True)
    for record in (honest, buggy):
        assert record["epsilon_claimed"] <= 1.0 and record["engine"]["kind"] == kind
        assert record["engine"]["steps"] == 40 and record["canaries"] == 200
    assert honest["lower"] <= honest["point"] <= honest["epsilon_claimed"]
    assert buggy["lower"] > buggy["epsilon_claimed"]


def test_outside_a_session_training_is_untouched() -> None:
    first, _ = train_toy("dpsgd", data())
    with CanarySession(50, seed=1).active():
        pass
    second, _ = train_toy("dpsgd", data())
    assert all(torch.equal(a, b) for a, b in zip(first.state_dict().values(), second.state_dict().values()))


def test_only_the_first_engine_to_release_carries_the_canaries_and_never_the_model() -> None:
    session = CanarySession(50, seed=1)
    with session.active():
        other = Autoencoder()
        second = DPSGD(other, max_grad_norm=1.0, noise_multiplier=1.0, sample_rate=0.5, expected_batch_size=4)
        model = Autoencoder()
        first = DPSGD(model, max_grad_norm=1.0, noise_multiplier=1.0, sample_rate=0.5, expected_batch_size=4)
        first.step(model(data(8)))  # built after `second` (a calibration probe, say), but releases first
        second.step(other(data(8)))
    assert session.slot is not None and session.slot.engine is first and second._canaries is None
    assert session.engines == 2 and session.slot.scores.steps == 1
    canary_weight = session.slot.layer.weight
    assert all(p is not canary_weight for p in model.parameters()) and canary_weight.grad is not None


def test_an_interrupted_or_engineless_run_is_refused() -> None:
    session = CanarySession(50, seed=1)
    with session.active():
        _, ledger = train_toy("dpsgd", data(), steps=3)
    session.slot.engine.steps += 1  # as after resuming from a checkpoint
    with pytest.raises(RuntimeError, match="resumed"):
        session.record(ledger, DELTA)
    with pytest.raises(RuntimeError, match="no DP-SGD engine"):
        CanarySession(50, seed=1).record(ledger, DELTA)


class _ToyPrivate(Method):
    """A private 'method': the toy DP-SGD autoencoder on the run's data, at the run's target ε."""

    name, paper, private, description, implemented = "toy-private", "test", True, "test double", True

    def sample(self, ctx, n):
        raise NotImplementedError

    def train(self, ctx):
        x = torch.as_tensor(ctx.data.train.x, dtype=torch.float32)
        model, ledger = train_toy("dpsgd", x, epsilon=ctx.epsilon)
        ctx.model_dir.mkdir(parents=True, exist_ok=True)
        torch.save(model.state_dict(), ctx.model_dir / "model.pt")
        return ledger


@pytest.fixture()
def toy_spec(paper_config, tmp_path, monkeypatch):
    from dpvae.data.registry import prepare_dataset
    from dpvae.methods.registry import METHODS
    from dpvae.runs import Run, run_spec
    from dpvae.runspec import Audit

    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(METHODS._entries, "toy-private", _ToyPrivate())
    prepare_dataset("pinwheel", tmp_path / "data")
    spec = run_spec(paper_config, Run("pinwheel", "real", "inf", 0))
    return replace(
        spec,
        data_root=str(tmp_path / "data"),
        params={},
        method="toy-private",
        private=True,
        epsilon=1.0,
        audit=Audit(100),
    )


def test_the_train_stage_writes_audit_json_and_the_metric_reads_it(toy_spec) -> None:
    from dpvae import stages

    stages.train(toy_spec)
    run = Path(toy_spec.run)
    record = json.loads(audit_file(run).read_text())
    ledger = json.loads(ledger_file(run).read_text())
    assert record["epsilon_claimed"] == ledger["epsilon"] <= 1.0
    assert record["canaries"] == 100 and len(record["scores"]["sum"]) == 100 and record["lower"] <= 1.0
    out = stages.evaluate(run, "canary_audit", {}, run / "metrics" / "canary_audit.json")
    rows = {r["metric"]: r["value"] for r in json.loads(out.read_text())["rows"]}
    assert rows["eps_lower"] == record["lower"] and rows["eps_claimed"] == ledger["epsilon"]
    assert rows["canaries"] == 100 and rows["noise_multiplier"] > 0


def test_only_private_runs_are_audited(toy_spec) -> None:
    from dpvae import stages
    from dpvae.errors import DataError

    with pytest.raises(DataError, match="only a private run"):
        stages.train(replace(toy_spec, private=False, epsilon=None))
