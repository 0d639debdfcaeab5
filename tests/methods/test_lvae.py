"""LVAE's network, its two Lipschitz decoders, its three training modes and its privacy records."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from dpvae import stages
from dpvae.errors import ConfigError
from dpvae.methods import checkpoint as checkpoint_module
from dpvae.methods.lvae.accounting import CLAIM_FILE
from dpvae.models.lvae_vae import (
    LVAEConvVAE,
    OperatorNormalised,
    chi2_radius,
    decoder_jacobian_norms,
    jacobian_norm_estimate,
)
from dpvae.paths import ledger_file, model_path
from dpvae.runs import experiment_runs, run_spec
from dpvae.runspec import RunSpec


def test_the_network_maps_28x28_images_to_latents_and_back():
    model = LVAEConvVAE(latent_dim=5)
    x = (torch.rand(3, 1, 28, 28) > 0.5).float()
    mu, logvar = model.encode(x)
    assert mu.shape == logvar.shape == (3, 5)
    assert model.decode(mu).shape == (3, 1, 28, 28)  # last transposed conv at stride 1 (A-L1)
    assert model.loss(x, torch.randn(3, 5)).shape == (3,)
    assert model.elbo(x, 2).shape == (3,)


def test_operator_norm_of_a_transposed_conv_is_its_largest_singular_value():
    torch.manual_seed(0)
    layer = torch.nn.ConvTranspose2d(2, 3, 3, 2, 1, output_padding=1)
    wrapped = OperatorNormalised(layer, (2, 5, 5), scale=1.0)
    wrapped.power_step(200)
    basis = torch.eye(2 * 5 * 5).reshape(-1, 2, 5, 5)
    matrix = wrapped._linear(basis, layer.weight.detach()).reshape(50, -1).T
    exact = torch.linalg.matrix_norm(matrix, ord=2)
    assert wrapped._linear(wrapped.v, layer.weight).norm().item() == pytest.approx(exact.item(), rel=1e-4)
    reshaped = torch.linalg.matrix_norm(layer.weight.detach().reshape(2, -1), ord=2)
    assert reshaped <= exact + 1e-6  # the kernel matrix alone would under-normalise


def test_the_spectrally_normalised_decoder_is_L_lipschitz():
    torch.manual_seed(1)
    model = LVAEConvVAE(latent_dim=4, spectral_norm=True, lipschitz=3.0)
    for module in model.decoder:
        if isinstance(module, OperatorNormalised):
            module.power_step(100)
    model.train()
    model.decode(torch.randn(2, 4))  # stores sigma from the converged vectors
    model.eval()
    norms = decoder_jacobian_norms(model.decoder, torch.randn(32, 4))
    assert (norms <= 3.0 * 1.001).all()


def test_power_iteration_reaches_the_exact_jacobian_spectral_norm():
    torch.manual_seed(2)
    model = LVAEConvVAE(latent_dim=4)
    z = torch.randn(6, 4)
    exact = decoder_jacobian_norms(model.decoder, z)
    estimate = jacobian_norm_estimate(model.decoder, z, torch.randn(6, 4), iterations=60)
    assert torch.allclose(estimate.detach(), exact, rtol=1e-3)
    assert (jacobian_norm_estimate(model.decoder, z, torch.randn(6, 4), 0).detach() <= exact * (1 + 1e-5)).all()


def test_chi2_radius():
    z = np.random.default_rng(0).normal(size=(200_000, 3))
    assert np.mean(np.linalg.norm(z, axis=1) <= chi2_radius(3, 0.05)) == pytest.approx(0.95, abs=0.003)


# -- training through the train stage --------------------------------------------------------------


@pytest.fixture()
def lvae_spec(smoke_config, prepared_from_mirror, tmp_path, monkeypatch):
    data = prepared_from_mirror("mnist-lvae")
    monkeypatch.chdir(tmp_path)

    def spec(variant: str, **params) -> RunSpec:
        run = next(r for r in experiment_runs(smoke_config, "lvae_mia") if r.variant == variant)
        s = run_spec(smoke_config, run)
        merged = {**s.params, "max_train": 64, "epochs": 1, "batch_size": 16, "lipschitz_probes": 8, **params}
        return replace(s, params=merged, data_root=str(Path(data).parents[1]), device="cpu")

    return spec


def test_the_subsample_keeps_the_planted_outlier(lvae_spec):
    ctx = stages.run_context(lvae_spec("lvae-vae", max_train=10))
    row = ctx.data.meta["outlier_index"]
    assert len(ctx.data.train.y) == 10 and ctx.data.train.y[row] == -1 and ctx.data.train.x[row].min() == 1


def test_vae_dpsgd_writes_a_ledger_within_its_target(lvae_spec):
    spec = lvae_spec("lvae-dpsgd")
    stages.train(spec)
    ledger = json.loads(ledger_file(Path(spec.run)).read_text())
    assert ledger["epsilon"] <= spec.epsilon == 1
    (mechanism,) = ledger["mechanisms"]
    assert mechanism["steps"] == 4 and mechanism["sample_rate"] == 16 / 64 and mechanism["sensitivity"] == 1.0
    assert ledger["headline"] == "paper" and ledger["paper"]["adjacency"] == "add/remove-one"
    assert ledger["sound"]["adjacency"] == "replace-one" and ledger["sound"]["mechanisms"] == ledger["mechanisms"]
    assert ledger["sound"]["epsilon"] > ledger["paper"]["epsilon"] == ledger["epsilon"]


def test_dp_sgd_with_a_lipschitz_constraint_is_refused(lvae_spec):
    with pytest.raises(ConfigError, match="constraint"):
        stages.train(lvae_spec("lvae-dpsgd", constraint="gradient_penalty"))


@pytest.mark.parametrize("constraint", ["gradient_penalty", "spectral_norm"])
def test_lvae_writes_a_claim_that_says_it_is_no_guarantee(lvae_spec, constraint):
    spec = lvae_spec("lvae-lipschitz", constraint=constraint, lipschitz=5.0)
    stages.train(spec)
    run = Path(spec.run)
    assert json.loads(ledger_file(run).read_text())["epsilon"] is None
    claim = json.loads((model_path(run) / CLAIM_FILE).read_text())
    assert "NOT a differential-privacy guarantee" in claim["kind"] and claim["private"] is False
    assert claim["accounting"] == "paper" and claim["sound"] is None and claim["not_dp"]
    assert claim["R_x"] == pytest.approx(28.0)
    c = 28.0**2 + 2 * 5.0 * chi2_radius(16, spec.delta) * 28.0
    assert claim["claimed_epsilon"] == pytest.approx(2 * c)
    assert any("Bernoulli" in v for v in claim["violations"])
    assert claim["measured_lipschitz"]["probes"] == 8


def test_the_gradient_penalty_pulls_the_jacobian_norm_towards_L(lvae_spec):
    free = lvae_spec("lvae-vae", epochs=3)
    stages.train(free)
    penalised = lvae_spec("lvae-lipschitz", epochs=3, lipschitz=0.5, gp_weight=1000.0)
    stages.train(penalised)
    measured = json.loads((model_path(Path(penalised.run)) / CLAIM_FILE).read_text())["measured_lipschitz"]
    from dpvae.methods.lvae import LVAE

    model = LVAE().load(stages.run_context(free))
    z = torch.randn(8, 16, generator=torch.Generator().manual_seed(0))
    assert measured["median"] < float(decoder_jacobian_norms(model.decoder, z).median())


def test_an_interrupted_private_run_resumes_to_the_same_model(lvae_spec, monkeypatch, tmp_path):
    spec = lvae_spec("lvae-dpsgd", epochs=2)
    whole = Path(stages.train(spec))
    expected = torch.load(whole / "model.pt", weights_only=True)
    ledger = ledger_file(Path(spec.run)).read_text()

    resumed = replace(spec, run=str(tmp_path / "resumed"))
    saves = []
    original = checkpoint_module.Checkpoint.save

    def save_then_die(self, state):
        original(self, state)
        saves.append(state["step"])
        if len(saves) == 3:
            raise KeyboardInterrupt

    monkeypatch.setattr(checkpoint_module.Checkpoint, "due", lambda self, step: True)
    monkeypatch.setattr(checkpoint_module.Checkpoint, "save", save_then_die)
    with pytest.raises(KeyboardInterrupt):
        stages.train(resumed)
    monkeypatch.setattr(checkpoint_module.Checkpoint, "save", original)
    stages.train(resumed)
    got = torch.load(model_path(Path(resumed.run)) / "model.pt", weights_only=True)
    assert all(torch.equal(expected[k], got[k]) for k in expected)
    assert ledger_file(Path(resumed.run)).read_text() == ledger


# -- the empirical audit against the ledger --------------------------------------------------------


def _attack_epsilons(spec: RunSpec) -> dict[str, float]:
    """Both attacks on all 64 training records against 64 test records: their max-over-thresholds ε bounds."""
    run = Path(spec.run)
    found = {}
    for metric, options in [("mc_attack", {"n_synthetic": 256}), ("elbo_attack", {"elbo_samples": 2})]:
        out = stages.evaluate(
            run,
            metric,
            {"n_members": 64, "n_nonmembers": 64, "outlier": "include", **options},
            run / "metrics" / f"{metric}.json",
        )
        rows = {r["metric"]: r["value"] for r in json.loads(out.read_text())["rows"]}
        found[metric] = next(v for k, v in rows.items() if k.endswith("_eps_lower_max"))
    return found


def test_no_attack_proves_more_than_the_dpsgd_ledger(lvae_spec):
    """VAE-DPSGD: no attack's ε lower bound (95 % Clopper-Pearson, best threshold) exceeds the ledger's ε, paper
    or sound. 64 + 64 targets can prove up to ε ≈ 2.8 > 1 (see the next test), so the check is not vacuous."""
    private = lvae_spec("lvae-dpsgd", epochs=4)
    stages.train(private)
    ledger = json.loads(ledger_file(Path(private.run)).read_text())
    assert ledger["epsilon"] <= private.epsilon
    for attack, eps in _attack_epsilons(private).items():
        for name in ("paper", "sound"):
            assert eps <= ledger[name]["epsilon"], f"{attack} proves eps >= {eps:.3f} > the {name} ledger's"


def test_the_audit_catches_a_generator_that_releases_its_training_records(prepared_from_mirror):
    """The same audit at the same sizes proves ε > 1 against a 'generator' whose samples are its 64 training
    images (the MC attack then finds every member at distance 0)."""
    from dpvae.data.store import load_prepared
    from dpvae.eval.mc_attack import mc_scores
    from dpvae.privacy import audit

    data = load_prepared(prepared_from_mirror("mnist-lvae"))
    members, nonmembers = data.train.x[:64].reshape(64, -1), data.test.x[:64].reshape(64, -1)
    scores, _, _ = mc_scores(np.r_[members, nonmembers].astype(np.float64), members)
    assert audit.summary(scores[:64], scores[64:], 1e-5)["eps_lower_max"] > 1
