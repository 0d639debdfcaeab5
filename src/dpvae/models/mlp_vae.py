"""P3GM's MLP VAE (tkgsn/P3GM `src/vae.py` layout; docs/papers.md §3.1).

encoder  fc1 Linear(d, 1000) + ReLU -> fc2 Linear(1000, d') = μ   (or a frozen PCA projection: P3GM)
                                    -> fc22 Linear(1000, d') = log σ²
decoder  fc3 Linear(d', 1000) + ReLU -> fc4 Linear(1000, d), no output activation
loss_i   Σ_features (decoder(z_i) − x_i)² + KL(q(z|x_i) ‖ prior), one reparameterised z_i
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from dpvae.models.losses import MixturePrior, mixture_kl


class MLPVAE(nn.Module):
    """`pca_components [d, d']` and `pca_mean [d]` make μ(x) = (x − mean)·W a frozen projection (P3GM)."""

    def __init__(
        self,
        data_dim: int,
        latent_dim: int,
        hidden_dim: int = 1000,
        pca_components: Tensor | None = None,
        pca_mean: Tensor | None = None,
    ) -> None:
        super().__init__()
        for name, value in (("data_dim", data_dim), ("latent_dim", latent_dim), ("hidden_dim", hidden_dim)):
            if int(value) != value or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value}")
        self.fc1 = nn.Linear(data_dim, hidden_dim)
        if pca_components is None:
            if pca_mean is not None:
                raise ValueError("pca_mean needs pca_components")
            self.fc2 = nn.Linear(hidden_dim, latent_dim)
        else:
            if tuple(pca_components.shape) != (data_dim, latent_dim):
                raise ValueError(
                    f"pca_components must be [{data_dim}, {latent_dim}], got {tuple(pca_components.shape)}"
                )
            mean = torch.zeros(data_dim) if pca_mean is None else pca_mean
            if tuple(mean.shape) != (data_dim,):
                raise ValueError(f"pca_mean must be [{data_dim}], got {tuple(mean.shape)}")
            self.pca = nn.Linear(data_dim, latent_dim).requires_grad_(False)
            self.pca.weight.copy_(pca_components.t())
            self.pca.bias.copy_(-(mean @ pca_components))
        self.fc22 = nn.Linear(hidden_dim, latent_dim)
        self.fc3 = nn.Linear(latent_dim, hidden_dim)
        self.fc4 = nn.Linear(hidden_dim, data_dim)

    def encode(self, x: Tensor) -> tuple[Tensor, Tensor]:
        h = F.relu(self.fc1(x))
        mean = self.pca(x) if hasattr(self, "pca") else self.fc2(h)
        return mean, self.fc22(h)

    def decode(self, z: Tensor) -> Tensor:
        return self.fc4(F.relu(self.fc3(z)))

    def forward(self, x: Tensor, noise: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor]:
        """Reconstruction, μ and log σ² for one reparameterised sample (`noise` ~ N(0, I), [B, d'])."""
        mu, logvar = self.encode(x)
        noise = torch.randn_like(mu) if noise is None else noise
        return self.decode(mu + noise * (0.5 * logvar).exp()), mu, logvar

    def loss(self, x: Tensor, noise: Tensor | None = None, prior: MixturePrior | None = None) -> Tensor:
        """Per-example loss [B]: squared error summed over features + KL to `prior` (default N(0, I))."""
        recon, mu, logvar = self(x, noise)
        return (recon - x).square().sum(1) + mixture_kl(mu, logvar, prior)
