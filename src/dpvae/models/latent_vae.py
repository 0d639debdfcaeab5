"""The VAE interface PriVAE's methods and metrics share, and its loss terms (docs/papers.md §1.1-1.2).

A `LatentVAE` has a diagonal-Normal posterior q(z|x) = N(μ(x), std(x)²), a fixed prior p(z) and a
per-example likelihood p(x|z); subclasses (`ConvVAE`, `PinwheelVAE`) define those four pieces and
`loss_terms` builds PriVAE's decomposition L = (1/B) Σ_i φ(x_i) + (1/b) Σ_j ψ(s_j):

    φ(x_i) = −(1/L) Σ_l [log p(x_i|z_il) − β (log q(z_il|x_i) − log p(z_il))]    z_il ~ q(z|x_i)
    ψ(s_j) = α · D(q(z), p(z)) on sub-group s_j: dimension-wise MMD (MMD_DIM) or KL(p(z)‖q(z)) (KLD_INC)

Models are saved and loaded by `models/vae_files.py`.
"""

from __future__ import annotations

from typing import Any, Literal

import torch
from torch import Tensor, nn

from dpvae.models.losses import kld_inc, mmd_dim, normal_log_prob
from dpvae.privacy.dpsgd.units import Units

Divergence = Literal["none", "mmd_dim", "kl_pq"]
DIVERGENCES: tuple[str, ...] = ("none", "mmd_dim", "kl_pq")


class LatentVAE(nn.Module):
    """Base of PriVAE's VAEs: subclasses implement `encode`, `decode`, `log_likelihood`, `prior_log_prob`,
    `sample_prior` and set `config` (their constructor arguments, for saving)."""

    config: dict[str, Any]

    def encode(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Posterior mean and std, each [N, D]."""
        raise NotImplementedError

    def decode(self, z: Tensor) -> Any:
        """The likelihood's parameters for latents [N, D]."""
        raise NotImplementedError

    def log_likelihood(self, x: Tensor, z: Tensor) -> Tensor:
        """log p(x_n | z_n) summed over the data dimensions, [N], for x [N, ...] and z [N, D]."""
        raise NotImplementedError

    def reconstruction(self, z: Tensor) -> Tensor:
        """The likelihood's mean for latents [N, D] (shaped like the data)."""
        raise NotImplementedError

    def prior_log_prob(self, z: Tensor) -> Tensor:
        """log p(z) summed over the last (latent) dimension."""
        raise NotImplementedError

    def sample_prior(self, n: int, generator: torch.Generator | None = None) -> Tensor:
        """n draws from p(z), [n, D]."""
        raise NotImplementedError

    @property
    def latent_dim(self) -> int:
        return int(self.config["latent_dim"])

    def log_weights(self, x: Tensor, noise: Tensor) -> Tensor:
        """Importance log-weights log p(z) + log p(x|z) − log q(z|x), [N, K], for `noise [N, K, D]` ~ N(0, I)."""
        mu, std = self.encode(x)
        z = mu[:, None] + std[:, None] * noise
        k = noise.shape[1]
        repeated = x[:, None].expand(x.shape[0], k, *x.shape[1:]).flatten(0, 1)
        log_px = self.log_likelihood(repeated, z.flatten(0, 1)).reshape(z.shape[:2])
        log_q = normal_log_prob(z, mu[:, None], std[:, None]).sum(-1)
        return self.prior_log_prob(z) + log_px - log_q

    def loss_terms(
        self,
        x: Tensor,
        noise: Tensor,
        prior_samples: Tensor | None = None,
        groups: Tensor | None = None,
        num_groups: int = 1,
        beta: float = 1.0,
        alpha: float = 0.0,
        divergence: Divergence = "mmd_dim",
    ) -> tuple[Tensor, Tensor]:
        """φ per example [B] and ψ per sub-group [num_groups] (zeros when `alpha` = 0 or no divergence).

        `noise [B, L, D]` drives the reparameterisation (L Monte-Carlo samples, decoded example-major);
        ψ uses the first sample of each example (MMD) or the posterior parameters (KL(p‖q)) and
        `prior_samples [B, D]` (fresh prior draws, one per example, in its sub-group `groups [B]`).
        """
        if divergence not in DIVERGENCES:
            raise ValueError(f"divergence must be one of {DIVERGENCES}, got {divergence!r}")
        mu, std = self.encode(x)
        z = mu[:, None] + std[:, None] * noise  # [B, L, D]
        repeated = x[:, None].expand(x.shape[0], z.shape[1], *x.shape[1:]).flatten(0, 1)
        log_px = self.log_likelihood(repeated, z.flatten(0, 1)).reshape(z.shape[:2])  # [B, L]
        kld = normal_log_prob(z, mu[:, None], std[:, None]).sum(-1) - self.prior_log_prob(z)
        phi = (-log_px + beta * kld).mean(1)
        if alpha == 0 or divergence == "none":
            return phi, phi.new_zeros(num_groups)
        if prior_samples is None or groups is None:
            raise ValueError("alpha > 0 needs prior_samples and groups")
        units = Units(groups, num_groups)
        if divergence == "mmd_dim":
            return phi, alpha * mmd_dim(z[:, 0], prior_samples, units)
        return phi, alpha * kld_inc(mu, std, prior_samples, units, self.prior_log_prob)
