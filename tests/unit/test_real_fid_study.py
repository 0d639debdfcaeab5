"""workflow/campaigns/dp2vae_real_fid.py without Inception (a fixed random projection of the pixels stands in, and
a cheap distance of two statistics for FID): the rows (all training images, the blocks, the first block) with
provenance, each from the statistics of the right images; memoised statistics make a rerun compute nothing, and the
workflow's memo and test-split reference are read, not measured again."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from dpvae.eval import fid as fid_module

SCRIPT = Path(__file__).resolve().parents[2] / "workflow" / "campaigns" / "dp2vae_real_fid.py"
PROJECTION = np.random.default_rng(1).normal(size=(3 * 28 * 28, 2048)) / 40


def _features(rgb: np.ndarray) -> np.ndarray:
    return np.tanh(rgb.reshape(len(rgb), -1).astype(np.float64) / 255 @ PROJECTION)


def _distance(a: dict, b: dict) -> float:
    """Stands in for FID: any function of both means and covariances."""
    return float(np.sum((a["mu"] - b["mu"]) ** 2) + abs(np.trace(a["sigma"]) - np.trace(b["sigma"])))


def _moments(features: np.ndarray) -> dict:
    return {"mu": features.mean(0), "sigma": np.cov(features, rowvar=False), "n": np.asarray(len(features))}


@pytest.fixture
def study(monkeypatch, tmp_path):
    """The script as a module, a mirror of 250 training and 40 test images, 100-image blocks, and a counter of
    the images whose features were computed."""
    spec = importlib.util.spec_from_file_location("dp2vae_real_fid", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "dp2vae_real_fid", module)
    spec.loader.exec_module(module)
    rng = np.random.default_rng(0)
    split = {name: rng.integers(0, 256, (n, 28, 28), dtype=np.uint8) for name, n in (("train", 250), ("test", 40))}
    computed = []

    def extractor(weights, device, compiled):
        def features(rgb: torch.Tensor) -> torch.Tensor:
            computed.append(len(rgb))
            return torch.from_numpy(_features(rgb.numpy()))

        return features

    monkeypatch.setattr(module, "BLOCK", 100)
    monkeypatch.setattr(module, "fid", _distance)
    monkeypatch.setattr(module, "weights_path", lambda: Path("weights"))
    monkeypatch.setattr(fid_module, "extractor", extractor)
    monkeypatch.setattr(
        "dpvae.data.images.load_idx_split", lambda folder, name: (split[name], np.zeros(len(split[name]), np.int64))
    )
    monkeypatch.setenv("DPVAE_DATA_MIRROR", str(tmp_path))
    rgb = {name: np.repeat(images[:, None], 3, axis=1) for name, images in split.items()}
    return module, computed, {name: _features(images) for name, images in rgb.items()}


ARGS = ["--resizes", "tf1", "--device", "cpu", "--batch", "32"]


def test_rows_come_from_the_right_images_and_resume_from_memoised_statistics(study, tmp_path):
    module, computed, features = study
    args = [*ARGS, "--cache", str(tmp_path / "cache")]
    assert module.main([*args, "--out", str(tmp_path / "first.csv")]) == 0
    first = pd.read_csv(tmp_path / "first.csv")
    assert list(first["generated"]) == ["train[:250]", "2 blocks of 100 train", "train[:100]"]
    assert first["blocks"].tolist() == [1, 2, 1] and (first["dataset"] == "mnist").all()
    assert {"device", "commit", "command", "date"} <= set(first.columns)
    assert sum(computed) == 290  # every image once
    test = _moments(features["test"])
    blocks = [_distance(_moments(features["train"][s : s + 100]), test) for s in (0, 100)]
    expected = [_distance(_moments(features["train"]), test), np.mean(blocks), blocks[0]]
    np.testing.assert_allclose(first["fid"], expected, rtol=1e-5)  # the CSV keeps 6 digits
    assert first["sd"].iloc[1] == pytest.approx(np.std(blocks), rel=1e-5)
    computed.clear()
    assert module.main([*args, "--out", str(tmp_path / "again.csv")]) == 0
    assert computed == [], "the memoised statistics are read, none computed"
    pd.testing.assert_series_equal(first["fid"], pd.read_csv(tmp_path / "again.csv")["fid"])


def test_pooled_statistics_are_those_of_the_union(study):
    module, _, features = study
    parts = [_moments(features["train"][s : s + 100]) for s in (0, 100, 200)]
    whole = _moments(features["train"])
    pooled = module.pooled(parts)
    np.testing.assert_allclose(pooled["mu"], whole["mu"], rtol=1e-10)
    np.testing.assert_allclose(pooled["sigma"], whole["sigma"], rtol=1e-8, atol=1e-12)
    assert int(pooled["n"]) == 250


def test_the_workflows_memo_and_test_reference_are_read_not_measured(study, tmp_path):
    """A Real-data run of the protocol left its first block's statistics in the workflow's memo and the test split's
    in the reference file: the study measures the other 150 training images only, and uses the kept ones."""
    module, computed, features = study
    memo, reference = tmp_path / "generated", tmp_path / "fid.npz"
    train = module.build_official(tmp_path / "mnist", 0, family="mnist").train.x
    fid_module.memoised_statistics(train[:100], 32, Path("weights"), "cpu", memo)
    # planted: not what the study would measure, so that reading them shows
    kept_test = {**_moments(features["test"] + 0.5), "split": np.asarray("test")}
    np.savez(reference, **kept_test)
    computed.clear()
    args = [*ARGS, "--cache", str(tmp_path / "cache"), "--memo", str(memo), "--reference", str(reference)]
    assert module.main([*args, "--out", str(tmp_path / "rows.csv")]) == 0
    assert sum(computed) == 150
    rows = pd.read_csv(tmp_path / "rows.csv")
    assert rows["fid"].iloc[2] == pytest.approx(_distance(_moments(features["train"][:100]), kept_test), rel=1e-5)


@pytest.mark.parametrize("split, n", [("train", 40), ("test", 39)])
def test_a_reference_of_other_images_is_refused_before_any_work(study, tmp_path, split, n):
    module, computed, features = study
    reference = tmp_path / "fid.npz"
    np.savez(reference, **_moments(features["test"][:n]) | {"n": np.asarray(n), "split": np.asarray(split)})
    with pytest.raises(SystemExit, match="fid.npz holds"):
        module.main([*ARGS, "--reference", str(reference)])
    assert computed == []
