"""P3GM's four tabular classifiers: trained on synthetic records, AUROC and AUPRC on the real test split.

Settings of the reference code (`ml_task/tabledata_classification.py`, docs/papers.md §3.3):
LogisticRegression(solver='liblinear'); AdaBoostClassifier() defaults; GradientBoostingClassifier(
max_features='sqrt', max_depth=8, min_samples_leaf=50, min_samples_split=200; on fewer than 800 training records,
where those sizes forbid every split, they scale down: `gradient_boosting`); and XGBoost used as a
*regressor*, `XGBRegressor(nthread=1, subsample=0.5)`, whose output is the score (today's xgboost spells
`nthread` as `n_jobs`). Scores: `roc_auc_score` and `average_precision_score` on predict_proba[:, 1] or
the regressor's output, per classifier and averaged over the four ("mean4", Tables VI, Figs 4, 6-8).

Adult's positive class: the code scores the arg-min of the one-hot label, i.e. "<=50K" (docs/papers.md A-G2);
the `adult_positive` option picks it, and Adult also gets `auprc_flipped` (the other class positive). A synthetic
set with one class only cannot train a classifier: its score is that of a constant predictor (AUROC 0.5, AUPRC the
test prevalence) and a `single_class` row says so.

K > 2 label classes (a user's own table): the same four classifiers as classifiers (XGBoost's `XGBClassifier`, the
regressor scores a binary task only), each giving class probabilities (a class absent from the synthetic records
gets 0); `accuracy`, and AUROC and AUPRC as macro one-vs-rest averages over the K classes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from dpvae.data.declared import Facts
from dpvae.eval.base import EvalContext, Rows
from dpvae.eval.registry import register_metric
from dpvae.params import MetricOptions, param
from dpvae.progress import Progress

CLASSIFIERS = ("lr", "ab", "gbm", "xgb")
ADULT_LABELS = ["<=50K", ">50K"]


@dataclass(frozen=True)
class TabularClassifierOptions(MetricOptions):
    adult_positive: Literal[">50K", "<=50K"] = param(
        ">50K", "positive class of Adult (paper text vs the reference code's arg-min: [code] '<=50K', A-G2)"
    )


#: [choice] GBM's node sizes scale down below this many training records: the reference's min_samples_split 200 /
#: min_samples_leaf 50 would forbid every split there (a constant predictor: AUROC 0.5 on a 160-row table)
GBM_FULL_SIZE = 800


def gradient_boosting(n_train: int, seed: int):
    """The reference code's GBM (max_features 'sqrt', depth 8, min_samples_split 200, min_samples_leaf 50) from
    `GBM_FULL_SIZE` training records on; on fewer, split and leaf sizes n/4 and n/16 (at least 2 and 1)."""
    from sklearn.ensemble import GradientBoostingClassifier

    split, leaf = min(200, max(2, n_train // 4)), min(50, max(1, n_train // 16))
    return GradientBoostingClassifier(
        max_features="sqrt", max_depth=8, min_samples_leaf=leaf, min_samples_split=split, random_state=seed
    )


def make_classifier(name: str, seed: int, n_train: int = GBM_FULL_SIZE):
    """One of the reference code's four classifiers, seeded (the reference leaves them unseeded); `n_train`: the
    records it will train on (`gradient_boosting`)."""
    from sklearn.ensemble import AdaBoostClassifier
    from sklearn.linear_model import LogisticRegression
    from xgboost import XGBRegressor

    if name == "lr":
        return LogisticRegression(solver="liblinear", random_state=seed)
    if name == "ab":
        return AdaBoostClassifier(random_state=seed)
    if name == "gbm":
        return gradient_boosting(n_train, seed)
    if name == "xgb":
        return XGBRegressor(n_jobs=1, subsample=0.5, random_state=seed)
    raise ValueError(f"unknown classifier {name!r}; known: {', '.join(CLASSIFIERS)}")


def positive_labels(y: np.ndarray, label_names: list[str] | None, adult_positive: str) -> np.ndarray:
    """Binary labels with 1 = the positive class; Adult's follows `adult_positive`."""
    y = np.asarray(y, dtype=np.int64)
    if label_names == ADULT_LABELS and adult_positive == "<=50K":
        return 1 - y
    return y


def scores(name: str, x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, seed: int) -> np.ndarray:
    """The classifier's score for the positive class on every test record."""
    model = make_classifier(name, seed, len(y_train))
    model.fit(x_train, y_train)
    return model.predict(x_test) if name == "xgb" else model.predict_proba(x_test)[:, 1]


