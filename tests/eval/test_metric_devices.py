"""Every torch metric on the run's device: on the CPU bit for bit what the code computed before it moved to the
device (a reference copy of that code, `_old_*`, computes the expected values), on CUDA the same up to float
rounding (`RTOL`) or, for trained classifiers, statistically (`ACCURACY_ATOL`).

The `cuda` cases are marked `gpu` and skip where there is no CUDA device."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from dpvae.eval.base import EvalContext
from dpvae.methods.base import RunContext
from dpvae.models import precision
from dpvae.models.conv_vae import ConvVAE
from dpvae.models.pinwheel_vae import PinwheelVAE
from dpvae.models.vae_files import save_vae
from dpvae.paths import model_path
from dpvae.runspec import RunSpec

CUDA = pytest.param(
    "cuda", marks=[pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")]
)
DEVICES = ["cpu", CUDA]
#: CUDA against the CPU for computations that are the same up to float rounding (IEEE fp32 on both): the metrics
#: here reduce at most ~1e3 float32 terms per value (a 32x32 image's likelihood, a latent mean), exact to
#: γ_n ≈ 1e3·u ≈ 6e-5 relative (u = 2^-24, tests/support/tolerances.py) in any summation order. Not measured as a
#: spread here (no CUDA device; the cases passed on one H200, benchmarks/measured/h200-2026-11-26/tests.log); on
#: the CPU the same tests compare bit for bit
RTOL = 1e-4
#: trained classifiers on CUDA (same initial weights and batch orders): rounding may flip a few predictions (3 of
#: 30 allowed); networks with dropout draw other masks there and are compared where both learn fully
ACCURACY_ATOL = 0.1


def _same(got: float, expected: float, device: str) -> None:
    """Bit for bit on the CPU, to float rounding elsewhere."""
    if device == "cpu":
        assert got == expected
    else:
        assert got == pytest.approx(expected, rel=RTOL, abs=1e-6)


def _context(model: torch.nn.Module, tmp_path: Path, device: str, options, x: np.ndarray, y: np.ndarray) -> EvalContext:
    run_dir = tmp_path / "run"
    save_vae(model, model_path(run_dir))
    run = RunContext(RunSpec.standalone("test/run", run_dir, device=device), run_dir)
    split = SimpleNamespace(x=x, y=y)
    run.__dict__["data"] = SimpleNamespace(test=split, train=split)  # cached_property: no prepared set
    return EvalContext(run, options, run_dir / "metrics")


def _conv_vae() -> tuple[ConvVAE, np.ndarray, np.ndarray]:
    torch.manual_seed(0)
    model = ConvVAE(latent_dim=3, base_channels=4, spike_weight=0.5).eval()
    rng = np.random.default_rng(0)
    return model, rng.random((12, 1, 32, 32)).astype(np.float32), rng.integers(3, size=12)


# -- PriVAE's model-only metrics ---------------------------------------------------------------------


def _old_iwae(model, x: np.ndarray, k: int, batch_size: int, generator: torch.Generator) -> float:
    """eval/iwae_loglik.py before the device change (CPU model, CPU tensors)."""
    from dpvae.eval.iwae_loglik import CHUNK

    total = 0.0
    with torch.no_grad():
        for start in range(0, len(x), batch_size):
            records = torch.as_tensor(x[start : start + batch_size])
            parts = []
            for first in range(0, k, CHUNK):
                noise = torch.randn(len(records), min(CHUNK, k - first), model.latent_dim, generator=generator)
                parts.append(model.log_weights(records, noise))
            total += float((torch.logsumexp(torch.cat(parts, 1), 1) - math.log(k)).sum())
    return total / len(x)


@pytest.mark.parametrize("device", DEVICES)
def test_iwae_on_the_device(tmp_path, device):
    from dpvae.eval.iwae_loglik import CHUNK, IWAEOptions, iwae_loglik

    model, x, y = _conv_vae()
    options = IWAEOptions(k=CHUNK + 2, batch_size=2, max_test=3)  # two noise chunks, a partial batch
    ctx = _context(model, tmp_path, device, options, x, y)
    with precision.ieee_fp32():
        rows = {r["metric"]: r["value"] for r in iwae_loglik(ctx)}
    expected = _old_iwae(model, x[:3], options.k, 2, ctx.run.torch_generator("iwae", "cpu"))
    _same(rows["iwae_loglik"], expected, device)


def _old_latent_mmd(model, x: np.ndarray, size: int, generator: torch.Generator) -> float:
    """eval/latent_mmd.py before the device change."""
    from dpvae.models.losses import mmd_dim
    from dpvae.privacy.dpsgd.units import Units

    values = []
    with torch.no_grad():
        for start in range(0, len(x) - size + 1, size):
            mu, std = model.encode(torch.as_tensor(x[start : start + size]))
            z = mu + std * torch.randn(mu.shape, generator=generator)
            values.append(float(mmd_dim(z, model.sample_prior(size, generator), Units.whole_batch(size))[0]))
    return sum(values) / len(values)


@pytest.mark.parametrize("device", DEVICES)
def test_latent_mmd_on_the_device(tmp_path, device):
    from dpvae.eval.latent_mmd import LatentMMDOptions, latent_mmd

    model, x, y = _conv_vae()
    ctx = _context(model, tmp_path, device, LatentMMDOptions(batch_size=4), x, y)
    with precision.ieee_fp32():
        rows = {r["metric"]: r["value"] for r in latent_mmd(ctx)}
    _same(rows["latent_mmd"], _old_latent_mmd(model, x, 4, ctx.run.torch_generator("latent_mmd", "cpu")), device)


@pytest.mark.parametrize("device", DEVICES)
def test_hoyer_sparsity_on_the_device(tmp_path, device):
    from dpvae.eval.hoyer_sparsity import HoyerOptions, hoyer_sparsity, hoyer_sparsity_of

    model, x, y = _conv_vae()
    with precision.ieee_fp32():
        value = hoyer_sparsity(_context(model, tmp_path, device, HoyerOptions(), x, y))[0]["value"]
    with torch.no_grad():  # eval/latent.py's posterior before the device change: one CPU batch here
        expected = hoyer_sparsity_of(model.encode(torch.as_tensor(x))[0].numpy())
    _same(value, expected, device)


@pytest.mark.parametrize("device", DEVICES)
def test_pinwheel_scatter_on_the_device(tmp_path, device):
    from dpvae.eval.pinwheel_scatter import ARTIFACT, PinwheelScatterOptions, pinwheel_scatter

    torch.manual_seed(0)
    model = PinwheelVAE(hidden=16).eval()
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((40, 2)).astype(np.float32), rng.integers(4, size=40)
    ctx = _context(model, tmp_path, device, PinwheelScatterOptions(), x, y)
    rows = {r["metric"]: r["value"] for r in pinwheel_scatter(ctx)}
    generator = ctx.run.torch_generator("pinwheel_scatter", "cpu")
    with torch.no_grad():  # eval/pinwheel_scatter.py before the device change
        mu, std = model.encode(torch.as_tensor(x))
        recon = model.reconstruction(mu + std * torch.randn(mu.shape, generator=generator)).numpy()
    _same(rows["pinwheel_recon_error"], float(np.square(recon - x).sum(1).mean()), device)
    with np.load(ctx.out_dir / ARTIFACT) as saved:
        tolerance = {"rtol": 0, "atol": 0} if device == "cpu" else {"rtol": RTOL, "atol": 1e-6}
        np.testing.assert_allclose(saved["recon"], recon, **tolerance)


# -- FID -----------------------------------------------------------------------------------------------


class _StandInExtractor(torch.nn.Module):
    """torch-fidelity's InceptionV3 interface (uint8 images -> (features [N, 2048],)) on a small seeded net."""

    def __init__(self, name: str, features_list: list[str], feature_extractor_weights_path: str | None = None):
        super().__init__()
        generator = torch.Generator().manual_seed(0)
        self.weight = torch.nn.Parameter(torch.randn(2048, 3 * 8 * 8, generator=generator) / 8, requires_grad=False)

    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor]:
        pooled = torch.nn.functional.adaptive_avg_pool2d(images.float() / 255, 8).flatten(1)
        return (torch.relu(pooled @ self.weight.T),)


