"""LVAE's conv VAE for binarised 28×28 MNIST (Groß & Wunder; docs/papers.md §2.1), with its two Lipschitz decoders.

    encoder  Conv(1→32,3,s2) · Conv(32→64,3,s2) · Conv(64→128,3,s2) · Conv(128→32,3,s2), all ReLU
             [B,1,28,28] → [B,32,14,14] → [B,64,7,7] → [B,128,4,4] → [B,32,2,2] → flatten [B,128]
             → Dense(100) ReLU → Dense(2d) = (μ, log σ²)                                   [B,d] each
    decoder  Dense(d→100) ReLU · Dense(100→7·7·32) ReLU → [B,32,7,7]
             · ConvT(32→64,3,s2) ReLU [B,64,14,14] · ConvT(64→128,3,s2) ReLU [B,128,28,28]
             · ConvT(128→1,3,s1) = Bernoulli logits [B,1,28,28]   (last stride 1, not 2: A-L1)
    loss_i   BCE(x_i, logits(z_i)) summed over pixels + KL(N(μ_i, σ_i²) ‖ N(0, I)), one z_i = μ_i + σ_i ε_i

'same' padding as in TensorFlow (28→14→7→4→2). The Lipschitz constant of the decoder is that of the logit
map z ↦ logits(z) in l2 norms (the network the paper constrains: its output layer has no activation).
`spectral_norm=True` divides every decoder layer by its operator norm (power iteration on the layer's
linear map itself — for a transposed convolution that is the convolution operator, not the reshaped kernel
matrix, whose norm can be smaller) and multiplies its output by L^(1/5): the decoder is then L-Lipschitz.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn
from torch.nn import functional as F

IMAGE_SHAPE = (1, 28, 28)


class OperatorNormalised(nn.Module):
    """`scale · layer(x) / ‖W‖_op` (bias kept outside the norm): a `scale`-Lipschitz linear layer.

    ‖W‖_op, the l2 operator norm of the layer's linear map on inputs of `in_shape`, is estimated by power
    iteration on a persistent unit vector `v` (one step per training forward, as Miyato et al. 2018); the
    gradient flows through σ = ‖W v‖ with v fixed. In eval mode the last σ is used, so sampling is
    deterministic and the released decoder is exactly the one trained.
    """

    def __init__(
        self, layer: nn.Linear | nn.ConvTranspose2d, in_shape: tuple[int, ...], scale: float, power_iterations: int = 1
    ) -> None:
        super().__init__()
        self.layer, self.scale, self.power_iterations = layer, float(scale), int(power_iterations)
        v = torch.randn(1, *in_shape)
        self.register_buffer("v", v / v.norm())
        self.register_buffer("sigma", torch.ones(()))

    def _linear(self, x: Tensor, weight: Tensor) -> Tensor:
        """The layer's map without bias."""
        if isinstance(self.layer, nn.Linear):
            return F.linear(x, weight)
        c = self.layer
        return F.conv_transpose2d(x, weight, None, c.stride, c.padding, c.output_padding, c.groups, c.dilation)

    @torch.no_grad()
    def power_step(self, iterations: int) -> None:
        """Move `v` towards the top right-singular vector of the layer's map (Aᵀ from autograd)."""
        weight = self.layer.weight.detach()
        v = self.v
        for _ in range(iterations):
            with torch.enable_grad():
                x = v.clone().requires_grad_(True)
                y = self._linear(x, weight)
                (g,) = torch.autograd.grad(y, x, y.detach())  # Aᵀ A v
            v = g / g.norm().clamp_min(1e-12)
        self.v.copy_(v)

    def forward(self, x: Tensor) -> Tensor:
        if self.training:
            self.power_step(self.power_iterations)
            sigma = self._linear(self.v, self.layer.weight).norm()
            self.sigma.copy_(sigma.detach())
        else:
            sigma = self.sigma
        out = self._linear(x, self.layer.weight) / sigma
        if self.layer.bias is not None:
            bias = self.layer.bias.view(1, -1, *([1] * (out.dim() - 2)))
            out = out + bias
        return self.scale * out


