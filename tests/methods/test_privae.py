"""PriVAE's methods beyond the shared contract: resumable training, calibration and ledgers, refused settings."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from dpvae import stages
from dpvae.errors import ConfigError
from dpvae.files import json_text
from dpvae.methods import checkpoint as checkpoint_module
from dpvae.methods.privae import PriVAE, PriVAEParams, accounting
from dpvae.paths import checkpoint_file, ledger_file, model_path
from dpvae.privacy.accounting import abadi_kappa
from dpvae.runs import prepared_facts, released_ledger
from dpvae.runspec import RunSpec

PINWHEEL = {
    "engine": "termwise",
    "optimizer": "sgd",
    "lr": 0.01,
    "batch_size": 20,
    "groups": 1,
    "mc_samples": 4,
    "epochs": 3,
    "latent_dim": 2,
    "prior": "mog",
    "beta": 0.0,
    "divergence": "kl_pq",
    "alpha": 1.0,
    "clip_sample": 0.05,
    "clip_batch": 0.0005,
    "kappa": "paper",
}


def _spec(
    tmp_path: Path, data: Path, params: dict, name: str = "run", method: str = "privae", epsilon: float | None = 10.0
) -> RunSpec:
    return RunSpec.standalone(
        "pinwheel/test/eps10/seed0",
        str(tmp_path / name),
        scale="test",
        dataset="pinwheel",
        variant=name,
        method=method,
        params=params,
        epsilon=epsilon,
        delta=1e-5,
        device="cpu",
        data_root=str(data.parents[1]),
    )


@pytest.fixture()
def pinwheel(prepared_from_mirror) -> Path:
    return prepared_from_mirror("pinwheel")


def test_a_resumed_privae_run_ends_with_the_same_model_and_ledger(tmp_path, pinwheel, monkeypatch) -> None:
    whole = _spec(tmp_path, pinwheel, PINWHEEL, "whole")
    stages.train(whole)

    broken = _spec(tmp_path, pinwheel, PINWHEEL, "broken")
    saves = []
    original_save = checkpoint_module.Checkpoint.save

    def save_then_die(self, state):
        original_save(self, state)
        saves.append(state["step"])
        raise KeyboardInterrupt  # the job is killed right after its checkpoint

    monkeypatch.setattr(checkpoint_module.Checkpoint, "due", lambda self, step: step == 29)
    monkeypatch.setattr(checkpoint_module.Checkpoint, "save", save_then_die)
    with pytest.raises(KeyboardInterrupt):
        stages.train(broken)
    assert saves == [30] and checkpoint_file(Path(broken.run)).is_file()
    monkeypatch.setattr(checkpoint_module.Checkpoint, "due", lambda self, step: False)
    stages.train(broken)  # resumes at step 30 (same spec, same key)
    a = torch.load(model_path(Path(whole.run)) / "model.pt")
    b = torch.load(model_path(Path(broken.run)) / "model.pt")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    ledgers = [json.loads(ledger_file(Path(s.run)).read_text()) for s in (whole, broken)]
    assert ledgers[0]["epsilon"] == ledgers[1]["epsilon"]
    assert not checkpoint_file(Path(broken.run)).exists()


def test_termwise_noise_is_kappa_times_ordinary_sigma() -> None:
    params = PriVAEParams(**{**PINWHEEL, "batch_size": 256, "groups": 16, "clip_batch": 0.005})
    rate, steps = 256 / 60000, 2344
    paper = accounting.termwise_noise(params, 10.0, 1e-5, rate, steps)
    assert paper.sigma == pytest.approx(0.5427, rel=1e-3)  # docs/papers.md §1.4 [computed]
    assert paper.factor == pytest.approx(abadi_kappa(1e-5), rel=1e-6)
    tight = accounting.termwise_noise(PriVAEParams(**{**params.to_dict(), "kappa": "tight"}), 10.0, 1e-5, rate, steps)
    c1, c2 = 0.05 / 256, 0.005 / 16
    assert tight.factor == pytest.approx((c1 + 2 * c2) / math.hypot(c1, c2), rel=1e-6)
    plain = accounting.termwise_noise(
        PriVAEParams(**{**params.to_dict(), "clip_batch": 0.0, "divergence": "none"}), 10.0, 1e-5, rate, steps
    )
    assert plain.factor == 1.0 and plain.noise_multiplier == plain.sigma


@pytest.mark.parametrize("engine", ["micro", "batch"])
def test_aggregation_baselines_under_the_sound_calibration_spend_the_target_soundly(tmp_path, pinwheel, engine):
    """Micro/batch aggregation under a sound κ spend the target by the sound ledger, and that ledger is the one
    planned before training (the contract checks the term-wise engine the same way)."""
    params = {**PINWHEEL, "engine": engine, "clip": 0.0002, "kappa": "tight", "epochs": 1}
    spec = _spec(tmp_path, pinwheel, params, f"{engine}-sound")
    stages.train(spec)
    ledger = json.loads(ledger_file(Path(spec.run)).read_text())
    sound = ledger["sound"]
    assert sound["epsilon"] == pytest.approx(10.0, rel=1e-4) and sound["epsilon"] <= 10.0 * (1 + 1e-9)
    assert ledger["paper"]["epsilon"] < 0.5 * sound["epsilon"]  # doubled noise on the paper's terms
    planned = PriVAE().planned_ledger(PriVAEParams(**params), spec, prepared_facts(spec))  # as the contract's
    released = released_ledger(planned, None, spec)  # as the train stage releases it (its randomness named)
    assert json_text(released.to_dict()) == ledger_file(Path(spec.run)).read_text()


@pytest.mark.parametrize(
    "change,match",
    [
        ({"clip_batch": 0.0}, "clip_batch"),  # a divergence no term carries
        ({"divergence": "none", "alpha": 0.0}, "clip_batch"),  # C2 > 0 without a divergence
        ({"norm": "batch"}, "BatchNorm|batch"),
    ],
)
def test_inconsistent_private_settings_are_refused(change, match) -> None:
    with pytest.raises(ConfigError, match=match):
        accounting.check_consistent(PriVAEParams(**{**PINWHEEL, **change}))


def test_a_prior_that_does_not_fit_the_data_is_refused(tmp_path, pinwheel) -> None:
    spec = _spec(tmp_path, pinwheel, {**PINWHEEL, "prior": "sparse"}, "wrong-prior")
    with pytest.raises(ConfigError, match="mixture prior"):
        stages.train(spec)


def test_a_table_run_the_mlp_vae_cannot_train_is_refused_before_training():
    """[d] records get the pinwheel MLP VAE, whose mixture prior is 2-dimensional: a table run with another prior or
    latent_dim is refused by validation, naming the key (it used to fail 17 s into training, issue 64)."""
    from dpvae.data.declared import Facts
    from dpvae.methods.registry import METHODS

    privae, table = METHODS.get("privae"), Facts((5,), 180, 20, 3)
    keys = {key for key, _ in privae.data_errors(privae.Params(prior="mog"), table)}
    assert keys == {"latent_dim"}
    assert {key for key, _ in privae.data_errors(privae.Params(), table)} == {"prior", "latent_dim"}
    assert privae.data_errors(privae.Params(prior="mog", latent_dim=2), table) == []
