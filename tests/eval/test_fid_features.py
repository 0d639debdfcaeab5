"""FID's fast CPU paths (channels-last, compiled) give the features of torch-fidelity's plain extractor."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from dpvae.eval.fid import WEIGHTS_NAME, extractor, statistics, to_uint8_rgb

#: relative tolerance on features (max |difference| / max |feature|): float32 rounding of reordered sums;
#: measured 1.1e-6 (channels-last) and 1.5e-6 (compiled) on x86_64, a planted error of one unit in 255 gives ~1e-2
RTOL = 1e-5


@pytest.fixture(scope="module")
def weights(mirror):
    path = mirror / "inception" / WEIGHTS_NAME
    if not path.is_file():
        pytest.skip(f"no {path}")
    return path


def _plain_features(images: torch.Tensor, weights) -> torch.Tensor:
    from torch_fidelity.feature_extractor_inceptionv3 import FeatureExtractorInceptionV3

    model = FeatureExtractorInceptionV3("inception-v3-compat", ["2048"], feature_extractor_weights_path=str(weights))
    with torch.no_grad():
        return model.eval()(images)[0]


def _relative(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).abs().max() / b.abs().max())


def test_channels_last_features_equal_the_plain_ones(weights):
    x = np.random.default_rng(0).random((3, 1, 28, 28)).astype(np.float32)
    images = torch.from_numpy(to_uint8_rgb(x))
    plain = _plain_features(images, weights)
    assert _relative(extractor(weights)(images), plain) <= RTOL
    planted = torch.from_numpy(to_uint8_rgb(np.clip(x + 1 / 255, 0, 1)))  # one grey level brighter
    assert _relative(extractor(weights)(planted), plain) > 100 * RTOL


@pytest.mark.slow
def test_compiled_statistics_equal_the_plain_ones(weights):
    """The compiled path (paper-scale sets) with a padded last batch: the same moments as the eager one."""
    x = np.random.default_rng(1).random((5, 1, 28, 28)).astype(np.float32)
    eager = statistics(x, 4, weights, compile_min=10**9)
    compiled = statistics(x, 4, weights, compile_min=1)
    for key in ("mu", "sigma"):
        scale = np.abs(eager[key]).max()
        np.testing.assert_allclose(compiled[key], eager[key], rtol=0, atol=10 * RTOL * scale, err_msg=key)


def test_generated_statistics_are_read_back_for_the_same_images_only(tmp_path, monkeypatch):
    """A second run of the same images (the Real-data rows' seeds) reads the kept statistics; other images, or no
    memo, compute (a stand-in for Inception counts the calls)."""
    from dpvae.eval import fid

    calls = []

    def statistics(x, batch_size, weights, device="cpu"):
        calls.append(len(x))
        return {"mu": x.reshape(len(x), -1).mean(0).astype(np.float64), "sigma": np.eye(2), "n": np.asarray(len(x))}

    monkeypatch.setattr(fid, "statistics", statistics)
    images = np.random.default_rng(0).random((6, 1, 1, 2), dtype=np.float32)
    first = fid.memoised_statistics(images, 64, Path("w"), "cpu", tmp_path / "generated")
    again = fid.memoised_statistics(images.copy(), 64, Path("w"), "cpu", tmp_path / "generated")
    assert calls == [6] and all(np.array_equal(first[k], again[k]) for k in first)
    assert len(list((tmp_path / "generated").glob("*.npz"))) == 1  # no temporary left
    other = images.copy()
    other[0, 0, 0, 0] += 1e-3
    fid.memoised_statistics(other, 64, Path("w"), "cpu", tmp_path / "generated")
    fid.memoised_statistics(images, 32, Path("w"), "cpu", tmp_path / "generated")  # another batch size
    fid.memoised_statistics(images, 64, Path("w"), "cpu", None)
    assert calls == [6, 6, 6, 6]