def _numpy_statistics(x: np.ndarray) -> dict[str, np.ndarray]:
    """The stand-in's features' mean and covariance by NumPy, in one piece (an independent reference)."""
    from dpvae.eval.fid import to_uint8_rgb

    with torch.no_grad():
        (features,) = _StandInExtractor("", [])(torch.from_numpy(to_uint8_rgb(x)))
    f = features.double().numpy()
    return {"mu": f.mean(0), "sigma": np.cov(f, rowvar=False)}


def _assert_statistics(got: dict, expected: dict, device: str) -> None:
    for key in ("mu", "sigma"):
        if device == "cpu":
            assert np.array_equal(got[key], expected[key]), key
        else:
            scale = np.abs(expected[key]).max()
            np.testing.assert_allclose(got[key], expected[key], rtol=RTOL, atol=RTOL * scale, err_msg=key)


@pytest.mark.parametrize("device", DEVICES)
def test_fid_statistics_on_the_device(monkeypatch, device):
    """The moments' accumulation and the moves to the device, with a stand-in for InceptionV3."""
    fidelity = pytest.importorskip("torch_fidelity.feature_extractor_inceptionv3")
    from dpvae.eval.fid import statistics

    monkeypatch.setattr(fidelity, "FeatureExtractorInceptionV3", _StandInExtractor)
    x = np.random.default_rng(0).random((11, 1, 28, 28)).astype(np.float32)
    with precision.ieee_fp32():
        got = statistics(x, 4, Path("unused"), device)
    assert got["n"] == 11
    _assert_statistics(got, _numpy_statistics(x), "approx")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_fid_statistics_with_torch_fidelitys_inception_on_cuda(tmp_path):
    """torch-fidelity's own InceptionV3 (random weights: the real ones are not needed to compare devices)."""
    fidelity = pytest.importorskip("torch_fidelity.feature_extractor_inceptionv3")
    from dpvae.eval.fid import statistics

    torch.manual_seed(0)
    monkeypatch = pytest.MonkeyPatch()
    with monkeypatch.context() as patch:  # build it without downloading or loading weights
        patch.setattr(fidelity, "load_state_dict_from_url", lambda *args, **kwargs: None)
        patch.setattr(fidelity.FeatureExtractorInceptionV3, "load_state_dict", lambda self, state, *a, **k: None)
        extractor = fidelity.FeatureExtractorInceptionV3("inception-v3-compat", ["2048"])
    weights = tmp_path / "inception-random.pth"
    torch.save(extractor.state_dict(), weights)
    x = np.random.default_rng(0).random((6, 1, 28, 28)).astype(np.float32)
    with precision.ieee_fp32():
        _assert_statistics(statistics(x, 4, weights, "cuda"), statistics(x, 4, weights, "cpu"), "cuda")


