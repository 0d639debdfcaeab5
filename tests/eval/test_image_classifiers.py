"""DP²-VAE's image classifiers: accuracies in [0, 1] and the protocol actually run reported beside them."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np

from dpvae.eval.base import EvalContext
from dpvae.eval.image_classifiers import ImageClassifierOptions, image_classifiers


def test_rows_report_accuracies_and_the_protocol_run():
    rng = np.random.default_rng(0)
    y = np.arange(60) % 3
    x = (rng.random((60, 1, 28, 28)) * 0.2 + y[:, None, None, None] / 3).astype(np.float32)  # separable by mean
    test = SimpleNamespace(x=x[:30], y=y[:30])
    run = SimpleNamespace(
        data=SimpleNamespace(train=SimpleNamespace(y=y), test=test), seed_for=lambda name: 0, device="cpu"
    )
    options = ImageClassifierOptions(repeats=2, max_epochs=2, patience=1, max_test=20, classifiers=["lr", "mlp"])
    ctx = EvalContext(run, options, Path("."))
    ctx.__dict__["samples"] = {"x": x, "y": y}
    rows = {(r["metric"], r.get("classifier")): r["value"] for r in image_classifiers(ctx)}
    assert rows[("accuracy", "lr")] == 1.0  # the classes differ in mean brightness
    assert 0 <= rows[("accuracy", "mlp")] <= 1 and rows[("accuracy_std", "mlp")] >= 0
    assert {k: rows[(f"classifier_{k}", None)] for k in ("n_train", "n_test", "repeats", "max_epochs", "patience")} == {
        "n_train": 60,
        "n_test": 20,
        "repeats": 2,
        "max_epochs": 2,
        "patience": 1,
    }
