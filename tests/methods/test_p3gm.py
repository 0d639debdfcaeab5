"""P3GM, PGM, P3GM(AE), VAE and DP-VAE beyond the shared contract: batching schedules, the ledger composed
from the mechanisms' records (checked against the per-paper recipe), the frozen PCA encoder, the switches."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from dpvae import stages
from dpvae.data.store import write_prepared
from dpvae.data.synthetic import build_two_gaussians
from dpvae.errors import ConfigError
from dpvae.methods.p3gm import store
from dpvae.methods.p3gm.accounting import NOT_DP_NONPRIVATE_MEAN, P3GMSetting, p3gm_ledger
from dpvae.methods.p3gm.fit import Schedule
from dpvae.methods.p3gm.store import from_vectors, to_vectors
from dpvae.paths import checkpoint_file, ledger_file, model_path, prepared_dir
from dpvae.privacy.ledger import Mechanism
from dpvae.privacy.mechanisms import dp_em_diagonal_gmm, dp_pca
from support.toy_runs import FEATURES, N_TRAIN, toy_spec, write_toy_dataset


@pytest.fixture(scope="module")
def data_root(tmp_path_factory) -> Path:
    return write_toy_dataset(tmp_path_factory.mktemp("p3gm-data"))


spec_for = toy_spec


def test_schedules_count_steps_as_the_accountant_and_the_reference_loader_do():
    poisson = Schedule("poisson", n=63000, batch_size=300, epochs=4)
    assert poisson.steps == 840 and poisson.sample_rate == pytest.approx(300 / 63000)
    assert poisson.epoch_ends() == [210, 420, 630, 840]
    code = Schedule("code", n=1050, batch_size=100, epochs=2.5)  # 10 fixed batches, 9 steps per "epoch"
    assert code.n_batches == 10 and code.steps == 23 and code.epoch_ends() == [9, 18, 23]
    generator = torch.Generator().manual_seed(0)
    for _ in range(20):
        rows = code.batch(generator)
        assert len(rows) == 100 and rows[0] % 100 == 0 and torch.equal(rows, torch.arange(rows[0], rows[0] + 100))
    sizes = [len(poisson.batch(generator)) for _ in range(200)]
    assert 270 < np.mean(sizes) < 330 and len(set(sizes)) > 5  # Poisson: random batch sizes around B


def test_record_vectors_round_trip_with_the_one_hot_label():
    x, y = np.random.default_rng(1).random((5, 2, 3)).astype(np.float32), np.array([0, 2, 1, 2, 0])
    vectors = to_vectors(x, y, 3)
    assert vectors.shape == (5, 9) and np.array_equal(vectors[:, 6:].argmax(1), y)
    back = from_vectors(vectors, (2, 3), 3)
    assert np.array_equal(back["x"], x) and np.array_equal(back["y"], y)


def test_the_ledger_from_the_mechanisms_records_equals_the_recipe():
    """DP-PCA's, DP-EM's and DP-SGD's own records compose to the ε of the per-paper recipe (MNIST setting)."""
    z = np.random.default_rng(0).random((500, 6))
    pca = dp_pca(z, 3, 5.0, np.random.default_rng(1), mean=0.0)
    gmm = dp_em_diagonal_gmm(pca.transform(z), 1, 20, 100.0, np.random.default_rng(2), account_initial_step=False)
    sgd = Mechanism("dpsgd", 1.4, 300 / 63000, 840, 1.0)
    ledger = p3gm_ledger([pca.mechanism, *gmm.mechanisms, sgd], 1e-5, 20, 1, 1.0)
    setting = P3GMSetting(n_train=63000, batch_size=300, epochs=4, sgd_sigma=1.4, pca_sigma=5.0, centring="zero")
    assert ledger.paper.epsilon == pytest.approx(setting.ledger().paper.epsilon, rel=1e-9)
    assert ledger.paper.epsilon == pytest.approx(0.986, abs=5e-4)  # docs/papers.md §3.4 [computed]
    assert ledger.sound.epsilon == pytest.approx(setting.ledger().sound.epsilon, rel=1e-9)
    # with the DP centring mean (rows clipped to R = sqrt(d), sigma_m = 20) the recipe agrees too
    dp = dp_pca(z, 3, 5.0, np.random.default_rng(1), mean="dp", mean_noise_multiplier=20.0, mean_clip=6**0.5)
    with_mean = p3gm_ledger([*dp.mechanisms, *gmm.mechanisms, sgd], 1e-5, 20, 1, None)
    recipe = P3GMSetting(n_train=63000, batch_size=300, epochs=4, sgd_sigma=1.4, pca_sigma=5.0, mean_clip=6**0.5)
    assert with_mean.paper.epsilon == pytest.approx(recipe.ledger().paper.epsilon, rel=1e-9)
    assert with_mean.sound.epsilon == pytest.approx(recipe.ledger().sound.epsilon, rel=1e-9)


