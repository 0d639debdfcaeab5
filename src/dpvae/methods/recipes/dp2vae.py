"""DP²-VAE's privacy accounting: the paper's pyvacy way and a sound way (PAPERS.md §4.5, §5)."""

from __future__ import annotations

from dpvae.privacy.accounting import PYVACY_ORDER_BOUNDS, solve_noise_multiplier
from dpvae.privacy.ledger import Accounting, Ledger, Mechanism


DP2VAE_DELTA = 1e-5
DP2VAE_NOTES = (
    "headline: pyvacy Eps(K, sigma, T, delta) (q = 1/K, T steps, classic conversion, order searched in "
    "[1, 512]); strict: T*B compositions (GS-WGAN style), because the non-privately trained encoder makes "
    "all B per-example gradients of a step depend on every record of the chosen subset"
)


def _dp2vae_accounting(
    name: str, noise_multiplier: float, num_subsets: int, compositions: int, clip: float, delta: float
) -> Accounting:
    """`compositions` q = 1/K subsampled Gaussians, classic conversion, order searched in [1, 512]."""
    if isinstance(num_subsets, bool) or int(num_subsets) != num_subsets or num_subsets < 1:
        raise ValueError(f"num_subsets must be an integer >= 1, got {num_subsets}")
    mechanism = Mechanism(name, noise_multiplier, 1.0 / num_subsets, compositions, clip)
    return Accounting(
        (mechanism,), delta, accountant="rdp-order-search", conversion="classic", orders=PYVACY_ORDER_BOUNDS
    )


def dp2vae_epsilon(num_subsets: int, noise_multiplier: float, steps: int, delta: float = DP2VAE_DELTA) -> float:
    """DP²-VAE's Eps(K, σ, T, δ), the pyvacy way: q = 1/K, T compositions, classic conversion,
    continuous order searched in [1, 512]."""
    return _dp2vae_accounting("decoder DP-SGD", noise_multiplier, num_subsets, steps, 1.0, delta).epsilon


def dp2vae_noise(target_epsilon: float, num_subsets: int, steps: int, delta: float = DP2VAE_DELTA) -> float:
    """σ with Eps(K, σ, T, δ) = `target_epsilon` (the inverse of `dp2vae_epsilon`)."""
    if isinstance(steps, bool) or int(steps) != steps or steps < 1:
        raise ValueError(f"steps must be an integer >= 1, got {steps}")
    return solve_noise_multiplier(lambda sigma: dp2vae_epsilon(num_subsets, sigma, steps, delta), target_epsilon)


def dp2vae_ledger(
    noise_multiplier: float,
    num_subsets: int,
    steps: int,
    batch_size: int,
    clip: float = 1.0,
    delta: float = DP2VAE_DELTA,
    target_epsilon: float | None = None,
    notes: str = DP2VAE_NOTES,
) -> Ledger:
    """Paper: pyvacy's Eps (q = 1/K, T steps). Strict: GS-WGAN-style T·B compositions of the same
    q = 1/K subsampled Gaussian, because the non-privately trained encoder θ_k makes every one of the
    B per-example decoder gradients depend on each record of the chosen subset (PAPERS.md §4.5.2).
    Both use the classic conversion and pyvacy's continuous order search."""
    if isinstance(batch_size, bool) or int(batch_size) != batch_size or batch_size < 1:
        raise ValueError(f"batch_size must be an integer >= 1, got {batch_size}")
    paper = _dp2vae_accounting("decoder DP-SGD (T steps)", noise_multiplier, num_subsets, steps, clip, delta)
    strict = _dp2vae_accounting(
        "decoder DP-SGD (T·B compositions)", noise_multiplier, num_subsets, steps * int(batch_size), clip, delta
    )
    return Ledger(paper, strict, target_epsilon, notes)
