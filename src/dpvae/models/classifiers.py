"""DP²-VAE's downstream classifiers (docs/papers.md §4.3), trained on synthetic images, tested on real ones.

    MLP  Flatten -> Linear(C·H·W -> 100) -> ReLU -> Linear(100 -> classes)                     (-> softmax)
    CNN  Conv(C -> 32, k3, s2, p1) -> Dropout(0.5) -> ReLU -> Conv(32 -> 64, k3, s2, p1) -> Dropout(0.5)
         -> ReLU -> Flatten [64·⌈H/4⌉·⌈W/4⌉] -> Linear(-> classes)                          (-> softmax)
The paper's final Softmax is the softmax of the cross-entropy loss here (logits out; no double softmax).
"""

from __future__ import annotations

import math

from torch import nn


def mlp(shape: tuple[int, ...], classes: int) -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(math.prod(shape), 100), nn.ReLU(), nn.Linear(100, classes))


def cnn(shape: tuple[int, ...], classes: int) -> nn.Module:
    channels, height, width = shape
    flat = 64 * math.ceil(height / 4) * math.ceil(width / 4)
    return nn.Sequential(
        nn.Conv2d(channels, 32, 3, 2, 1),
        nn.Dropout(0.5),
        nn.ReLU(),
        nn.Conv2d(32, 64, 3, 2, 1),
        nn.Dropout(0.5),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(flat, classes),
    )
