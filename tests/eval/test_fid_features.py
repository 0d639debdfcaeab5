"""FID's fast CPU paths (channels-last, compiled) give the features of torch-fidelity's plain extractor."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from dpvae.eval.fid import WEIGHTS_NAME, extractor, statistics, to_uint8_rgb
from support.tolerances import assert_planted_fails

#: relative tolerance on features (max |difference| / max |feature|): float32 rounding of reordered sums (each
#: feature ends ~100 layers of convolutions summing up to ~2e4 products: γ_n ≈ 2e4·u ≈ 1e-3 as a worst-case
#: bound, far above what rounding does on average); measured 1.1e-6 (channels-last) and 1.5e-6 (compiled) on
#: x86_64 (a margin of ~7x), a planted error of one unit in 255 gives ~1e-2 (1000x)
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
    """The compiled path (paper-scale sets) with a padded last batch: the same moments as the eager one, to RTOL
    of each moment's largest value (measured at most 0.13 of it in three runs, 1 and 2 threads: a margin of ~8x;
    benchmarks/measured/cpu-2026-12-01/tolerances.log); the moments of images one grey level brighter lie 188
    of it away."""
    x = np.random.default_rng(1).random((5, 1, 28, 28)).astype(np.float32)
    eager = statistics(x, 4, weights, compile_min=10**9)
    compiled = statistics(x, 4, weights, compile_min=1)
    planted = statistics(np.clip(x + 1 / 255, 0, 1), 4, weights, compile_min=10**9)
    for key in ("mu", "sigma"):
        scale = np.abs(eager[key]).max()
        np.testing.assert_allclose(compiled[key], eager[key], rtol=0, atol=RTOL * scale, err_msg=key)
        assert_planted_fails(planted[key], eager[key], 0, RTOL * scale)


def test_generated_statistics_are_read_back_for_the_same_images_only(tmp_path, monkeypatch):
    """A second run of the same images (the Real-data rows' seeds) reads the kept statistics; other images, or no
    memo, compute (a stand-in for Inception counts the calls)."""
    from dpvae.eval import fid

    calls = []

    def statistics(x, batch_size, weights, device="cpu", partial=None):
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


def test_a_killed_feature_pass_resumes_to_the_bytes_of_an_uninterrupted_one(weights, tmp_path, monkeypatch):
    """A pass killed after two batches leaves its running sums; the next call measures only the batches after them
    and gives the uninterrupted moments' bytes (a fresh extractor, as a new process has); the file then goes."""
    from dpvae.eval import fid

    x = np.random.default_rng(2).random((5, 1, 28, 28)).astype(np.float32)
    whole = statistics(x, 2, weights, compile_min=10**9)
    monkeypatch.setattr(fid, "PARTIAL_SECONDS", 0.0)  # save after every batch
    real_extractor, batches = fid.extractor, []

    def killed_after_two(*args, **kwargs):
        features_of = real_extractor(*args, **kwargs)

        def features(images):
            if len(batches) == 2:
                raise KeyboardInterrupt("killed")
            batches.append(len(images))
            return features_of(images)

        return features

    partial = tmp_path / ".fid.partial.npz"
    monkeypatch.setattr(fid, "extractor", killed_after_two)
    with pytest.raises(KeyboardInterrupt):
        statistics(x, 2, weights, compile_min=10**9, partial=partial)
    with np.load(partial) as saved:
        assert int(saved["done"]) == 4
    batches.clear()
    monkeypatch.setattr(fid, "extractor", _counting(real_extractor, batches))
    resumed = statistics(x, 2, weights, compile_min=10**9, partial=partial)
    assert batches == [1]  # the fifth image only
    assert all(resumed[k].tobytes() == whole[k].tobytes() for k in whole)
    assert not partial.exists() and not list(tmp_path.iterdir())


def test_sums_of_other_images_are_not_resumed(tmp_path, monkeypatch):
    """A partial file of other images is ignored (every image is measured); of the same images, resumed."""
    from dpvae.eval import fid

    batches: list[int] = []
    monkeypatch.setattr(
        fid, "extractor", _counting(lambda *a, **k: lambda images: torch.ones(len(images), 2048), batches)
    )
    x = np.random.default_rng(3).random((4, 1, 2, 2)).astype(np.float32)
    partial = tmp_path / ".fid.partial.npz"
    key = fid.statistics_key(x, 2, "cpu", compiled=False)
    fid.RunningMoments(np.full(2048, 7.0), np.zeros((2048, 2048)), done=2).save(partial, key)
    other = x.copy()
    other[3, 0, 1, 1] += 1e-3
    statistics(other, 2, Path("w"), compile_min=10**9, partial=partial)
    assert batches == [2, 2] and not partial.exists()
    fid.RunningMoments(np.full(2048, 7.0), np.zeros((2048, 2048)), done=2).save(partial, key)
    batches.clear()
    assert statistics(x, 2, Path("w"), compile_min=10**9, partial=partial)["mu"][0] == (7.0 + 2) / 4
    assert batches == [2]  # the same images: resumed after the saved two


def _counting(make_extractor, batches: list[int]):
    """`fid.extractor`'s stand-in: `make_extractor`'s features, each batch's size appended to `batches`."""

    def counting(*args, **kwargs):
        features_of = make_extractor(*args, **kwargs)
        return lambda images: batches.append(len(images)) or features_of(images)

    return counting
