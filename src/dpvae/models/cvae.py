"""DP²-VAE's conditional conv VAE (docs/papers.md §4.2; layout of AntixK/PyTorch-VAE `models/cvae.py`).

    encoder  label one-hot -> Linear(K -> H·W) as an extra channel; image -> Conv1x1(C -> C); concat  [C+1, H, W]
             per hidden size h: Conv(k3, s2, p1) -> GroupNorm -> LeakyReLU                           [h_L, H/2^L, W/2^L]
             heads Linear(flatten -> D) for μ and for log σ²
    decoder  Linear(D + K -> flatten), reshape                                                       [h_L, H/2^L, W/2^L]
             per reversed hidden size but the last: ConvT(k3, s2, p1, op1) -> norm -> LeakyReLU
             final ConvT(h_1 -> h_1, k3, s2, p1, op1) -> norm -> LeakyReLU -> Conv(h_1 -> C, k3, p1) -> sigmoid
    loss_i   Σ_pixels BCE(x_i, x̂_i) (or squared error) + KL(N(μ_i, σ_i²) ‖ N(0, I))   (A-D4 [choice])

MNIST: 28 -> 14 -> 7 -> 14 -> 28 with hidden (512, 256), D = 8; CelebA: 32 -> 16 -> 8 -> 4 -> ... -> 32,
hidden (512, 256, 128), D = 16. Only the decoder is released; its label conditioning is its input layer.
BatchNorm (AntixK) is replaced by GroupNorm: per-example clipping needs examples not to mix (A-D3), in the
encoder too, because the partial-model DP-SGD engine clips its per-example gradients (A-D2).
"""

from __future__ import annotations

import math
from typing import Literal

import torch
from torch import Tensor, nn
from torch.nn import functional as F

Norm = Literal["group", "none"]
Loss = Literal["bce", "mse"]


def _norm(kind: Norm, channels: int) -> nn.Module:
    if kind == "group":
        return nn.GroupNorm(math.gcd(channels, 8), channels)
    if kind == "none":
        return nn.Identity()
    raise ValueError(f"norm must be 'group' or 'none', got {kind!r}")


def _bottom(size: int, layers: int) -> int:
    """Spatial size after `layers` stride-2 convolutions (k3, p1), which the decoder must double back."""
    for _ in range(layers):
        if size % 2:
            raise ValueError(f"image size must be divisible by 2**{layers} for the decoder to mirror the encoder")
        size //= 2
    return size


class CVAEEncoder(nn.Module):
    """x [B, C, H, W], labels one-hot [B, K] -> μ, log σ² [B, D]."""

    def __init__(self, shape: tuple[int, int, int], num_classes: int, latent_dim: int, hidden: list[int]) -> None:
        super().__init__()
        channels, height, width = shape
        self.shape = shape
        self.embed_class = nn.Linear(num_classes, height * width)
        self.embed_data = nn.Conv2d(channels, channels, 1)
        layers, previous = [], channels + 1
        for h in hidden:
            layers += [nn.Conv2d(previous, h, 3, 2, 1), _norm("group", h), nn.LeakyReLU()]
            previous = h
        self.convs = nn.Sequential(*layers)
        flat = hidden[-1] * _bottom(height, len(hidden)) * _bottom(width, len(hidden))
        self.fc_mu = nn.Linear(flat, latent_dim)
        self.fc_var = nn.Linear(flat, latent_dim)

    def forward(self, x: Tensor, onehot: Tensor) -> tuple[Tensor, Tensor]:
        label = self.embed_class(onehot).view(-1, 1, *self.shape[1:])  # [B, 1, H, W]
        h = self.convs(torch.cat([self.embed_data(x), label], dim=1)).flatten(1)
        return self.fc_mu(h), self.fc_var(h)


