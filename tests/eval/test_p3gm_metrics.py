"""P3GM's CNN, learning curves and the public-reconstruction 2-way marginals."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from dpvae import stages
from dpvae.eval.base import EvalContext
from dpvae.eval.learning_curve import LearningCurveOptions, learning_curve
from dpvae.eval.marginals_2way import Marginals2WayOptions
from dpvae.eval.marginals_2way_public import marginals_2way_public
from dpvae.methods.p3gm.fit import Schedule
from dpvae.models.p3gm_cnn import train_and_score
from dpvae.runspec import RunSpec
from support.toy_runs import N_TRAIN, toy_spec, write_toy_dataset


def digits(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """28x28 'images': class k lights a 6x6 block at position k, plus noise."""
    y = rng.integers(0, 4, n)
    x = 0.1 * rng.random((n, 28, 28))
    for i, k in enumerate(y):
        r, c = divmod(int(k), 2)
        x[i, 4 + 12 * r : 10 + 12 * r, 4 + 12 * c : 10 + 12 * c] += 0.9
    return x.reshape(n, 784).astype(np.float32), y.astype(np.int64)


@pytest.mark.parametrize("early_stopping", ["synthetic", "test"])
def test_the_cnn_learns_and_stops_as_configured(early_stopping):
    rng = np.random.default_rng(0)
    (x, y), (xt, yt) = digits(400, rng), digits(200, rng)
    result = train_and_score(
        x,
        y,
        xt,
        yt,
        generator=torch.Generator().manual_seed(0),
        early_stopping=early_stopping,
        max_epochs=4,
        batch_size=32,
    )
    assert result.accuracy > 0.9
    assert len(result.test_curve) == result.epochs <= 4
    watched = result.val_curve if early_stopping == "synthetic" else result.test_curve
    assert len(watched) == result.epochs
    # the reported accuracy is the real-test accuracy of the epoch with the best watched accuracy
    assert result.accuracy == result.test_curve[result.best_epoch - 1]
    assert watched[result.best_epoch - 1] == max(watched)
    if result.epochs < 4:  # stopped early: the last epoch did not improve on the best
        assert watched[-1] < max(watched)


def test_the_reference_rule_reports_the_best_test_accuracy_before_the_first_decrease():
    rng = np.random.default_rng(1)
    (x, y), (xt, yt) = digits(300, rng), digits(100, rng)
    result = train_and_score(
        x, y, xt, yt, generator=torch.Generator().manual_seed(1), early_stopping="test", max_epochs=6
    )
    assert result.accuracy == max(result.test_curve)
    assert result.val_curve == []


@pytest.fixture(scope="module")
def trained_p3gm(tmp_path_factory):
    root = write_toy_dataset(tmp_path_factory.mktemp("metrics-data"))
    spec = toy_spec(root, tmp_path_factory.mktemp("metrics-run"), record_every_epoch=True)
    stages.train(spec)
    return spec


def eval_context(spec: RunSpec, options, tmp_path: Path) -> EvalContext:
    return EvalContext(stages.run_context(spec), options, tmp_path)


def test_learning_curve_rows_per_iteration_and_per_epoch(trained_p3gm, tmp_path):
    rows = learning_curve(eval_context(trained_p3gm, LearningCurveOptions(n_samples=200), tmp_path))
    losses = [r for r in rows if r["metric"] == "recon_loss"]
    assert [r["step"] for r in losses] == Schedule("poisson", N_TRAIN, 50, 2).snapshot_steps()
    assert all(np.isfinite(r["value"]) and r["value"] > 0 for r in losses)
    means = [r for r in rows if r["metric"] == "auroc" and r["classifier"] == "mean4"]
    assert [r["step"] for r in means] == [1, 2] and all(0 <= r["value"] <= 1 for r in means)


def test_public_reconstructions_are_scored_and_other_methods_give_no_rows(trained_p3gm, tmp_path):
    rows = marginals_2way_public(eval_context(trained_p3gm, Marginals2WayOptions(), tmp_path))
    values = {r["metric"]: r["value"] for r in rows}
    assert set(values) == {"tvd2_public", "tvd2_public_clipped", "tvd2_public_notebook"}
    assert 0 < values["tvd2_public"] < 1
    real = replace(trained_p3gm, method="real", private=False, params={}, run=str(tmp_path / "real"))
    stages.train(real)
    assert marginals_2way_public(eval_context(real, Marginals2WayOptions(), tmp_path)) == []
