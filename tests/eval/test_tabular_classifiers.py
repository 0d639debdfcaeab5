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


def test_three_classes_get_accuracy_and_macro_one_vs_rest_scores():
    """Issue 64: K = 3 labels (no `positive`): accuracy, macro AUROC / AUPRC per classifier and their mean; a
    class the synthetic set lacks scores 0; random labels score near chance, informative ones well above it."""
    from dpvae.eval.tabular_classifiers import multiclass_rows

    rng = np.random.default_rng(0)
    x = rng.normal(size=(600, 4))
    y = np.argmax(x[:, :3], axis=1)  # the label is which of the first three features is largest
    rows = multiclass_rows(x[:400], y[:400], x[400:], y[400:], 3, seed=0)
    mean = {r["metric"]: r["value"] for r in rows if r.get("classifier") == "mean4"}
    assert set(mean) == {"accuracy", "auroc", "auprc"} and mean["accuracy"] > 0.7 and mean["auroc"] > 0.85
    noise = multiclass_rows(x[:400], rng.integers(0, 3, 400), x[400:], y[400:], 3, seed=0)
    chance = {r["metric"]: r["value"] for r in noise if r.get("classifier") == "mean4"}
    assert abs(chance["auroc"] - 0.5) < 0.1 and chance["accuracy"] < 0.5
    two = multiclass_rows(x[:400], np.minimum(y[:400], 1), x[400:], y[400:], 3, seed=0)  # class 2 never drawn
    assert all(0 <= r["value"] <= 1 for r in two)
    single = multiclass_rows(x[:400], np.zeros(400, dtype=int), x[400:], y[400:], 3, seed=0)
    assert {r["metric"] for r in single} >= {"single_class"}


def test_gbm_keeps_the_reference_sizes_where_they_can_split_and_learns_a_small_table():
    """From 800 training records the reference's node sizes; on a 160-row 3-class table (the wine-sized case a
    data holder brings) they scale down, so GBM learns it instead of predicting a constant (macro AUROC 0.5)."""
    from dpvae.eval.tabular_classifiers import gradient_boosting, multiclass_rows

    assert (gradient_boosting(800, 0).min_samples_split, gradient_boosting(800, 0).min_samples_leaf) == (200, 50)
    assert (gradient_boosting(160, 0).min_samples_split, gradient_boosting(160, 0).min_samples_leaf) == (40, 10)
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 200)
    x = rng.normal(size=(200, 4)) + np.eye(3, 4)[y] * 3
    rows = multiclass_rows(x[:160], y[:160], x[160:], y[160:], 3, seed=0, classifiers=("gbm",))
    auroc = next(r["value"] for r in rows if r["metric"] == "auroc" and r["classifier"] == "gbm")
    assert auroc > 0.9
