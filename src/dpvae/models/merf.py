"""DP-MERF's pieces (Harder et al. 2021; ParkLabML/DP-MERF `code_balanced`): random Fourier features and the
label-conditional conv generator.

    features  φ(x) = [cos(Wx), sin(Wx)] / √(D/2), W [D/2, d] ~ N(0, 1/rff_sigma) ("sphere" features; ‖φ‖ = 1)
    embedding μ(data) = mean_i φ(x_i) ⊗ onehot(y_i)   [D, classes], ‖φ ⊗ e_y‖ = 1 => replace-one sensitivity 2/n
    generator code [z (code_dim) ⊕ onehot(y)] -> Linear(-> hidden) BN ReLU -> Linear(-> c_0·h·w) BN ReLU
              -> reshape [c_0, h, w] -> (×2 bilinear upsample -> Conv(k, same) -> ReLU) per channel count,
              the last conv to the image channels without ReLU -> sigmoid      (h = H / 2^len(channels))
MNIST: channels (16, 8) from 7×7; the SVHN generator the DP²-VAE authors used for CelebA: (16, 8, 8) from 4×4.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


def rff_weights(num_features: int, dim: int, rff_sigma: float, generator: torch.Generator) -> Tensor:
    """W [D/2, d] with entries N(0, 1/rff_sigma) (the code's `randn / sqrt(sig)`)."""
    if num_features % 2:
        raise ValueError(f"rff_dim must be even, got {num_features}")
    return torch.randn(num_features // 2, dim, generator=generator) / math.sqrt(rff_sigma)


def features(x: Tensor, w: Tensor) -> Tensor:
    """φ(x) [N, D] of flattened inputs x [N, d]."""
    projection = x @ w.T
    return torch.cat([projection.cos(), projection.sin()], 1) / math.sqrt(w.shape[0])


def embedding(x: Tensor, onehot: Tensor, w: Tensor, reduce: str = "mean") -> Tensor:
    """Σ or mean over records of φ(x_i) ⊗ onehot_i: [D, classes]."""
    total = features(x.flatten(1), w).T @ onehot
    return total / len(x) if reduce == "mean" else total


class MERFGenerator(nn.Module):
    def __init__(
        self,
        shape: tuple[int, int, int],
        num_classes: int,
        code_dim: int = 5,
        hidden: int = 200,
        channels: list[int] = (16, 8),
        kernel_size: int = 5,
    ) -> None:
        super().__init__()
        image_channels, height, width = shape
        ups = len(channels)
        if height % 2**ups or width % 2**ups:
            raise ValueError(
                f"image size {height}x{width} is not divisible by 2**{ups} (one upsampling per channel count)"
            )
        self.code_dim, self.num_classes = code_dim, num_classes
        self.start = (channels[0], height // 2**ups, width // 2**ups)
        self.fc = nn.Sequential(
            nn.Linear(code_dim + num_classes, hidden),
            nn.BatchNorm1d(hidden),
            nn.ReLU(),
            nn.Linear(hidden, math.prod(self.start)),
            nn.BatchNorm1d(math.prod(self.start)),
            nn.ReLU(),
        )
        outs = list(channels[1:]) + [image_channels]
        self.convs = nn.ModuleList(
            nn.Conv2d(c_in, c_out, kernel_size, padding=(kernel_size - 1) // 2) for c_in, c_out in zip(channels, outs)
        )
        self.upsample = nn.UpsamplingBilinear2d(scale_factor=2)

    def forward(self, z: Tensor, onehot: Tensor) -> Tensor:
        h = self.fc(torch.cat([z, onehot], 1)).view(-1, *self.start)
        for index, conv in enumerate(self.convs):
            h = conv(self.upsample(h))
            h = h.relu() if index < len(self.convs) - 1 else h
        return torch.sigmoid(h)
