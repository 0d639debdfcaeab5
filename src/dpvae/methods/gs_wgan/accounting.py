"""GS-WGAN's accounting: the authors' way, the ledger's paper and sound accountings.

Accounting. GS-WGAN's authors (`evaluation/privacy_analysis.py`) compose iterations × batch-size subsampled
Gaussians (multiplier σ, probability 1/K) with autodp's bound for sampling *without replacement* (Wang, Balle
& Kasiviswanathan 2019, Thm 9) and the classic conversion: `authors_epsilon`. The ledger's "paper"
accounting is the same composition under this project's RDP accountant (Poisson add/remove-one, classic
conversion, continuous order): a tighter curve for the same mechanism list (GS-WGAN's default gives about
5 where autodp says 10; docs/papers.md A-D10). Both treat each of the B sanitised image gradients of a step as
a separately subsampled mechanism, although the drawn discriminator, trained non-privately on its whole
subset, makes all B depend on every record of that subset (docs/papers.md §4.5.2, the same gap as DP²-VAE's).
"""

from __future__ import annotations

import math
from typing import Any

from dpvae.errors import ConfigError
from dpvae.privacy.ledger import Accounting, Ledger, Mechanism, pyvacy_accounting, recorded_mechanisms
from dpvae.runspec import RunSpec

NOTES = (
    "paper: GS-WGAN's composition (iterations x batch-size Gaussians with multiplier sigma on the "
    "sanitised image gradients, each subsampled with probability 1/K) under this project's RDP accountant "
    "(Poisson add/remove-one, classic conversion, continuous order); GS-WGAN's authors evaluate the same "
    "composition with autodp's bound for sampling without replacement (replace-one), which is looser: "
    "epsilon_authors = {authors:.6g} for this run (model.json, metric gswgan_epsilon). Neither is a sound "
    "bound: the drawn discriminator is trained non-privately on its whole subset, so all B sanitised "
    "gradients of a step depend on each of its records, and the subsets are fixed, not resampled. sound: "
    "replace-one, the B gradients as one Gaussian mechanism (multiplier sigma/sqrt(B)) on the steps that "
    "draw the record's subset, fixed-partition sampling with probability 1/K, no Poisson amplification."
)


def authors_epsilon(sigma: float, discriminators: int, iters: int, batch: int, delta: float) -> float:
    """GS-WGAN's `privacy_analysis.py`: autodp, prob = 1/K, coeff = iterations · batch size."""
    try:
        from autodp import rdp_acct, rdp_bank
    except ImportError as error:  # pinned in envs/requirements.txt; a clear message if an environment lacks it
        raise ConfigError("GS-WGAN's authors' accounting needs the 'autodp' package (pip install autodp)") from error
    accountant = rdp_acct.anaRDPacct()
    accountant.compose_subsampled_mechanism(
        lambda a: rdp_bank.RDP_gaussian({"sigma": sigma}, a), 1.0 / discriminators, coeff=iters * batch
    )
    return float(accountant.get_eps(delta))


def authors_iters(
    target: float, sigma: float, discriminators: int, batch: int, delta: float, upper: int = 1 << 20
) -> int:
    """The most generator iterations whose authors' ε stays within `target` (A-D10)."""
    low, high = 0, upper
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (
            (middle, high) if authors_epsilon(sigma, discriminators, middle, batch, delta) <= target else (low, middle)
        )
    if low < 1:
        raise ConfigError(f"GS-WGAN: not one iteration fits epsilon = {target} with sigma = {sigma}")
    return low


def accounting(sigma: float, discriminators: int, iters: int, batch: int, clip: float, delta: float) -> Accounting:
    """The authors' composition (iterations · B subsampled Gaussians) under the project's RDP accountant."""
    mechanism = Mechanism(
        "GS-WGAN sanitised image gradients (iterations x batch size)",
        sigma,
        1.0 / discriminators,
        iters * batch,
        2 * clip / batch,
    )
    return pyvacy_accounting(mechanism, delta)


def sound_accounting(
    sigma: float, discriminators: int, iters: int, batch: int, clip: float, delta: float
) -> Accounting:
    """Replace-one, fixed partition. A step releases the B sanitised image gradients g_i + N(0, (2σC/B)²I),
    ‖g_i‖ ≤ C/B. Replacing a record of D_k changes discriminator k (trained non-privately on all of D_k), so
    on a step that draws k every g_i may move by 2C/B: joint sensitivity 2C/√B, multiplier σ/√B; a step that
    draws another subset does not depend on the record, and k is drawn with probability 1/K from fixed
    subsets (`accounting.fixed_partition_rdp`, no Poisson amplification)."""
    mechanism = Mechanism(
        "GS-WGAN step: all B image gradients of the drawn subset move",
        sigma / math.sqrt(batch),
        1.0 / discriminators,
        iters,
        2 * clip / math.sqrt(batch),
        sampling="fixed-partition",
    )
    return pyvacy_accounting(mechanism, delta, adjacency="replace-one")


def ledger(
    sigma: float,
    discriminators: int,
    iters: int,
    batch: int,
    clip: float,
    delta: float,
    target: float | None,
    authors: float,
) -> Ledger:
    """A run's ledger: `accounting` (paper), `sound_accounting`, the authors' ε in the notes."""
    return Ledger(
        accounting(sigma, discriminators, iters, batch, clip, delta),
        sound_accounting(sigma, discriminators, iters, batch, clip, delta),
        target,
        NOTES.format(authors=authors),
    )


def recompute_ledger(params: Any, spec: RunSpec, recorded: dict) -> Ledger:
    """A run's ledger computed again from its parameters and the batch size and iterations its paper accounting
    records (T·B releases at sensitivity 2C/B)."""
    (gradients,) = recorded_mechanisms(recorded)
    batch = round(2 * params.clip / gradients.sensitivity)
    sigma, k, iters, delta = params.noise_multiplier, params.discriminators, gradients.steps // batch, spec.delta
    return ledger(
        sigma, k, iters, batch, params.clip, delta, spec.epsilon, authors_epsilon(sigma, k, iters, batch, delta)
    )