class LVAEConvVAE(nn.Module):
    """The network of the module docstring; `spectral_norm` + `lipschitz` make the decoder L-Lipschitz."""

    DECODER_LAYERS = 5

    def __init__(self, latent_dim: int = 16, spectral_norm: bool = False, lipschitz: float = 1.0) -> None:
        super().__init__()
        if int(latent_dim) != latent_dim or latent_dim < 1:
            raise ValueError(f"latent_dim must be a positive integer, got {latent_dim}")
        if not lipschitz > 0:
            raise ValueError(f"lipschitz must be > 0, got {lipschitz}")
        d = self.latent_dim = int(latent_dim)
        self.encoder = nn.Sequential(
            nn.Conv2d(1, 32, 3, 2, 1),
            nn.ReLU(),
            nn.Conv2d(32, 64, 3, 2, 1),
            nn.ReLU(),
            nn.Conv2d(64, 128, 3, 2, 1),
            nn.ReLU(),
            nn.Conv2d(128, 32, 3, 2, 1),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(128, 100),
            nn.ReLU(),
            nn.Linear(100, 2 * d),
        )
        layers: list[tuple[nn.Module, tuple[int, ...]]] = [
            (nn.Linear(d, 100), (d,)),
            (nn.Linear(100, 7 * 7 * 32), (100,)),
            (nn.ConvTranspose2d(32, 64, 3, 2, 1, output_padding=1), (32, 7, 7)),
            (nn.ConvTranspose2d(64, 128, 3, 2, 1, output_padding=1), (64, 14, 14)),
            (nn.ConvTranspose2d(128, 1, 3, 1, 1), (128, 28, 28)),
        ]
        scale = lipschitz ** (1 / self.DECODER_LAYERS)
        wrapped = [OperatorNormalised(m, shape, scale) if spectral_norm else m for m, shape in layers]
        self.decoder = nn.Sequential(
            wrapped[0],
            nn.ReLU(),
            wrapped[1],
            nn.ReLU(),
            nn.Unflatten(1, (32, 7, 7)),
            wrapped[2],
            nn.ReLU(),
            wrapped[3],
            nn.ReLU(),
            wrapped[4],
        )

    def encode(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Posterior mean and log-variance, each [B, d], of images [B, 1, 28, 28]."""
        return self.encoder(x).chunk(2, dim=1)

    def decode(self, z: Tensor) -> Tensor:
        """Bernoulli logits [N, 1, 28, 28] of latents [N, d]."""
        return self.decoder(z)

    def loss(self, x: Tensor, noise: Tensor) -> Tensor:
        """Per-example negative ELBO [B] for one reparameterised sample (`noise` ~ N(0, I), [B, d])."""
        mu, logvar = self.encode(x)
        logits = self.decode(mu + noise * (0.5 * logvar).exp())
        bce = F.binary_cross_entropy_with_logits(logits, x, reduction="none").flatten(1).sum(1)
        kl = 0.5 * (mu.square() + logvar.exp() - 1 - logvar).sum(1)
        return bce + kl

    @torch.no_grad()
    def elbo(self, x: Tensor, samples: int, generator: torch.Generator | None = None) -> Tensor:
        """Per-example ELBO [B], the reconstruction term averaged over `samples` posterior draws."""
        mu, logvar = self.encode(x)
        kl = 0.5 * (mu.square() + logvar.exp() - 1 - logvar).sum(1)
        rec = torch.zeros_like(kl)
        for _ in range(samples):
            eps = torch.randn(mu.shape, generator=generator, dtype=mu.dtype).to(mu.device)
            logits = self.decode(mu + eps * (0.5 * logvar).exp())
            rec += F.binary_cross_entropy_with_logits(logits, x, reduction="none").flatten(1).sum(1)
        return -(rec / samples) - kl


def decoder_jacobian_norms(decoder: nn.Module, z: Tensor, kind: str = "spectral", create_graph: bool = False) -> Tensor:
    """‖∂decoder/∂z‖ at each probe z [P, d] -> [P]: the spectral (l2 operator) or Frobenius norm.

    The Jacobian [P, 784, d] comes from d forward-mode products (torch.func.jacfwd); the spectral norm is
    the square root of the top eigenvalue of JᵀJ [P, d, d]. With `create_graph` the result can be
    differentiated with respect to the decoder's parameters (the gradient penalty).
    """
    from torch.func import jacfwd, vmap

    def single(point: Tensor) -> Tensor:
        return decoder(point[None]).flatten()

    context = torch.enable_grad() if create_graph else torch.no_grad()
    with context:
        jac = vmap(jacfwd(single))(z)  # [P, 784, d]
        if kind == "frobenius":
            return jac.flatten(1).norm(dim=1)
        if kind != "spectral":
            raise ValueError(f"kind must be 'spectral' or 'frobenius', got {kind!r}")
        gram = jac.transpose(1, 2) @ jac  # [P, d, d]
        return torch.linalg.eigvalsh(gram)[:, -1].clamp_min(0).add(1e-12).sqrt()


def jacobian_norm_estimate(decoder: nn.Module, z: Tensor, direction: Tensor, iterations: int) -> Tensor:
    """‖J(z) v‖ [P] for the decoder's Jacobian J at probes z [P, d], differentiable in the parameters.

    v starts at `direction` (normalised per probe) and takes `iterations` power-iteration steps
    v ← JᵀJv/‖JᵀJv‖ without gradient (one forward-mode and one reverse-mode product each), so that with
    iterations > 0 the result approaches the spectral norm from below; with 0 it is the norm along a random
    direction. The final ‖J v‖ is a forward-mode product through which the gradient penalty backpropagates.
    """
    from torch.func import jvp, vjp

    v = direction / direction.norm(dim=1, keepdim=True).clamp_min(1e-12)
    with torch.no_grad():
        for _ in range(iterations):
            _, u = jvp(decoder, (z,), (v,))
            _, pullback = vjp(decoder, z)
            (v,) = pullback(u)
            v = v / v.norm(dim=1, keepdim=True).clamp_min(1e-12)
    _, jv = jvp(decoder, (z,), (v,))
    return jv.flatten(1).norm(dim=1)


def chi2_radius(dim: int, delta: float) -> float:
    """R_z(δ): the radius with P(‖Z‖ ≤ R_z) = 1 − δ for Z ~ N(0, I_dim) (square root of a χ²_dim quantile)."""
    from scipy import stats

    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    return math.sqrt(stats.chi2.isf(delta, dim))
