"""VAE loss terms shared by the models: likelihoods, priors, KL estimates and the dimension-wise MMD.

Every function returns one value per example (or per sub-group), never a batch mean, so that DP-SGD
engines can clip per unit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import torch
from torch import Tensor

from dpvae.privacy.dpsgd.units import Units, pad_by_unit

MMD_KERNEL_SCALES = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0)  # Mathieu et al.'s MMD_DIM scales; kernel C = 2·scale
SPIKE_STD = 0.05  # sparse-prior spike standard deviation (code value, docs/papers.md A-P3)


def normal_log_prob(z: Tensor, loc: Tensor, scale: Tensor | float) -> Tensor:
    """Elementwise log N(z; loc, scale²)."""
    scale = torch.as_tensor(scale, dtype=z.dtype, device=z.device)
    return -0.5 * ((z - loc) / scale).square() - scale.log() - 0.5 * math.log(2 * math.pi)


def laplace_nll(x: Tensor, loc: Tensor, scale: float = 0.1) -> Tensor:
    """−log Laplace(x; loc, scale) summed over all but the first dimension (Mathieu's pixel likelihood)."""
    return ((x - loc).abs() / scale + math.log(2 * scale)).flatten(1).sum(1)


def sparse_prior_log_prob(
    z: Tensor, spike_weight: float, spike_std: float = SPIKE_STD, slab_std: float = 1.0
) -> Tensor:
    """Elementwise log[γ N(z; 0, spike_std²) + (1−γ) N(z; 0, slab_std²)] (spike-and-slab sparse prior)."""
    if not 0 <= spike_weight < 1:
        raise ValueError(f"spike_weight must be in [0, 1), got {spike_weight}")
    slab = normal_log_prob(z, torch.zeros_like(z), slab_std)
    if spike_weight == 0:
        return slab
    spike = normal_log_prob(z, torch.zeros_like(z), spike_std)
    return torch.logaddexp(spike + math.log(spike_weight), slab + math.log1p(-spike_weight))


def sample_sparse_prior(
    shape: Sequence[int],
    spike_weight: float,
    spike_std: float = SPIKE_STD,
    slab_std: float = 1.0,
    generator: torch.Generator | None = None,
) -> Tensor:
    """Draws from the spike-and-slab prior of `sparse_prior_log_prob`, on `generator`'s device."""
    where = generator.device if generator is not None else torch.device("cpu")
    spike = torch.rand(shape, generator=generator, device=where) < spike_weight
    return torch.where(spike, spike_std, slab_std) * torch.randn(shape, generator=generator, device=where)


class _CauchyKernelSum(torch.autograd.Function):
    """Σ_C Σ_d C/(C + x_d) over the last dimension of squared differences x, for the constants C.

    Fused: the backward needs only Σ_C −C/(C + x)², accumulated in the forward, instead of autograd
    keeping every scale's intermediates (about half the elementwise work of the plain expression).
    """

    generate_vmap_rule = True

    @staticmethod
    def forward(sq_diff: Tensor, constants: tuple[float, ...]) -> tuple[Tensor, Tensor]:
        total, slope = torch.zeros_like(sq_diff), torch.zeros_like(sq_diff)
        for c in constants:
            inverse = (sq_diff + c).reciprocal_()
            total.add_(inverse, alpha=c)
            slope.sub_(inverse.square_(), alpha=c)
        return total.sum(-1), slope

    @staticmethod
    def setup_context(ctx, inputs, output) -> None:
        ctx.save_for_backward(output[1])
        ctx.mark_non_differentiable(output[1])

    @staticmethod
    def backward(ctx, grad: Tensor, _: Tensor) -> tuple[Tensor, None]:
        (slope,) = ctx.saved_tensors
        return grad.unsqueeze(-1) * slope, None


def _kernel_sum(a: Tensor, b: Tensor, constants: tuple[float, ...]) -> Tensor:
    """[U, m, m] sums over dimensions and constants of C/(C + (a_i − b_j)²) for a, b [U, m, D]."""
    return _CauchyKernelSum.apply((a[:, :, None] - b[:, None]).square(), constants)[0]


def mmd_dim(posterior: Tensor, prior: Tensor, units: Units, scales: Sequence[float] = MMD_KERNEL_SCALES) -> Tensor:
    """Dimension-wise inverse-multiquadric MMD (Mathieu et al.'s MMD_DIM) within each unit, shape [U].

    `posterior` and `prior` are [B, D] samples, row i of each belonging to unit `units.index[i]`. Per
    unit of n members, dimension d and kernel k(a, b) = C/(C + (a − b)²) with C = 2·scale:
    [Σ_{i≠j} k(p_i, p_j) + Σ_{i≠j} k(q_i, q_j)]/(n(n−1)) − 2 Σ_{i,j} k(p_i, q_j)/n², summed over
    dimensions and scales. Units with fewer than two members get 0.
    """
    if posterior.shape != prior.shape or posterior.dim() != 2:
        raise ValueError(
            f"posterior and prior must both be [B, D], got {tuple(posterior.shape)} and {tuple(prior.shape)}"
        )
    constants = tuple(2.0 * s for s in scales)
    q, mask = pad_by_unit(posterior, units)
    p, _ = pad_by_unit(prior, units)
    n = mask.sum(1).to(posterior.dtype)
    pairs = (mask[:, :, None] & mask[:, None, :]).to(posterior.dtype)
    off_diagonal = pairs * (1 - torch.eye(mask.shape[1], dtype=posterior.dtype, device=posterior.device))
    within = ((_kernel_sum(q, q, constants) + _kernel_sum(p, p, constants)) * off_diagonal).sum((1, 2))
    across = (_kernel_sum(p, q, constants) * pairs).sum((1, 2))
    enough = n >= 2
    safe_n = torch.where(enough, n, torch.full_like(n, 2.0))
    return torch.where(enough, within / (safe_n * (safe_n - 1)) - 2 * across / safe_n.square(), torch.zeros_like(n))


class MixturePrior(NamedTuple):
    """Diagonal Gaussian mixture: weights [K], means [K, D], variances [K, D]."""

    weights: Tensor
    means: Tensor
    variances: Tensor


def gaussian_kl(mu: Tensor, logvar: Tensor, prior_mean: Tensor, prior_var: Tensor) -> Tensor:
    """KL(N(mu, exp(logvar)) ‖ N(prior_mean, prior_var)) for diagonal Gaussians, summed over the last dim."""
    return 0.5 * (prior_var.log() - logvar + (logvar.exp() + (mu - prior_mean).square()) / prior_var - 1).sum(-1)


def mixture_kl(mu: Tensor, logvar: Tensor, prior: MixturePrior | None = None) -> Tensor:
    """Per-example KL(q ‖ prior); for a mixture the Hershey–Olsen approximation −log Σ_k π_k exp(−KL(q ‖ N_k))
    (P3GM eq. 7). `prior=None` is N(0, I), where the value is the exact Gaussian KL."""
    if prior is None:
        return gaussian_kl(mu, logvar, torch.zeros_like(mu), torch.ones_like(mu))
    per_component = gaussian_kl(mu[:, None], logvar[:, None], prior.means, prior.variances)  # [B, K]
    return -torch.logsumexp(prior.weights.log() - per_component, dim=1)


def gaussian_mixture_log_prob(z: Tensor, means: Tensor, std: float) -> Tensor:
    """log Σ_k (1/K) N(z; means_k, std² I), summed over the last dimension of z [..., D]; means [K, D]."""
    per_component = normal_log_prob(z[..., None, :], means, std).sum(-1)  # [..., K]
    return torch.logsumexp(per_component, dim=-1) - math.log(means.shape[0])


def sample_gaussian_mixture(n: int, means: Tensor, std: float, generator: torch.Generator | None = None) -> Tensor:
    """n draws [n, D] from the equal-weight mixture of N(means_k, std² I), on the means' device.

    The draws come from `generator`'s device (the CPU without one), so a seeded CPU stream gives the same
    draws whether the model is on the CPU or a GPU."""
    where = generator.device if generator is not None else torch.device("cpu")
    component = torch.randint(means.shape[0], (n,), generator=generator, device=where)
    noise = torch.randn(n, means.shape[1], generator=generator, dtype=means.dtype, device=where)
    return means[component.to(means.device)] + std * noise.to(means.device)


def kld_inc(mu: Tensor, std: Tensor, prior: Tensor, units: Units, prior_log_prob) -> Tensor:
    """KL(p(z) ‖ q(z)) within each unit (Mathieu et al.'s KLD_INC), shape [U].

    Unit u with members s_u: mean over its prior draws ẑ_m (row m of `prior [B, D]`, one per member) of
    log p(ẑ_m) − log (1/|s_u|) Σ_{i∈s_u} q(ẑ_m | x_i), q(·|x_i) = N(mu_i, std_i²) (the unit's aggregate
    posterior). `prior_log_prob` maps [..., D] to log p summed over D. Empty units get 0.
    """
    if not (mu.shape == std.shape == prior.shape and mu.dim() == 2):
        raise ValueError(
            f"mu, std and prior must all be [B, D], got {tuple(mu.shape)}, {tuple(std.shape)} and {tuple(prior.shape)}"
        )
    z, mask = pad_by_unit(prior, units)  # [U, m, D], [U, m]
    loc, _ = pad_by_unit(mu, units)
    scale = pad_by_unit(std, units)[0] + (~mask)[..., None].to(std.dtype)  # padding: std 1
    log_q = normal_log_prob(z[:, :, None], loc[:, None], scale[:, None]).sum(-1)  # [U, m (draws), m (members)]
    floor = torch.finfo(log_q.dtype).min / 4
    log_q = log_q.masked_fill(~mask[:, None, :], floor)
    n = mask.sum(1).to(mu.dtype)
    safe_n = n.clamp_min(1)
    log_agg = torch.logsumexp(log_q, dim=2) - safe_n.log()[:, None]  # [U, m]
    gap = torch.where(mask, prior_log_prob(z) - log_agg, torch.zeros_like(log_agg))
    return gap.sum(1) / safe_n