class CVAEDecoder(nn.Module):
    """latents [N, D], labels one-hot [N, K] -> pixel means in (0, 1) [N, C, H, W] (the released part)."""

    def __init__(
        self, shape: tuple[int, int, int], num_classes: int, latent_dim: int, hidden: list[int], norm: Norm = "group"
    ) -> None:
        super().__init__()
        channels, height, width = shape
        reverse = list(reversed(hidden))
        self.bottom = (reverse[0], _bottom(height, len(hidden)), _bottom(width, len(hidden)))
        self.decoder_input = nn.Linear(latent_dim + num_classes, math.prod(self.bottom))
        layers = []
        for h_in, h_out in zip(reverse[:-1], reverse[1:]):
            layers += [nn.ConvTranspose2d(h_in, h_out, 3, 2, 1, output_padding=1), _norm(norm, h_out), nn.LeakyReLU()]
        self.deconvs = nn.Sequential(*layers)
        last = reverse[-1]
        self.final = nn.Sequential(
            nn.ConvTranspose2d(last, last, 3, 2, 1, output_padding=1),
            _norm(norm, last),
            nn.LeakyReLU(),
            nn.Conv2d(last, channels, 3, padding=1),
        )

    def logits(self, z: Tensor, onehot: Tensor) -> Tensor:
        h = self.decoder_input(torch.cat([z, onehot], dim=1)).view(-1, *self.bottom)
        return self.final(self.deconvs(h))

    def forward(self, z: Tensor, onehot: Tensor) -> Tensor:
        return torch.sigmoid(self.logits(z, onehot))


class CVAE(nn.Module):
    """Encoder + decoder; `loss(x, onehot, noise)` gives one negative ELBO per example [B]."""

    def __init__(
        self,
        shape: tuple[int, int, int],
        num_classes: int,
        latent_dim: int,
        hidden: list[int],
        decoder_norm: Norm = "group",
        loss: Loss = "bce",
    ) -> None:
        super().__init__()
        if not hidden:
            raise ValueError("hidden must list at least one channel count")
        if loss not in ("bce", "mse"):
            raise ValueError(f"loss must be 'bce' or 'mse', got {loss!r}")
        self.loss_kind = loss
        self.encoder = CVAEEncoder(shape, num_classes, latent_dim, hidden)
        self.decoder = CVAEDecoder(shape, num_classes, latent_dim, hidden, decoder_norm)

    def loss(self, x: Tensor, onehot: Tensor, noise: Tensor) -> Tensor:
        """Per-example negative ELBO [B] for reparameterisation `noise` ~ N(0, I) [B, D]."""
        mu, logvar = self.encoder(x, onehot)
        z = mu + noise * (0.5 * logvar).exp()
        logits = self.decoder.logits(z, onehot)
        if self.loss_kind == "bce":
            reconstruction = F.binary_cross_entropy_with_logits(logits, x, reduction="none").flatten(1).sum(1)
        else:
            reconstruction = (torch.sigmoid(logits) - x).square().flatten(1).sum(1)
        kl = 0.5 * (mu.square() + logvar.exp() - 1 - logvar).sum(1)
        return reconstruction + kl


def stacked_loss(model: CVAE, params: dict[str, Tensor], x: Tensor, onehot: Tensor, noise: Tensor) -> Tensor:
    """`CVAE.loss` of K models at once (`dpvae.models.stacked`): parameters [K, *shape] named as in `model`
    (a template giving the layer settings), x [K, B, C, H, W], onehot [K, B, classes], noise [K, B, D] -> [K, B]."""
    from dpvae.models.stacked import from_groups, grouped, grouped_sequential, linear, to_groups

    k, b = x.shape[:2]
    enc, dec = model.encoder, model.decoder
    label = linear(params, "encoder.embed_class", onehot).reshape(k, b, 1, *enc.shape[1:])  # [K, B, 1, H, W]
    data = from_groups(grouped(enc.embed_data, params, "encoder.embed_data", to_groups(x), k), k)
    h = grouped_sequential(enc.convs, params, "encoder.convs", to_groups(torch.cat([data, label], 2)), k)
    h = from_groups(h, k).flatten(2)  # [K, B, F]
    mu, logvar = linear(params, "encoder.fc_mu", h), linear(params, "encoder.fc_var", h)  # [K, B, D]
    z = mu + noise * (0.5 * logvar).exp()
    h = linear(params, "decoder.decoder_input", torch.cat([z, onehot], 2)).reshape(k, b, *dec.bottom)
    h = grouped_sequential(dec.deconvs, params, "decoder.deconvs", to_groups(h), k)
    logits = from_groups(grouped_sequential(dec.final, params, "decoder.final", h, k), k)  # [K, B, C, H, W]
    if model.loss_kind == "bce":
        reconstruction = F.binary_cross_entropy_with_logits(logits, x, reduction="none").flatten(2).sum(2)
    else:
        reconstruction = (torch.sigmoid(logits) - x).square().flatten(2).sum(2)
    return reconstruction + 0.5 * (mu.square() + logvar.exp() - 1 - logvar).sum(2)
