"""DP²-VAE's privacy accounting: the paper's pyvacy way ("paper") and a sound way (docs/papers.md §4.1, §4.5).

The training data are shuffled and split into K fixed disjoint subsets D_k; every encoder θ_k is trained
*non-privately on all of D_k* (stage 1, and again in stage 2); each decoder step draws k uniformly, a
batch of B records of D_k, clips the per-example decoder gradients at C and adds N(0, σ²C²) to their sum.

* paper: pyvacy's Eps(K, σ, T, δ): a Poisson-subsampled Gaussian at q = 1/K with multiplier σ, T steps
  (add/remove, classic conversion, order searched in [1, 512]). A claim: it assumes one record moves
  one clipped gradient, and that the unchosen subsets behave like "the batch without the record".
* sound: replace-one (the paper's relation; it keeps the shuffle-and-split partition fixed). Replacing
  one record of D_k changes θ_k, so every one of the B clipped decoder gradients of a step that draws k
  may move by 2C: sensitivity 2·B·C, multiplier σ/(2B). A step that draws another subset does not
  depend on the record at all, but its output is *another subset's* noisy sum, not the chosen sum
  without the record, so Poisson amplification does not apply; `accounting.fixed_partition_rdp` (joint
  convexity over the data-independent schedule) does: per step log(1 − q + q·e^{(α−1)α/(2s²)})/(α−1),
  s = σ/(2B), q = 1/K. The encoders must never be released.
"""

from __future__ import annotations

from typing import Any

from dpvae.privacy.accounting import solve_noise_multiplier
from dpvae.privacy.ledger import Accounting, Ledger, Mechanism, pyvacy_accounting, recorded_mechanisms
from dpvae.runspec import RunSpec

DP2VAE_DELTA = 1e-5
DP2VAE_NOTES = (
    "paper: pyvacy Eps(K, sigma, T, delta) (q = 1/K Poisson, T steps, sensitivity C, classic conversion, "
    "order searched in [1, 512]); a claim, not a bound: each encoder theta_k is trained non-privately on all "
    "of D_k, so one record moves every one of the B clipped decoder gradients of a step that draws D_k. "
    "sound: replace-one, sensitivity 2*B*C (multiplier sigma/(2B)) on the steps that draw the record's "
    "subset, fixed-partition sampling (probability 1/K per step, no Poisson amplification)"
)


def _check_counts(num_subsets: int, batch_size: int | None = None) -> None:
    if isinstance(num_subsets, bool) or int(num_subsets) != num_subsets or num_subsets < 1:
        raise ValueError(f"num_subsets must be an integer >= 1, got {num_subsets}")
    if batch_size is not None and (isinstance(batch_size, bool) or int(batch_size) != batch_size or batch_size < 1):
        raise ValueError(f"batch_size must be an integer >= 1, got {batch_size}")


def _paper_accounting(noise_multiplier: float, num_subsets: int, steps: int, clip: float, delta: float) -> Accounting:
    """T q = 1/K Poisson-subsampled Gaussians, classic conversion, order searched in [1, 512] (pyvacy)."""
    _check_counts(num_subsets)
    mechanism = Mechanism("decoder DP-SGD (T steps)", noise_multiplier, 1.0 / num_subsets, steps, clip)
    return pyvacy_accounting(mechanism, delta)


def _sound_accounting(
    noise_multiplier: float, num_subsets: int, steps: int, batch_size: int, clip: float, delta: float
) -> Accounting:
    """Replace-one: T steps, each drawing the record's subset with probability 1/K (fixed partition), then a
    Gaussian mechanism with sensitivity 2·B·C; same conversion and order search as the paper's."""
    _check_counts(num_subsets, batch_size)
    sensitivity = 2 * int(batch_size) * clip
    mechanism = Mechanism(
        "decoder DP-SGD, all B gradients of the drawn subset move",
        noise_multiplier * clip / sensitivity,
        1.0 / num_subsets,
        steps,
        sensitivity,
        sampling="fixed-partition",
    )
    return pyvacy_accounting(mechanism, delta, adjacency="replace-one")


def dp2vae_epsilon(num_subsets: int, noise_multiplier: float, steps: int, delta: float = DP2VAE_DELTA) -> float:
    """DP²-VAE's Eps(K, σ, T, δ), the pyvacy way: q = 1/K, T compositions, classic conversion,
    continuous order searched in [1, 512]."""
    return _paper_accounting(noise_multiplier, num_subsets, steps, 1.0, delta).epsilon


def dp2vae_noise(target_epsilon: float, num_subsets: int, steps: int, delta: float = DP2VAE_DELTA) -> float:
    """The smallest σ (rounded up) with Eps(K, σ, T, δ) <= `target_epsilon` (the inverse of `dp2vae_epsilon`)."""
    if isinstance(steps, bool) or int(steps) != steps or steps < 1:
        raise ValueError(f"steps must be an integer >= 1, got {steps}")
    return solve_noise_multiplier(lambda sigma: dp2vae_epsilon(num_subsets, sigma, steps, delta), target_epsilon)


def dp2vae_sound_epsilon(
    num_subsets: int, noise_multiplier: float, steps: int, batch_size: int, delta: float = DP2VAE_DELTA
) -> float:
    """ε of the sound accounting (module docstring) at (K, σ, T, B)."""
    return _sound_accounting(noise_multiplier, num_subsets, steps, batch_size, 1.0, delta).epsilon


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
    """Headline = the paper's pyvacy Eps (its claim, which the target is checked against, as the paper
    calibrates σ); sound = replace-one, 2·B·C, fixed-partition sampling (module docstring)."""
    paper = _paper_accounting(noise_multiplier, num_subsets, steps, clip, delta)
    sound = _sound_accounting(noise_multiplier, num_subsets, steps, batch_size, clip, delta)
    return Ledger(paper, sound, target_epsilon, notes)


def noise_multiplier(params: Any, epsilon: float, delta: float, subsets: int, steps: int) -> float:
    """σ: as configured, or the smallest σ whose pyvacy-style Eps(K, σ, T, δ) meets the target (the paper's way)."""
    if params.noise_multiplier != "auto":
        return float(params.noise_multiplier)
    return dp2vae_noise(epsilon, subsets, steps, delta)


def recompute_ledger(params: Any, spec: RunSpec, recorded: dict) -> Ledger:
    """A run's ledger computed again from its parameters and the batch size its sound accounting records."""
    (sound,) = recorded_mechanisms(recorded, "sound")
    batch = round(sound.sensitivity / (2 * params.clip))  # B = min(batch_size, subset size)
    sigma = noise_multiplier(params, spec.epsilon, spec.delta, params.subsets, params.iters)
    return dp2vae_ledger(
        sigma, params.subsets, params.iters, batch, params.clip, spec.delta, target_epsilon=spec.epsilon
    )
