"""PriVAE's model-only metrics: Hoyer sparsity, the clustered share, and the metric functions on saved models."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from dpvae.eval.base import EvalContext
from dpvae.eval.hoyer_sparsity import HoyerOptions, hoyer_sparsity, hoyer_sparsity_of
from dpvae.eval.iwae_loglik import IWAEOptions, iwae_loglik
from dpvae.eval.latent_mmd import LatentMMDOptions, latent_mmd
from dpvae.eval.pinwheel_scatter import PinwheelScatterOptions, clustered_share, pinwheel_scatter
from dpvae.methods.base import RunContext
from dpvae.models.pinwheel_vae import MOG_MEANS, PinwheelVAE
from dpvae.models.vae_files import save_vae
from dpvae.paths import model_path
from dpvae.runspec import RunSpec


def _mathieu_sparsity(zs: torch.Tensor) -> float:
    """Mathieu et al.'s compute_sparsity(zs, norm=True) (src/metrics.py), in torch."""
    d = zs.size(-1)
    zs = zs / zs.std(0)
    l1_l2 = (zs.abs().sum(-1) / zs.pow(2).sum(-1).sqrt()).mean()
    return float((math.sqrt(d) - l1_l2) / (math.sqrt(d) - 1))


def test_hoyer_sparsity_equals_the_reference_code_and_spans_zero_to_one() -> None:
    rng = np.random.default_rng(0)
    means = rng.standard_normal((200, 10)) * rng.exponential(size=(200, 10))
    assert hoyer_sparsity_of(means) == pytest.approx(_mathieu_sparsity(torch.as_tensor(means)), rel=1e-9)
    one_hot = np.eye(10)[rng.integers(10, size=500)]
    assert hoyer_sparsity_of(one_hot) == pytest.approx(1.0)  # one active unit per record
    dense = np.where(rng.random((500, 10)) < 0.5, 1.0, -1.0)
    assert hoyer_sparsity_of(dense) == pytest.approx(0.0, abs=0.02)  # all units equally active


def test_clustered_share_takes_the_best_assignment() -> None:
    classes = np.repeat(np.arange(4), 25)
    assert clustered_share((classes + 1) % 4, classes, 4) == 1.0  # any relabelling is a perfect fit
    assert clustered_share(np.zeros(100, dtype=int), classes, 4) == 0.25  # one cluster for all arms
    mixed = (classes + 1) % 4
    mixed[:5] = 3  # 5 of arm 0 leave its cluster
    assert clustered_share(mixed, classes, 4) == 0.95


def _context(model, tmp_path: Path, options, x_test: np.ndarray, y_test: np.ndarray) -> EvalContext:
    run_dir = tmp_path / "run"
    save_vae(model, model_path(run_dir))
    spec = RunSpec.standalone("test/run", run_dir, device="cpu")
    run = RunContext(spec, run_dir)
    split = SimpleNamespace(x=x_test, y=y_test)
    run.__dict__["data"] = SimpleNamespace(test=split, train=split)  # cached_property: no prepared set
    return EvalContext(run, options, run_dir / "metrics")


def test_pinwheel_scatter_clusters_an_encoder_that_maps_arms_to_components(tmp_path) -> None:
    torch.manual_seed(0)
    model = PinwheelVAE()
    with torch.no_grad():  # an encoder whose mean is the input itself, points placed at the prior components
        model.enc.weight.zero_()
        model.enc.bias.zero_()
        model.enc.weight[:2] = torch.eye(2)
        model.enc.weight[2:4] = -torch.eye(2)
        model.enc_mu.weight.zero_()
        model.enc_mu.bias.zero_()
        model.enc_mu.weight[:, :2] = torch.eye(2)
        model.enc_mu.weight[:, 2:4] = -torch.eye(2)
    y = np.repeat(np.arange(4), 10)
    x = (np.asarray(MOG_MEANS)[(y + 2) % 4] + 0.05 * np.random.default_rng(0).standard_normal((40, 2))).astype(
        np.float32
    )
    ctx = _context(model, tmp_path, PinwheelScatterOptions(), x, y)
    rows = {r["metric"]: r["value"] for r in pinwheel_scatter(ctx)}
    assert rows["pinwheel_clustered"] == 1.0 and rows["pinwheel_recon_error"] > 0
    with np.load(ctx.out_dir / "pinwheel_scatter.npz") as saved:
        assert saved["recon"].shape == saved["latent_mean"].shape == (40, 2)
        np.testing.assert_allclose(saved["latent_mean"], x, atol=1e-6)


def test_metric_functions_on_a_saved_model(tmp_path) -> None:
    torch.manual_seed(1)
    model = PinwheelVAE()
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((30, 2)).astype(np.float32), rng.integers(4, size=30)
    rows = iwae_loglik(_context(model, tmp_path, IWAEOptions(k=50, batch_size=7, max_test=20), x, y))
    values = {r["metric"]: r["value"] for r in rows}
    assert values["iwae_test_records"] == 20 and values["iwae_k"] == 50 and math.isfinite(values["iwae_loglik"])
    with torch.no_grad():  # IWAE(K) >= the ELBO on average: compare with K = 1 on the same records
        elbo = iwae_loglik(_context(model, tmp_path, IWAEOptions(k=1, max_test=20), x, y))[0]["value"]
    assert values["iwae_loglik"] > elbo
    mmd = latent_mmd(_context(model, tmp_path, LatentMMDOptions(batch_size=10), x, y))
    values = {r["metric"]: r["value"] for r in mmd}  # the batch MMD and the same per test record
    assert set(values) == {"latent_mmd", "latent_mmd_per_record"} and math.isfinite(values["latent_mmd"])
    sparsity = hoyer_sparsity(_context(model, tmp_path, HoyerOptions(), x, y))[0]["value"]
    assert 0 <= sparsity <= 1