def test_p3gm_trains_with_a_frozen_pca_encoder_and_meets_its_target(data_root, tmp_path):
    spec = spec_for(data_root, tmp_path)
    stages.train(spec)
    ledger = json.loads(ledger_file(tmp_path / "run").read_text())
    assert ledger["epsilon"] <= 1.0 and ledger["epsilon"] == pytest.approx(1.0, abs=1e-6)  # auto: calibrated
    names = [m["name"] for m in ledger["mechanisms"]]
    assert names == ["dp_pca.mean", "dp_pca", "dp_em.weights", "dp_em.means", "dp_em.variances", "dpsgd"]
    assert ledger["headline"] == "paper" and ledger["sound"]["epsilon"] > ledger["epsilon"]
    assert "calibrated" in ledger["notes"]
    model, info = store.load_model(model_path(tmp_path / "run"))
    ctx = stages.run_context(spec)
    vectors = to_vectors(ctx.data.train.x, ctx.data.train.y, 2)
    # the encoder mean is the released PCA projection: orthonormal columns, untouched by training
    weight = model.pca.weight.detach().numpy()
    assert np.allclose(weight @ weight.T, np.eye(weight.shape[0]), atol=1e-5)
    assert not model.pca.weight.requires_grad
    assert info["arch"]["latent_dim"] == min(30, vectors.shape[1])
    samples = dict(np.load(stages.sample(spec.run, 40)))
    assert samples["x"].shape == (40, FEATURES) and set(np.unique(samples["y"])) <= {0, 1}


def test_a_configured_sigma_that_overspends_is_raised_and_noted(data_root, tmp_path):
    stages.train(spec_for(data_root, tmp_path, sigma_sgd=0.3))
    ledger = json.loads(ledger_file(tmp_path / "run").read_text())
    assert ledger["epsilon"] <= 1.0
    assert "raised from the configured 0.3" in ledger["notes"]
    assert [m for m in ledger["mechanisms"] if m["name"] == "dpsgd"][0]["noise_multiplier"] > 0.3


