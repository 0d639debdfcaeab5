"""Mathieu et al. (2019)'s pinwheel VAE (`src/models/vae_pinwheel.py`; docs/papers.md §1.2, §1.5).

encoder  Linear(2→h) ReLU → heads Linear(h→D) = μ and softplus(Linear(h→D)) + 1e-6 = posterior std
decoder  Linear(D→h) ReLU → heads Linear(h→2) = mean and softplus(Linear(h→2)) + 1e-6 = std of a
         Normal likelihood (the floor is ours: Mathieu's decoder has none)
prior    equal-weight mixture of N(m_k, 0.03 I), m = (0,−1), (0,1), (1,0), (−1,0)  (D = 2, K = 4)
φ, ψ     `LatentVAE.loss_terms` (ψ = α · KL(p(z)‖q(z)), Mathieu's KLD_INC, by default)
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from dpvae.models.latent_vae import Divergence, LatentVAE
from dpvae.models.losses import gaussian_mixture_log_prob, normal_log_prob, sample_gaussian_mixture

MOG_MEANS = ((0.0, -1.0), (0.0, 1.0), (1.0, 0.0), (-1.0, 0.0))
MOG_VARIANCE = 0.03
EPS = 1e-6


class PinwheelVAE(LatentVAE):
    """The MLP VAE of the module docstring on 2-d points; `prior_variance` of every mixture component."""

    def __init__(
        self, latent_dim: int = 2, hidden: int = 100, data_dim: int = 2, prior_variance: float = MOG_VARIANCE
    ) -> None:
        super().__init__()
        if latent_dim != 2:
            raise ValueError(f"the pinwheel mixture prior is 2-dimensional: latent_dim must be 2, got {latent_dim}")
        if not prior_variance > 0:
            raise ValueError(f"prior_variance must be > 0, got {prior_variance}")
        self.config = {
            "latent_dim": latent_dim,
            "hidden": hidden,
            "data_dim": data_dim,
            "prior_variance": prior_variance,
        }
        self.enc = nn.Linear(data_dim, hidden)
        self.enc_mu, self.enc_scale = nn.Linear(hidden, latent_dim), nn.Linear(hidden, latent_dim)
        self.dec = nn.Linear(latent_dim, hidden)
        self.dec_mu, self.dec_scale = nn.Linear(hidden, data_dim), nn.Linear(hidden, data_dim)
        self.register_buffer("prior_means", torch.tensor(MOG_MEANS))
        self.prior_std = math.sqrt(prior_variance)

    def encode(self, x: Tensor) -> tuple[Tensor, Tensor]:
        h = F.relu(self.enc(x))  # [N, h]
        return self.enc_mu(h), F.softplus(self.enc_scale(h)) + EPS  # [N, D] each

    def decode(self, z: Tensor) -> tuple[Tensor, Tensor]:
        h = F.relu(self.dec(z))
        return self.dec_mu(h), F.softplus(self.dec_scale(h)) + EPS  # [N, 2] each

    def log_likelihood(self, x: Tensor, z: Tensor) -> Tensor:
        mean, std = self.decode(z)
        return normal_log_prob(x, mean, std).sum(-1)

    def reconstruction(self, z: Tensor) -> Tensor:
        return self.decode(z)[0]

    def prior_log_prob(self, z: Tensor) -> Tensor:
        return gaussian_mixture_log_prob(z, self.prior_means.to(z.dtype), self.prior_std)

    def sample_prior(self, n: int, generator: torch.Generator | None = None) -> Tensor:
        return sample_gaussian_mixture(n, self.prior_means, self.prior_std, generator)

    def nearest_component(self, z: Tensor) -> Tensor:
        """Index of the closest prior mean for latents [N, 2] (the cluster a latent falls in)."""
        return torch.cdist(z, self.prior_means.to(z.dtype)).argmin(1)

    def loss_terms(
        self,
        x: Tensor,
        noise: Tensor,
        prior_samples: Tensor | None = None,
        groups: Tensor | None = None,
        num_groups: int = 1,
        beta: float = 1.0,
        alpha: float = 0.0,
        divergence: Divergence = "kl_pq",
    ) -> tuple[Tensor, Tensor]:
        return super().loss_terms(x, noise, prior_samples, groups, num_groups, beta, alpha, divergence)
