"""DP²-VAE's downstream classifiers (docs/papers.md §4.3), trained on synthetic images, tested on real ones.

    MLP  Flatten -> Linear(C·H·W -> 100) -> ReLU -> Linear(100 -> classes)                     (-> softmax)
    CNN  Conv(C -> 32, k3, s2, p1) -> Dropout(0.5) -> ReLU -> Conv(32 -> 64, k3, s2, p1) -> Dropout(0.5)
         -> ReLU -> Flatten [64·⌈H/4⌉·⌈W/4⌉] -> Linear(-> classes)                          (-> softmax)
The paper's final Softmax is the softmax of the cross-entropy loss here (logits out; no double softmax). The
CNN's Dropout(0.5) is `HalfDropout`: the same distribution as `nn.Dropout(0.5)`, masks drawn 8 elements a byte.
"""

from __future__ import annotations

import math

import torch
from torch import nn


class HalfDropout(nn.Module):
    """Dropout with p = 1/2: in training each element is kept, doubled, with probability 1/2 independently of the
    others, as `nn.Dropout(0.5)`; its mask is the bits of random bytes, one draw per 8 elements where `nn.Dropout`
    draws a Bernoulli per element, which took 60 % of a CNN training step on a CPU (2.3x faster steps there:
    benchmarks/README.md). Draws from the default generator of `x`'s device (under `torch.func.vmap`, with
    `randomness="different"`, other masks per vmapped fit)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training:
            return x
        n = x.numel()
        random_bytes = torch.randint(0, 256, (-(-n // 8),), dtype=torch.uint8, device=x.device)
        bits = random_bytes.unsqueeze(-1) >> torch.arange(8, dtype=torch.uint8, device=x.device) & 1
        return x * bits.flatten()[:n].view(x.shape).to(x.dtype).mul_(2.0)


def mlp(shape: tuple[int, ...], classes: int) -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(math.prod(shape), 100), nn.ReLU(), nn.Linear(100, classes))


def cnn(shape: tuple[int, ...], classes: int) -> nn.Module:
    channels, height, width = shape
    flat = 64 * math.ceil(height / 4) * math.ceil(width / 4)
    return nn.Sequential(
        nn.Conv2d(channels, 32, 3, 2, 1),
        HalfDropout(),
        nn.ReLU(),
        nn.Conv2d(32, 64, 3, 2, 1),
        HalfDropout(),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(flat, classes),
    )