def test_the_codes_fixed_batches_are_accounted_soundly_as_a_fixed_partition(data_root, tmp_path):
    stages.train(spec_for(data_root, tmp_path, batching="code", sigma_sgd=2.0))
    ledger = json.loads(ledger_file(tmp_path / "run").read_text())
    paper_sgd = [m for m in ledger["paper"]["mechanisms"] if m["name"] == "dpsgd"][0]
    sound_sgd = [m for m in ledger["sound"]["mechanisms"] if m["name"] == "dpsgd"][0]
    assert paper_sgd["sampling"] == "poisson" and paper_sgd["steps"] == 2 * (N_TRAIN // 50 - 1)
    assert (
        sound_sgd["sampling"] == "fixed-partition"
        and sound_sgd["noise_multiplier"] == paper_sgd["noise_multiplier"] / 2
    )


def test_the_nonprivate_centring_mean_is_marked_not_dp(data_root, tmp_path):
    stages.train(spec_for(data_root, tmp_path, pca_mean="nonprivate"))
    ledger = json.loads(ledger_file(tmp_path / "run").read_text())
    assert ledger["not_dp"] == NOT_DP_NONPRIVATE_MEAN and "sound" not in ledger
    assert "dp_pca.mean" not in [m["name"] for m in ledger["mechanisms"]]


def test_a_private_run_without_noise_is_refused_naming_the_key(data_root, tmp_path):
    with pytest.raises(ConfigError, match="sigma_pca"):
        stages.train(spec_for(data_root, tmp_path, sigma_pca=0.0))


def test_pgm_and_the_autoencoder_variant(data_root, tmp_path):
    from dpvae.models.mlp_vae import MLPVAE

    pgm = spec_for(
        data_root,
        tmp_path / "pgm",
        private=False,
        sigma_pca=0.0,
        sigma_em=0.0,
        sigma_sgd=0.0,
        clip=None,
        pca_mean="nonprivate",
    )
    stages.train(pgm)
    assert json.loads(ledger_file(tmp_path / "pgm" / "run").read_text())["private"] is False
    ae = spec_for(data_root, tmp_path / "ae", encoder_variance="zero", record_every_epoch=True)
    stages.train(ae)
    model, info = store.load_model(model_path(tmp_path / "ae" / "run"))
    # σ_φ's head (fc1, fc22) is outside the trained model: still the initial weights the run drew
    torch.manual_seed(stages.run_context(ae).seed_for("global"))
    arch = info["arch"]
    initial = MLPVAE(
        arch["data_dim"],
        arch["latent_dim"],
        arch["hidden"],
        pca_components=torch.zeros(arch["data_dim"], arch["latent_dim"]),
    )
    assert torch.equal(model.fc1.weight, initial.fc1.weight) and torch.equal(model.fc22.bias, initial.fc22.bias)
    assert not torch.equal(model.fc4.weight, initial.fc4.weight)
    # kept: the decoder (the PCA is frozen) after both epochs and at iterations spaced in log scale from the first
    snapshots = store.load_snapshots(model_path(tmp_path / "ae" / "run"))
    steps = math.ceil(2 * N_TRAIN / 50)
    assert list(snapshots) == Schedule("poisson", N_TRAIN, 50, 2).snapshot_steps()
    assert {1, steps // 2, steps} <= set(snapshots) and len(snapshots) > 2
    assert set(snapshots[steps]) == {"fc3.weight", "fc3.bias", "fc4.weight", "fc4.bias"}


def test_dp_vae_ledger_is_its_engine_record_and_vae_is_nonprivate(data_root, tmp_path):
    dp = spec_for(data_root, tmp_path / "dp", method="dp-vae", sigma_sgd=1.0)
    stages.train(dp)
    ledger = json.loads(ledger_file(tmp_path / "dp" / "run").read_text())
    (record,) = ledger["mechanisms"]
    assert record["name"] == "dpsgd" and record["steps"] == math.ceil(2 * N_TRAIN / 50)
    assert record["sample_rate"] == pytest.approx(50 / N_TRAIN) and ledger["epsilon"] <= 1.0
    vae = spec_for(data_root, tmp_path / "vae", method="vae-mlp", private=False)
    stages.train(vae)
    samples = dict(np.load(stages.sample(vae.run, 10)))
    assert samples["x"].shape == (10, FEATURES)


def test_a_resumed_p3gm_run_ends_with_the_same_model(data_root, tmp_path, monkeypatch):
    """Kill the DP-SGD loop after a checkpoint; the resumed run's weights equal an uninterrupted run's."""
    from dpvae.methods.checkpoint import Checkpoint

    whole = spec_for(data_root, tmp_path / "whole")
    stages.train(whole)
    expected = torch.load(model_path(Path(whole.run)) / store.WEIGHTS)

    spec = replace(spec_for(data_root, tmp_path / "resumed"), run_id=whole.run_id)  # same id => same seeds
    original_batch, calls = Schedule.batch, []

    def dying_batch(self, generator):
        calls.append(1)
        if len(calls) == 10:
            raise KeyboardInterrupt("killed")
        return original_batch(self, generator)

    monkeypatch.setattr(Checkpoint, "due", lambda self, step: step == 5)
    monkeypatch.setattr(Schedule, "batch", dying_batch)
    with pytest.raises(KeyboardInterrupt):
        stages.train(spec)
    assert checkpoint_file(Path(spec.run)).is_file()
    monkeypatch.undo()
    stages.train(spec)
    resumed = torch.load(model_path(Path(spec.run)) / store.WEIGHTS)
    assert expected.keys() == resumed.keys()
    for key in expected:
        assert torch.equal(expected[key], resumed[key]), key


def test_the_mixture_prior_keeps_the_classes_that_n01_draws_lose_at_small_d(tmp_path):
    """Fig. 6 at d = 5 (docs/p3gm.md): the PCA codes are not whitened, the classes sit at about ±sqrt(d) on the
    first one, so N(0, I) draws land between them; the DP-EM mixture (the paper's prior) covers both."""
    prepared = build_two_gaussians(None, 0, dim=5, n_per_class=2000)
    write_prepared(prepared_dir(tmp_path, "toy"), prepared.train, prepared.test, prepared.meta)
    gaps = {}
    for prior in ("mog", "normal"):
        spec = spec_for(tmp_path, tmp_path / prior, sampling_prior=prior, batch_size=100, pretrain_steps=200)
        stages.train(spec)
        samples = dict(np.load(stages.sample(spec.run, 2000)))
        gaps[prior] = samples["x"][samples["y"] == 1].mean() - samples["x"][samples["y"] == 0].mean()
    # the real data's gap between the class means is 2; measured: mixture 0.37, N(0, I) 0.04
    assert gaps["mog"] > 0.2 and abs(gaps["normal"]) < gaps["mog"] / 3, gaps


def test_auto_pretraining_takes_the_steps_of_the_runs_training_size(data_root, tmp_path, monkeypatch):
    """`pretrain_steps: auto` pre-trains by its rule at the run's N after `max_train` (issue 64): 100 passes'
    worth of batches of 100 over 150 records."""
    from dpvae.methods.p3gm import train as p3gm_train

    taken, pretrain = [], p3gm_train._pretrain
    monkeypatch.setattr(p3gm_train, "_pretrain", lambda *a: taken.append(a[4]) or pretrain(*a))
    stages.train(spec_for(data_root, tmp_path, pretrain_steps="auto", max_train=150, epochs=1))
    assert taken == [150]
