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

CUDA = pytest.param(
    "cuda", marks=[pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")]
)
DEVICES = ["cpu", CUDA]
#: CUDA against the CPU for computations that are the same up to float rounding (IEEE fp32 on both)
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
    save_vae(model, run_dir / "model")
    run = RunContext({"run_id": "test/run", "seed": 0, "device": device}, run_dir)
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


def _old_statistics(x: np.ndarray, batch_size: int, weights: Path) -> dict[str, np.ndarray]:
    """eval/fid.py's statistics before the device change."""
    from torch_fidelity.feature_extractor_inceptionv3 import FeatureExtractorInceptionV3

    from dpvae.eval.fid import to_uint8_rgb

    extractor = FeatureExtractorInceptionV3(
        "inception-v3-compat", ["2048"], feature_extractor_weights_path=str(weights)
    ).eval()
    total, outer = np.zeros(2048), np.zeros((2048, 2048))
    with torch.no_grad():
        for start in range(0, len(x), batch_size):
            (features,) = extractor(torch.from_numpy(to_uint8_rgb(x[start : start + batch_size])))
            f = features.double().numpy()
            total += f.sum(0)
            outer += f.T @ f
    mu = total / len(x)
    return {"mu": mu, "sigma": (outer - len(x) * np.outer(mu, mu)) / (len(x) - 1)}


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
    _assert_statistics(got, _old_statistics(x, 4, Path("unused")), device)


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


def _old_torch_accuracy(kind, x, y, test_x, test_y, classes, options, seed) -> float:
    """eval/image_classifiers.py's `_torch_accuracy` before the device change."""
    import copy

    from torch.nn import functional as F

    from dpvae.models import classifiers

    generator = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = getattr(classifiers, kind)(tuple(x.shape[1:]), classes)
    optimizer = torch.optim.Adam(model.parameters())
    order = torch.randperm(len(y), generator=generator)
    n_val = max(1, int(round(options.val_fraction * len(y))))
    val, train = order[:n_val], order[n_val:]
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)

    def accuracy(inputs, labels):
        model.eval()
        with torch.no_grad():
            hits = sum(
                int((model(inputs[s : s + 2048]).argmax(1) == labels[s : s + 2048]).sum())
                for s in range(0, len(labels), 2048)
            )
        return hits / len(labels)

    best, best_state, waited = -1.0, copy.deepcopy(model.state_dict()), 0
    for _ in range(options.max_epochs):
        model.train()
        for part in train[torch.randperm(len(train), generator=generator)].split(options.batch_size):
            optimizer.zero_grad()
            F.cross_entropy(model(xt[part]), yt[part]).backward()
            optimizer.step()
        score = accuracy(xt[val], yt[val])
        if score > best:
            best, best_state, waited = score, copy.deepcopy(model.state_dict()), 0
        else:
            waited += 1
            if waited >= options.patience:
                break
    model.load_state_dict(best_state)
    return accuracy(torch.from_numpy(test_x), torch.from_numpy(test_y))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kind", ["mlp", "cnn"])
def test_image_classifiers_on_the_device(device, kind):
    from dpvae.eval.image_classifiers import ImageClassifierOptions, _torch_accuracy

    x, y, test_x, test_y = _classifier_data(device, kind == "cnn", 0)
    options = ImageClassifierOptions(batch_size=16, max_epochs=2, patience=1)
    with precision.ieee_fp32():
        got = _torch_accuracy(kind, x, y, test_x, test_y, 3, options, 7, device)
    expected = _old_torch_accuracy(kind, x, y, test_x, test_y, 3, options, 7)
    if device == "cpu":
        assert got == expected
    else:
        assert got == pytest.approx(expected, abs=ACCURACY_ATOL)


def _old_p3gm_cnn(x, y, x_test, y_test, generator, max_epochs, batch_size, val_fraction=0.1) -> list[float]:
    """models/p3gm_cnn.py's `train_and_score` ("synthetic" early stopping, patience 1) before the device change:
    the real-test accuracy after every epoch."""
    from torch.nn import functional as F

    from dpvae.models.p3gm_cnn import P3GMCNN, accuracy

    xs, ys = torch.as_tensor(x.reshape(len(x), -1)), torch.as_tensor(y)
    xt, yt = torch.as_tensor(x_test.reshape(len(x_test), -1)), torch.as_tensor(y_test)
    order = torch.randperm(len(xs), generator=generator)
    held = max(1, int(round(val_fraction * len(xs))))
    xv, yv, xs, ys = xs[order[:held]], ys[order[:held]], xs[order[held:]], ys[order[held:]]
    model = P3GMCNN(3)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7, fused=True)
    curve, best = [], -1.0
    for _ in range(max_epochs):
        model.train()
        order = torch.randperm(len(xs), generator=generator)
        for start in range(0, len(xs), batch_size):
            rows = order[start : start + batch_size]
            loss = F.cross_entropy(model(xs[rows]), ys[rows])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        curve.append(accuracy(model, xt, yt))
        watched = accuracy(model, xv, yv)
        if watched < best:
            break
        best = watched
    return curve


@pytest.mark.parametrize("device", DEVICES)
def test_p3gm_cnn_on_the_device(device):
    from dpvae.models.p3gm_cnn import train_and_score

    x, y, test_x, test_y = _classifier_data(device, True, 1)
    torch.manual_seed(3)
    with precision.ieee_fp32():
        got = train_and_score(
            x,
            y,
            test_x,
            test_y,
            generator=torch.Generator().manual_seed(5),
            max_epochs=2,
            batch_size=16,
            classes=3,
            device=device,
        )
    torch.manual_seed(3)
    expected = _old_p3gm_cnn(x, y, test_x, test_y, torch.Generator().manual_seed(5), 2, 16)
    if device == "cpu":
        assert got.test_curve == expected
    else:
        assert got.test_curve == pytest.approx(expected, abs=ACCURACY_ATOL)


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
    model_dir = tmp_path / "run" / "model"
    model_dir.mkdir(parents=True)
    torch.save(LVAEConvVAE(4).state_dict(), model_dir / MODEL_FILE)
    (model_dir / SPEC_FILE).write_text(json.dumps({"latent_dim": 4, "constraint": "none", "lipschitz": 1.0}))
    x = np.random.default_rng(0).random((5, 1, 28, 28)).astype(np.float32)

    def elbo(on: str) -> np.ndarray:
        run = RunContext({"run_id": "test/run", "seed": 0, "device": on}, tmp_path / "run")
        with precision.ieee_fp32():
            return LVAE().elbo(run, x, 2, "elbo-members")

    expected = elbo("cpu")
    assert np.isfinite(expected).all()
    np.testing.assert_allclose(elbo(device), expected, rtol=0 if device == "cpu" else RTOL)
