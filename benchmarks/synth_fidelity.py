"""Fidelity of `dpvae synth` releases of a built-in table against its real test split (docs/mst-aim.md's table).

    python -m dpvae synth --method mst --data adult --epsilon 1 --n 39074 --out a1.csv --root R \
        --work a1.csv.work --keep-work
    python benchmarks/synth_fidelity.py R/prepared/adult a1.csv.work/run/samples.npz [more samples.npz ...]

On the prepared [0, 1] encoding (the run's samples.npz in its kept workspace, the prepared test and train splits):
the mean 1-way and 2-way total-variation distance over the attributes (every column and the label; numeric columns
in 16 equal-width bins on [0, 1], categorical ones as their codes) and the AUROC on the real test split of
scikit-learn's HistGradientBoostingClassifier (random_state 0) trained on the rows. The first line is the real
training split's. One tab-separated line per file on stdout.
"""

from __future__ import annotations

import itertools
import sys

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.metrics import roc_auc_score

BINS = 16


def codes(x: np.ndarray, y: np.ndarray, columns: list[dict]) -> np.ndarray:
    out = []
    for i, column in enumerate(columns):
        v = x[:, i].astype(np.float64)
        if column.get("kind") == "categorical":
            k = len(column["categories"])
            out.append(np.rint(v * max(k - 1, 1)).clip(0, k - 1).astype(int))
        else:
            out.append(np.clip((v * BINS).astype(int), 0, BINS - 1))
    out.append(y.astype(int))
    return np.column_stack(out)


def tvd(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    sizes = np.maximum(a.max(0), b.max(0)) + 1

    def distance(u: np.ndarray, v: np.ndarray, cells: int) -> float:
        return 0.5 * float(
            np.abs(np.bincount(u, minlength=cells) / len(u) - np.bincount(v, minlength=cells) / len(v)).sum()
        )

    one = [distance(a[:, i], b[:, i], s) for i, s in enumerate(sizes)]
    two = [
        distance(a[:, i] * sizes[j] + a[:, j], b[:, i] * sizes[j] + b[:, j], sizes[i] * sizes[j])
        for i, j in itertools.combinations(range(a.shape[1]), 2)
    ]
    return float(np.mean(one)), float(np.mean(two))


def auroc(x: np.ndarray, y: np.ndarray, test) -> float:
    if len(np.unique(y)) < 2:
        return 0.5
    model = HistGradientBoostingClassifier(random_state=0).fit(x, y)
    return float(roc_auc_score(test["y"], model.predict_proba(test["x"])[:, 1]))


def main(prepared: str, samples: list[str]) -> None:
    from dpvae.data.store import load_prepared

    data = load_prepared(prepared)  # the prepared set's meta and splits (dpvae.paths' layout)
    columns = data.meta["columns"]
    test, train = {"x": data.test.x, "y": data.test.y}, {"x": data.train.x, "y": data.train.y}
    real = codes(test["x"], test["y"], columns)
    for name, data in [("real training split", train), *((s, np.load(s)) for s in samples)]:
        one, two = tvd(codes(data["x"], data["y"], columns), real)
        print(f"{name}\t{one:.4f}\t{two:.4f}\t{auroc(data['x'], data['y'], test):.4f}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
