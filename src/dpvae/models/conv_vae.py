"""Mathieu et al. (2019) DCGAN-style conv VAE for 32×32 grey images, as used by PriVAE (PAPERS.md §1.2).

    encoder  Conv(1→f,4,2,1) LReLU · Conv(f→2f,4,2,1) N LReLU · Conv(2f→4f,4,2,1) N LReLU   [4f×4×4]
             heads Conv(4f→D,4): μ and softplus(·)+1e-6 = posterior std
    decoder  ConvT(D→4f,4,1,0) N ReLU · ConvT(4f→2f,4,2,1) N ReLU · ConvT(2f→f,4,2,1) N ReLU ·
             ConvT(f→1,4,2,1) = Laplace(·, 0.1) location                                   [1×32×32]
    N = GroupNorm (private use, A-P1), BatchNorm (Mathieu, non-private only) or nothing; convs have no
    bias except the heads; conv weights ~ N(0, 0.02).
    φ(x_i)   = −(1/L) Σ_l [log p(x_i|z_il) − β (log q(z_il|x_i) − log p(z_il))]   (sparse prior p)
    ψ(s_j)   = α · MMD_DIM(posterior samples of s_j, prior samples of s_j)
"""

from __future__ import annotations

from typing import Literal

from torch import Tensor, nn
from torch.nn import functional as F

from dpvae.models.losses import laplace_nll, mmd_dim, normal_log_prob, sparse_prior_log_prob
from dpvae.privacy.dpsgd.units import Units


def _norm(kind: str, channels: int, groups: int) -> nn.Module:
    if kind == "group":
        return nn.GroupNorm(min(groups, channels), channels)
    if kind == "batch":
        return nn.BatchNorm2d(channels)
    return nn.Identity()


class ConvVAE(nn.Module):
    """The network and loss terms of the module docstring; `norm_groups` groups per GroupNorm."""

    def __init__(self, latent_dim: int = 50, base_channels: int = 32,
                 norm: Literal["group", "batch", "none"] = "group", norm_groups: int = 8,
                 spike_weight: float = 0.8, likelihood_scale: float = 0.1) -> None:
        super().__init__()
        if norm not in ("group", "batch", "none"):
            raise ValueError(f"norm must be 'group', 'batch' or 'none', got {norm!r}")
        if not 0 <= spike_weight < 1:
            raise ValueError(f"spike_weight must be in [0, 1), got {spike_weight}")
        f, d = base_channels, latent_dim
        self.spike_weight, self.likelihood_scale = spike_weight, likelihood_scale
        self.encoder = nn.Sequential(
            nn.Conv2d(1, f, 4, 2, 1, bias=False), nn.LeakyReLU(0.2),
            nn.Conv2d(f, 2 * f, 4, 2, 1, bias=False), _norm(norm, 2 * f, norm_groups), nn.LeakyReLU(0.2),
            nn.Conv2d(2 * f, 4 * f, 4, 2, 1, bias=False), _norm(norm, 4 * f, norm_groups), nn.LeakyReLU(0.2))
        self.mu_head = nn.Conv2d(4 * f, d, 4)
        self.scale_head = nn.Conv2d(4 * f, d, 4)
        self.decoder = nn.Sequential(
            nn.ConvTranspose2d(d, 4 * f, 4, 1, 0, bias=False), _norm(norm, 4 * f, norm_groups), nn.ReLU(),
            nn.ConvTranspose2d(4 * f, 2 * f, 4, 2, 1, bias=False), _norm(norm, 2 * f, norm_groups), nn.ReLU(),
            nn.ConvTranspose2d(2 * f, f, 4, 2, 1, bias=False), _norm(norm, f, norm_groups), nn.ReLU(),
            nn.ConvTranspose2d(f, 1, 4, 2, 1, bias=False))
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

    def forward(self, x: Tensor, noise: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """μ, std [B, D], latents z [B, L, D] and Laplace locations [B, L, 1, 32, 32] for `noise` ~ N(0, I)
        of shape [B, L, D] (L Monte-Carlo samples; decoded example-major)."""
        mu, std = self.encode(x)
        z = mu[:, None] + std[:, None] * noise
        loc = self.decode(z.flatten(0, 1))
        return mu, std, z, loc.reshape(*z.shape[:2], *loc.shape[1:])

    def loss_terms(self, x: Tensor, noise: Tensor, prior_samples: Tensor | None = None,
                   groups: Tensor | None = None, num_groups: int = 1, beta: float = 1.0, alpha: float = 0.0
                   ) -> tuple[Tensor, Tensor]:
        """φ per example [B] and ψ per sub-group [num_groups] (zeros when `alpha` = 0).

        `noise [B, L, D]` drives the reparameterisation; ψ uses the first sample of each example and
        `prior_samples [B, D]` (fresh draws from the prior, one per example, grouped with it).
        """
        mu, std, z, loc = self(x, noise)
        nll = laplace_nll(x[:, None].expand_as(loc).flatten(0, 1), loc.flatten(0, 1), self.likelihood_scale)
        kld = (normal_log_prob(z, mu[:, None], std[:, None])
               - sparse_prior_log_prob(z, self.spike_weight)).sum(-1)
        phi = (nll.reshape(z.shape[:2]) + beta * kld).mean(1)
        if alpha == 0:
            return phi, phi.new_zeros(num_groups)
        if prior_samples is None or groups is None:
            raise ValueError("alpha > 0 needs prior_samples and groups")
        return phi, alpha * mmd_dim(z[:, 0], prior_samples, Units(groups, num_groups))
