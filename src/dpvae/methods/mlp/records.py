"""Records as P3GM's code feeds them to its MLPs: the flattened features followed by the one-hot label.

The reference (`tkgsn/P3GM` `my_util.load_dataset`) one-hot encodes the label column and keeps every other
column as a number in [0, 1] (Adult's categorical codes included), so d = #features + #classes (MNIST 794,
Adult 16, credit 31). Generated vectors are decoded back: features unchanged (no clipping, as the code
writes them), label = arg-max of the one-hot block (PAPERS.md §3.1; the code's evaluation reads Adult's
label by arg-min, which the tabular metric's positive-class option handles).
"""

from __future__ import annotations

from typing import Any

import numpy as np


def num_classes(prepared: Any) -> int:
    """Number of label values: the prepared data's `label_names`, else the largest label seen + 1."""
    names = prepared.meta.get("label_names")
    if names:
        return len(names)
    return int(max(prepared.train.y.max(), prepared.test.y.max())) + 1


def to_vectors(x: np.ndarray, y: np.ndarray, classes: int) -> np.ndarray:
    """[N, F + C] float32: flattened features, then the one-hot label."""
    features = np.asarray(x, dtype=np.float32).reshape(len(x), -1)
    labels = np.asarray(y)
    if labels.size and not (0 <= labels.min() and labels.max() < classes):
        raise ValueError(f"labels must lie in [0, {classes}), got [{labels.min()}, {labels.max()}]")
    one_hot = np.zeros((len(x), classes), dtype=np.float32)
    one_hot[np.arange(len(x)), labels] = 1.0
    return np.concatenate([features, one_hot], axis=1)


def from_vectors(vectors: np.ndarray, record_shape: tuple[int, ...], classes: int) -> dict[str, np.ndarray]:
    """{"x": float32 [N, *record_shape], "y": int64 arg-max of the label block} from generated vectors."""
    vectors = np.asarray(vectors, dtype=np.float32)
    features = vectors[:, : vectors.shape[1] - classes]
    return {"x": np.ascontiguousarray(features.reshape(len(vectors), *record_shape)),
            "y": vectors[:, features.shape[1]:].argmax(axis=1).astype(np.int64)}