# -- classifiers trained on synthetic images ------------------------------------------------------


def _blocks(n: int, rng: np.random.Generator, faint: bool) -> tuple[np.ndarray, np.ndarray]:
    """28x28 grey images whose class k lights a block at position k: `faint` blocks in noise, which two epochs
    learn only in part (the accuracy then moves with any change of weights, draws or order), or bright
    blocks, which every classifier learns fully."""
    y = rng.integers(0, 3, n)
    x = (0.5 if faint else 0.1) * rng.random((n, 1, 28, 28))
    for i, k in enumerate(y):
        x[i, 0, 4 + 6 * k : 10 + 6 * k, 4:10] += 0.2 if faint else 0.9
    return x.astype(np.float32), y.astype(np.int64)


def _classifier_data(device: str, dropout: bool, seed: int) -> tuple[np.ndarray, ...]:
    """Faint blocks, except for a network with dropout on CUDA: its masks differ from the CPU's, so there the
    check is that both learn the bright blocks alike."""
    rng = np.random.default_rng(seed)
    faint = device == "cpu" or not dropout
    return (*_blocks(60, rng, faint), *_blocks(30, rng, faint))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kind", ["mlp", "cnn"])
def test_image_classifiers_on_the_device(device, kind):
    """Two fits trained together: on the CPU a second training gives the same accuracies; on CUDA the CPU's within a
    few flipped predictions."""
    from dpvae.eval.image_classifiers import ImageClassifierOptions, _torch_accuracies

    x, y, test_x, test_y = _classifier_data(device, kind == "cnn", 0)
    options = ImageClassifierOptions(batch_size=16, max_epochs=2, patience=1)
    with precision.ieee_fp32():
        got = _torch_accuracies(kind, x, y, test_x, test_y, 3, options, [7, 8], device)
        expected = _torch_accuracies(kind, x, y, test_x, test_y, 3, options, [7, 8], "cpu")
    if device == "cpu":
        assert got == expected
    else:
        assert got == pytest.approx(expected, abs=ACCURACY_ATOL)


