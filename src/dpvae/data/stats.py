"""Dataset statistics in the columns of P3GM Table III (N, #feature, #class, % positive)."""

from __future__ import annotations

import math

import numpy as np

from dpvae.data.store import Prepared


def dataset_statistics(prepared: Prepared) -> dict:
    """N, n_features, n_classes and pct_positive of a prepared dataset, counted as follows.

    * ``N``: train + test records (P3GM's N counts the whole dataset before its 90/10 split).
    * ``n_features``: input values per record, the label excluded (the product of x's record shape).
      P3GM's Table III mixes conventions: its Adult "15" and ESR "179" count the label column, while
      Credit 29, ISOLET 617 and MNIST 784 do not; here the label is never counted.
    * ``n_classes``: the number of label names in meta (an outlier label such as LVAE's -1 is not a class).
    * ``pct_positive``: 100 · share of records whose label is meta's ``positive_class`` (train + test),
      None when the dataset has no positive class (multi-class data).
    """
    y = np.concatenate([prepared.train.y, prepared.test.y])
    positive = prepared.meta.get("positive_class")
    return {
        "dataset_id": prepared.meta.get("dataset_id"),
        "N": int(len(y)),
        "n_train": len(prepared.train),
        "n_test": len(prepared.test),
        "n_features": math.prod(prepared.train.x.shape[1:]),
        "n_classes": len(prepared.meta["label_names"]),
        "pct_positive": None if positive is None else float(100 * np.mean(y == positive)),
    }
