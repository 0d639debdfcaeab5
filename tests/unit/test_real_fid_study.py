"""workflow/campaigns/dp2vae_real_fid.py without Inception (a feature function of the pixels' mean stands in): the
rows (all training images, the blocks, the first block) with provenance; its cached features make a rerun compute
nothing."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

SCRIPT = Path(__file__).resolve().parents[2] / "workflow" / "campaigns" / "dp2vae_real_fid.py"


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
            mean = rgb.double().mean((1, 2, 3), keepdim=False)[:, None]
            return torch.cat([mean, mean**2 / 255, torch.sin(mean)], 1)  # 3 features: a 3×3 covariance

        return features

    monkeypatch.setattr(module, "BLOCK", 100)
    monkeypatch.setattr(module, "extractor", extractor)
    monkeypatch.setattr(module, "weights_path", lambda: Path("weights"))
    monkeypatch.setattr(module, "load_idx_split", lambda folder, name: (split[name], None))
    monkeypatch.setenv("DPVAE_DATA_MIRROR", str(tmp_path))
    return module, computed


def test_rows_resume_from_cached_features(study, tmp_path):
    module, computed = study
    args = ["--resizes", "tf1", "--device", "cpu", "--batch", "32", "--cache", str(tmp_path / "cache")]
    assert module.main([*args, "--out", str(tmp_path / "first.csv")]) == 0
    first = pd.read_csv(tmp_path / "first.csv")
    assert list(first["generated"]) == ["train[:250]", "2 blocks of 100 train", "train[:100]"]
    assert first["blocks"].tolist() == [1, 2, 1] and (first["dataset"] == "mnist").all()
    assert {"device", "commit", "command", "date"} <= set(first.columns)
    assert sum(computed) > 290  # every image (the compiled CPU path pads the last batch of each block)
    assert first["fid"].iloc[2] == pytest.approx(module.fid(*_features(module, tmp_path, 100)))
    computed.clear()
    assert module.main([*args, "--out", str(tmp_path / "again.csv")]) == 0
    assert computed == [], "the cached features are read, none computed"
    again = pd.read_csv(tmp_path / "again.csv")
    pd.testing.assert_series_equal(first["fid"], again["fid"])


def _features(module, tmp_path: Path, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The cached features of the first n training images and of the test split."""
    train = np.concatenate(
        [
            np.load(p)
            for p in sorted(
                (tmp_path / "cache" / "tf1-train250").glob("*.npy"), key=lambda p: int(p.stem.split("-")[0])
            )
        ]
    )
    return train[:n], np.load(tmp_path / "cache" / "tf1-test40" / "0-40.npy")