@pytest.mark.parametrize("device", DEVICES)
def test_p3gm_cnn_on_the_device(device):
    """On the CPU a second fit gives the same curve; on CUDA the CPU's within a few flipped predictions."""
    from dpvae.models.p3gm_cnn import train_and_score

    x, y, test_x, test_y = _classifier_data(device, True, 1)

    def curve(on: str) -> list[float]:
        torch.manual_seed(3)
        with precision.ieee_fp32():
            scored = train_and_score(
                x,
                y,
                test_x,
                test_y,
                generator=torch.Generator().manual_seed(5),
                max_epochs=2,
                batch_size=16,
                classes=3,
                device=on,
            )
        return scored.test_curve

    got, expected = curve(device), curve("cpu")
    if device == "cpu":
        assert got == expected
    else:
        assert got == pytest.approx(expected, abs=ACCURACY_ATOL)


# -- membership attacks ------------------------------------------------------------------------------


@pytest.mark.parametrize("device", DEVICES)
def test_mc_distances_on_the_device(device):
    """MC attack / outlier exposure distances (unchanged NumPy on the CPU) against a brute-force loop."""
    from dpvae.eval.membership import count_within, nearest_distances

    rng = np.random.default_rng(2)
    pool = rng.random((500, 6)).astype(np.float32)  # float32 as the synthetic records are
    queries = rng.random((9, 6))
    brute = np.linalg.norm(queries[:, None] - pool[None].astype(np.float64), axis=2)
    nearest = nearest_distances(queries, pool, chunk=64, device=device)
    np.testing.assert_allclose(nearest, brute.min(1), rtol=1e-9)
    radius = float(np.quantile(brute, 0.1)) + 1e-6  # no pool row sits at the radius
    assert (count_within(queries, pool, radius, chunk=64, device=device) == (brute <= radius).sum(1)).all()


@pytest.mark.parametrize("device", DEVICES)
def test_lvae_elbo_of_the_white_box_attack_on_the_device(tmp_path, device):
    """elbo_attack's scores (LVAE's `elbo`: CPU-seeded draws moved to the run's device)."""
    from dpvae.methods.lvae import LVAE
    from dpvae.methods.lvae.train import MODEL_FILE, SPEC_FILE
    from dpvae.models.lvae_vae import LVAEConvVAE

    torch.manual_seed(0)
    model_dir = model_path(tmp_path / "run")
    model_dir.mkdir(parents=True)
    torch.save(LVAEConvVAE(4).state_dict(), model_dir / MODEL_FILE)
    (model_dir / SPEC_FILE).write_text(json.dumps({"latent_dim": 4, "constraint": "none", "lipschitz": 1.0}))
    x = np.random.default_rng(0).random((5, 1, 28, 28)).astype(np.float32)

    def elbo(on: str) -> np.ndarray:
        run = RunContext(RunSpec.standalone("test/run", tmp_path / "run", device=on), tmp_path / "run")
        with precision.ieee_fp32():
            return LVAE().elbo(run, x, 2, "elbo-members")

    expected = elbo("cpu")
    assert np.isfinite(expected).all()
    np.testing.assert_allclose(elbo(device), expected, rtol=0 if device == "cpu" else RTOL)
