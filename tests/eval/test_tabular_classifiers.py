"""The four tabular classifiers: reference settings, mean of four, Adult's positive class, one-class input."""

from __future__ import annotations

import numpy as np
import pytest

from dpvae.eval.tabular_classifiers import classifier_rows, make_classifier, positive_labels


def toy(n: int, seed: int):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.3).astype(np.int64)
    x = rng.normal(size=(n, 5)) + y[:, None] * 1.5
    return x, y


def test_reference_settings():
    gbm = make_classifier("gbm", 0)
    assert (gbm.max_features, gbm.max_depth, gbm.min_samples_leaf, gbm.min_samples_split) == ("sqrt", 8, 50, 200)
    assert make_classifier("lr", 0).solver == "liblinear"
    xgb = make_classifier("xgb", 0)
    assert type(xgb).__name__ == "XGBRegressor" and xgb.subsample == 0.5 and xgb.n_jobs == 1


def test_rows_per_classifier_and_their_mean():
    (xs, ys), (xt, yt) = toy(600, 0), toy(400, 1)
    rows = classifier_rows(xs, ys, xt, yt, seed=0, flipped=True)
    auroc = {r["classifier"]: r["value"] for r in rows if r["metric"] == "auroc"}
    assert set(auroc) == {"lr", "ab", "gbm", "xgb", "mean4"}
    assert auroc["mean4"] == pytest.approx(np.mean([auroc[c] for c in ("lr", "ab", "gbm", "xgb")]))
    assert auroc["mean4"] > 0.8
    auprc = {r["classifier"]: r["value"] for r in rows if r["metric"] == "auprc"}
    flipped = {r["classifier"]: r["value"] for r in rows if r["metric"] == "auprc_flipped"}
    assert flipped["mean4"] > auprc["mean4"]  # the majority class as positive has the higher AUPRC


def test_adult_positive_class_switch():
    y = np.array([0, 1, 1])
    assert positive_labels(y, ["<=50K", ">50K"], "<=50K").tolist() == [1, 0, 0]
    assert positive_labels(y, ["<=50K", ">50K"], ">50K").tolist() == [0, 1, 1]
    assert positive_labels(y, ["normal", "fraud"], "<=50K").tolist() == [0, 1, 1]


def test_one_class_synthetic_set_scores_as_a_constant_predictor():
    (xt, yt) = toy(400, 1)
    rows = classifier_rows(np.zeros((10, 5)), np.zeros(10, dtype=np.int64), xt, yt, seed=0)
    values = {(r["metric"], r.get("classifier")): r["value"] for r in rows}
    assert values[("auroc", "mean4")] == 0.5
    assert values[("auprc", "mean4")] == pytest.approx(yt.mean())
    assert values[("single_class", None)] == 0.0
