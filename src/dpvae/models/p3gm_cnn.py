"""P3GM's image classifier (tkgsn/P3GM `ml_task/mnist_classification.py`, Keras; docs/papers.md §3.3).

    input [B, 1, 28, 28] -> Conv2d(1, 28, 3x3), no activation -> [B, 28, 26, 26]
      -> MaxPool 2x2 -> [B, 28, 13, 13] -> flatten [B, 4732] -> Linear(4732, 128) + ReLU
      -> Dropout(0.2) -> Linear(128, 10) (logits; softmax in the loss)

Trained with Adam (Keras defaults: lr 1e-3, eps 1e-7) on sparse cross-entropy, batch 32 (Keras' default),
one epoch at a time; Glorot-uniform weights and zero biases as Keras initialises them. Early stopping:
"test" = the reference's — evaluate on the real test set after every epoch, stop at the first decrease,
report the best test accuracy; "synthetic" (default) = the same rule on a held-out part of the synthetic
set, reporting the real-test accuracy of the epoch with the best held-out accuracy.

Device: trains on `device`; the initial weights (global CPU stream), the held-out split and the batch orders
(`generator`, a CPU stream) are drawn on the CPU in the same order on every device; dropout masks come
from the device's generator, so on CUDA the accuracy agrees with the CPU's statistically, not to rounding.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor, nn
from torch.nn import functional as F

from dpvae.progress import Progress


class P3GMCNN(nn.Module):
    def __init__(self, classes: int = 10, side: int = 28) -> None:
        super().__init__()
        self.side = side
        self.conv = nn.Conv2d(1, 28, 3)
        pooled = (side - 2) // 2
        self.fc1 = nn.Linear(28 * pooled * pooled, 128)
        self.drop = nn.Dropout(0.2)
        self.fc2 = nn.Linear(128, classes)
        for layer in (self.conv, self.fc1, self.fc2):
            nn.init.xavier_uniform_(layer.weight)
            nn.init.zeros_(layer.bias)

    def forward(self, x: Tensor) -> Tensor:
        h = F.max_pool2d(self.conv(x.view(-1, 1, self.side, self.side)), 2)  # [B, 28, 13, 13]
        return self.fc2(self.drop(F.relu(self.fc1(h.flatten(1)))))  # [B, classes]


@dataclass(frozen=True)
class CNNResult:
    accuracy: float  # the reported real-test accuracy
    epochs: int  # epochs trained
    best_epoch: int  # the epoch whose model is reported (1-based)
    test_curve: list[float]  # real-test accuracy after every epoch
    val_curve: list[float]  # held-out synthetic accuracy after every epoch ("synthetic" only)


@torch.no_grad()
def accuracy(model: nn.Module, x: Tensor, y: Tensor, batch: int = 2048) -> float:
    model.eval()
    hits = sum(int((model(x[i : i + batch]).argmax(1) == y[i : i + batch]).sum()) for i in range(0, len(x), batch))
    return hits / max(len(x), 1)


def train_and_score(
    x: np.ndarray,
    y: np.ndarray,
    x_test: np.ndarray,
    y_test: np.ndarray,
    *,
    generator: torch.Generator,
    early_stopping: str = "synthetic",
    max_epochs: int = 20,
    patience: int = 1,
    val_fraction: float = 0.1,
    batch_size: int = 32,
    classes: int = 10,
    device: str = "cpu",
) -> CNNResult:
    """Train P3GM's CNN on (x, y) (any shape [N, 784] or [N, 1, 28, 28]) on `device` and score it on the real
    test set."""
    if early_stopping not in ("synthetic", "test"):
        raise ValueError(f"early_stopping must be 'synthetic' or 'test', got {early_stopping!r}")
    xs = torch.as_tensor(np.asarray(x, dtype=np.float32).reshape(len(x), -1))
    ys = torch.as_tensor(np.asarray(y, dtype=np.int64))
    xt = torch.as_tensor(np.asarray(x_test, dtype=np.float32).reshape(len(x_test), -1))
    yt = torch.as_tensor(np.asarray(y_test, dtype=np.int64))
    xv = yv = None
    if early_stopping == "synthetic":
        order = torch.randperm(len(xs), generator=generator)
        held = max(1, int(round(val_fraction * len(xs))))
        xv, yv, xs, ys = xs[order[:held]], ys[order[:held]], xs[order[held:]], ys[order[held:]]
    xs, ys, xt, yt = (t.to(device) for t in (xs, ys, xt, yt))
    if xv is not None:
        xv, yv = xv.to(device), yv.to(device)
    model = P3GMCNN(classes, side=int(round(xs.shape[1] ** 0.5))).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7, fused=True)
    test_curve, val_curve = [], []
    best, best_epoch, waited = -1.0, 0, 0
    progress = Progress("p3gm cnn (at most; early stopping)", max_epochs, "epochs")
    for epoch in range(1, max_epochs + 1):
        model.train()
        order = torch.randperm(len(xs), generator=generator).to(device)
        for start in range(0, len(xs), batch_size):
            rows = order[start : start + batch_size]
            loss = F.cross_entropy(model(xs[rows]), ys[rows])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        progress.advance()
        test_curve.append(accuracy(model, xt, yt))
        watched = test_curve[-1] if xv is None else accuracy(model, xv, yv)
        if xv is not None:
            val_curve.append(watched)
        if watched >= best:  # the reference stops only at a strict decrease
            best, best_epoch, waited = watched, epoch, 0
        else:
            waited += 1
            if waited >= patience:
                break
    return CNNResult(test_curve[best_epoch - 1], len(test_curve), best_epoch, test_curve, val_curve)
