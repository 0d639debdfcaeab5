"""Mathieu et al. (2019) DCGAN-style conv VAE for 32×32 grey images, as used by PriVAE (docs/papers.md §1.2).

encoder  Conv(1→f,4,2,1) LReLU · Conv(f→2f,4,2,1) N LReLU · Conv(2f→4f,4,2,1) N LReLU   [4f×4×4]
         heads Conv(4f→D,4): μ and softplus(·)+1e-6 = posterior std
decoder  ConvT(D→4f,4,1,0) N ReLU · ConvT(4f→2f,4,2,1) N ReLU · ConvT(2f→f,4,2,1) N ReLU ·
         ConvT(f→1,4,2,1) = Laplace(·, 0.1) location                                   [1×32×32]
N = GroupNorm (private use, A-P1), BatchNorm (Mathieu, non-private only) or nothing; convs have no
bias except the heads; conv weights ~ N(0, 0.02).
prior    spike-and-slab p(z_d) = γ N(0, spike_std²) + (1 − γ) N(0, 1)  (γ = 0: N(0, I))
φ, ψ     `LatentVAE.loss_terms` (ψ = α · MMD_DIM by default)
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from dpvae.models.latent_vae import LatentVAE
from dpvae.models.losses import SPIKE_STD, laplace_nll, sample_sparse_prior, sparse_prior_log_prob


def _norm(kind: str, channels: int, groups: int) -> nn.Module:
    if kind == "group":
        return nn.GroupNorm(min(groups, channels), channels)
    if kind == "batch":
        return nn.BatchNorm2d(channels)
    return nn.Identity()


class ConvVAE(LatentVAE):
    """The network and loss terms of the module docstring; `norm_groups` groups per GroupNorm."""

    def __init__(
        self,
        latent_dim: int = 50,
        base_channels: int = 32,
        norm: Literal["group", "batch", "none"] = "group",
        norm_groups: int = 8,
        spike_weight: float = 0.8,
        likelihood_scale: float = 0.1,
        spike_std: float = SPIKE_STD,
    ) -> None:
        super().__init__()
        if norm not in ("group", "batch", "none"):
            raise ValueError(f"norm must be 'group', 'batch' or 'none', got {norm!r}")
        if not 0 <= spike_weight < 1:
            raise ValueError(f"spike_weight must be in [0, 1), got {spike_weight}")
        if not spike_std > 0:
            raise ValueError(f"spike_std must be > 0, got {spike_std}")
        f, d = base_channels, latent_dim
        self.config = {
            "latent_dim": d,
            "base_channels": f,
            "norm": norm,
            "norm_groups": norm_groups,
            "spike_weight": spike_weight,
            "likelihood_scale": likelihood_scale,
            "spike_std": spike_std,
        }
        self.spike_weight, self.likelihood_scale, self.spike_std = spike_weight, likelihood_scale, spike_std
        self.encoder = nn.Sequential(
            nn.Conv2d(1, f, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2),
            nn.Conv2d(f, 2 * f, 4, 2, 1, bias=False),
            _norm(norm, 2 * f, norm_groups),
            nn.LeakyReLU(0.2),
            nn.Conv2d(2 * f, 4 * f, 4, 2, 1, bias=False),
            _norm(norm, 4 * f, norm_groups),
            nn.LeakyReLU(0.2),
        )
        self.mu_head = nn.Conv2d(4 * f, d, 4)
        self.scale_head = nn.Conv2d(4 * f, d, 4)
        self.decoder = nn.Sequential(
            nn.ConvTranspose2d(d, 4 * f, 4, 1, 0, bias=False),
            _norm(norm, 4 * f, norm_groups),
            nn.ReLU(),
            nn.ConvTranspose2d(4 * f, 2 * f, 4, 2, 1, bias=False),
            _norm(norm, 2 * f, norm_groups),
            nn.ReLU(),
            nn.ConvTranspose2d(2 * f, f, 4, 2, 1, bias=False),
            _norm(norm, f, norm_groups),
            nn.ReLU(),
            nn.ConvTranspose2d(f, 1, 4, 2, 1, bias=False),
        )
        for m in self.modules():
            if isinstance(m, (nn.Conv2d, nn.ConvTranspose2d)):
                nn.init.normal_(m.weight, 0.0, 0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

    def encode(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Posterior mean and std, each [B, D]."""
        h = self.encoder(x)
        return self.mu_head(h).flatten(1), F.softplus(self.scale_head(h)).flatten(1) + 1e-6

    def decode(self, z: Tensor) -> Tensor:
        """Laplace locations [N, 1, 32, 32] for latents [N, D]."""
        return self.decoder(z[:, :, None, None])

    def log_likelihood(self, x: Tensor, z: Tensor) -> Tensor:
        """log Laplace(x; decode(z), 0.1) summed over pixels, [N]."""
        return -laplace_nll(x, self.decode(z), self.likelihood_scale)

    def reconstruction(self, z: Tensor) -> Tensor:
        return self.decode(z)

    def prior_log_prob(self, z: Tensor) -> Tensor:
        return sparse_prior_log_prob(z, self.spike_weight, self.spike_std).sum(-1)

    def sample_prior(self, n: int, generator: torch.Generator | None = None) -> Tensor:
        return sample_sparse_prior((n, self.latent_dim), self.spike_weight, self.spike_std, generator=generator)

    def forward(self, x: Tensor, noise: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """μ, std [B, D], latents z [B, L, D] and Laplace locations [B, L, 1, 32, 32] for `noise` ~ N(0, I)
        of shape [B, L, D] (L Monte-Carlo samples; decoded example-major)."""
        mu, std = self.encode(x)
        z = mu[:, None] + std[:, None] * noise
        loc = self.decode(z.flatten(0, 1))
        return mu, std, z, loc.reshape(*z.shape[:2], *loc.shape[1:])