def classifier_rows(
    x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, y_test: np.ndarray, seed: int, flipped: bool = False
) -> Rows:
    """AUROC and AUPRC per classifier and their mean over the four ('mean4').

    `flipped` adds `auprc_flipped`: the AUPRC with the other class as positive, scored by 1 − score (what
    training on flipped labels gives: the four classifiers' losses are symmetric in the labels). AUROC
    does not depend on which class is positive.
    """
    from sklearn.metrics import average_precision_score, roc_auc_score

    x_train = np.asarray(x_train, dtype=np.float64).reshape(len(x_train), -1)
    x_test = np.asarray(x_test, dtype=np.float64).reshape(len(x_test), -1)
    if len(np.unique(y_test)) < 2:
        raise ValueError("the real test split holds one class only; AUROC is undefined")
    rows: Rows = []
    single = len(np.unique(y_train)) < 2
    for name in Progress("tabular classifiers", len(CLASSIFIERS), "fits").each(CLASSIFIERS):
        score = np.zeros(len(y_test)) if single else scores(name, x_train, y_train, x_test, seed)
        rows += [
            {"metric": "auroc", "classifier": name, "value": float(roc_auc_score(y_test, score))},
            {"metric": "auprc", "classifier": name, "value": float(average_precision_score(y_test, score))},
        ]
        if flipped:
            rows.append(
                {
                    "metric": "auprc_flipped",
                    "classifier": name,
                    "value": float(average_precision_score(1 - y_test, 1 - score)),
                }
            )
    for metric in ("auroc", "auprc", *(("auprc_flipped",) if flipped else ())):
        rows.append(
            {
                "metric": metric,
                "classifier": "mean4",
                "value": float(np.mean([r["value"] for r in rows if r["metric"] == metric])),
            }
        )
    if single:
        rows.append({"metric": "single_class", "value": float(np.unique(y_train)[0]) if len(y_train) else -1.0})
    return rows


def multiclass_rows(
    x_train: np.ndarray,
    y_train: np.ndarray,
    x_test: np.ndarray,
    y_test: np.ndarray,
    classes: int,
    seed: int,
    classifiers: tuple[str, ...] = CLASSIFIERS,
) -> Rows:
    """Accuracy and macro one-vs-rest AUROC / AUPRC per classifier over `classes` labels, and their mean ('mean4'
    over the four; 'mean' over `classifiers` where others are asked for, e.g. the quality report's two)."""
    from sklearn.ensemble import AdaBoostClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import accuracy_score, average_precision_score, roc_auc_score

    def xgboost():
        from xgboost import XGBClassifier  # imported on use: a second or two

        return XGBClassifier(n_jobs=1, subsample=0.5, random_state=seed)

    x_train = np.asarray(x_train, dtype=np.float64).reshape(len(x_train), -1)
    x_test = np.asarray(x_test, dtype=np.float64).reshape(len(x_test), -1)
    present = np.unique(y_train)
    models = {
        "lr": lambda: LogisticRegression(random_state=seed, max_iter=1000),
        "ab": lambda: AdaBoostClassifier(random_state=seed),
        "gbm": lambda: gradient_boosting(len(y_train), seed),
        "xgb": xgboost,
    }
    onehot = np.eye(classes)[y_test]
    seen = [k for k in range(classes) if onehot[:, k].any() and not onehot[:, k].all()]  # scorable one-vs-rest
    rows: Rows = []
    for name in Progress("tabular classifiers", len(classifiers), "fits").each(classifiers):
        proba = np.zeros((len(y_test), classes))
        if len(present) < 2:
            proba[:, present] = 1.0
        else:
            codes = np.searchsorted(present, y_train)  # XGBoost wants labels 0..k-1
            model = models[name]().fit(x_train, codes)
            proba[:, present] = model.predict_proba(x_test)
        auroc = [roc_auc_score(onehot[:, k], proba[:, k]) for k in seen]
        auprc = [average_precision_score(onehot[:, k], proba[:, k]) for k in seen]
        rows += [
            {"metric": "accuracy", "classifier": name, "value": float(accuracy_score(y_test, proba.argmax(1)))},
            {"metric": "auroc", "classifier": name, "value": float(np.mean(auroc))},
            {"metric": "auprc", "classifier": name, "value": float(np.mean(auprc))},
        ]
    mean = "mean4" if tuple(classifiers) == CLASSIFIERS else "mean"
    for metric in ("accuracy", "auroc", "auprc"):
        values = [r["value"] for r in rows if r["metric"] == metric]
        rows.append({"metric": metric, "classifier": mean, "value": float(np.mean(values))})
    if len(present) < 2:
        rows.append({"metric": "single_class", "value": float(present[0]) if len(present) else -1.0})
    return rows


def two_or_more_labels(options: TabularClassifierOptions, facts: Facts, n_synthetic: int) -> list[tuple[str, str]]:
    """Two label classes score a binary task; K > 2 the macro one-vs-rest averages."""
    if facts.classes < 2:
        return [("", f"classifiers need two label classes or more, the data has {facts.classes}")]
    return []


@register_metric(
    "tabular_classifiers",
    needs=("samples", "data"),
    options=TabularClassifierOptions,
    check=two_or_more_labels,
    description="P3GM's LR / AdaBoost / GBM / XGBoost trained on synthetic, AUROC and AUPRC on real test "
    "(K > 2 classes: accuracy and macro one-vs-rest AUROC / AUPRC)",
    threads=1,
    runtime=30,
)
def tabular_classifiers(ctx: EvalContext) -> Rows:
    names = ctx.data.meta.get("label_names")
    classes = len(names) if names else int(max(ctx.data.train.y.max(), ctx.data.test.y.max())) + 1
    if classes > 2:
        seed = ctx.run.seed_for("classifiers")
        return multiclass_rows(ctx.samples["x"], ctx.samples["y"], ctx.data.test.x, ctx.data.test.y, classes, seed)
    positive = ctx.options.adult_positive
    y_train = positive_labels(ctx.samples["y"], names, positive)
    y_test = positive_labels(ctx.data.test.y, names, positive)
    return classifier_rows(
        ctx.samples["x"],
        y_train,
        ctx.data.test.x,
        y_test,
        ctx.run.seed_for("classifiers"),
        flipped=names == ADULT_LABELS,
    )
