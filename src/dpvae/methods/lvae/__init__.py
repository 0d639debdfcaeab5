"""LVAE's family (Groß & Wunder; docs/papers.md §2): one conv VAE on binarised MNIST, three ways of training it.

* `constraint: none`, variant not private  — the plain VAE (Fig. 1);
* `constraint: none`, variant private      — VAE-DPSGD: standard DP-SGD (per-example clip C, Poisson
  sampling at q = B/N, σ calibrated by the RDP accountant to the run's target (ε, δ)) (Fig. 2);
* `constraint: gradient_penalty`           — LVAE: the negative ELBO plus λ·mean_z (‖J(z)‖ − L)² on the
  decoder's Jacobian at probe points (Fig. 3); `spectral_norm` — the alternative with every decoder layer
  divided by its operator norm and scaled by L^(1/5).

The LVAE variants are not private in the workflow's sense: their record (`model/privacy_claim.json`) is
the paper's analytic claim with its violated assumptions, never a ledger. The method also offers what the
white-box attacks and the outlier metric need: per-record ELBOs and reconstructions (`elbo`, `reconstruct`).

Here: the typed parameters and the registered method (light imports); `train.py` trains the network and uses the
trained one, `accounting.py` holds VAE-DPSGD's ledger and the Lipschitz variants' analytic claim.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from dpvae.methods.base import DPSGD_RELEASES_N, Method, Resources, RunContext, forward
from dpvae.methods.registry import register_method
from dpvae.models.precision import PRECISIONS
from dpvae.params import MethodParams, param
from dpvae.runspec import RunSpec

if TYPE_CHECKING:
    from dpvae.data.declared import Facts
    from dpvae.privacy.ledger import Ledger


@dataclass(frozen=True)
class LVAEParams(MethodParams):
    """LVAE's conv VAE on binarised MNIST (docs/papers.md §2.1); DP-SGD when the variant is private."""

    constraint: Literal["none", "gradient_penalty", "spectral_norm"] = param(
        "none", "Lipschitz constraint of the decoder"
    )
    latent_dim: int = param(16, "latent dimension", minimum=1)
    epochs: float = param(30, "passes over the training set", minimum=0)
    batch_size: int = param(256, "records per (expected) batch", minimum=1)
    optimizer: Literal["adam", "sgd"] = param("adam", "optimizer")
    lr: float = param(0.001, "learning rate", exclusive_minimum=0)
    clip: float = param(1.0, "DP-SGD per-example clipping norm", exclusive_minimum=0)
    noise_multiplier: float | Literal["auto"] = param("auto", "DP-SGD sigma; auto = calibrated to the target epsilon")
    lipschitz: float = param(1.0, "L: Lipschitz constant of the decoder's logit map", exclusive_minimum=0)
    gp_weight: float = param(10.0, "lambda: weight of the gradient penalty", minimum=0)
    gp_probes: Literal["prior", "posterior", "interpolate"] = param("prior", "where the gradient penalty probes z")
    gp_points: int = param(32, "probe points of the gradient penalty per step", minimum=1)
    gp_norm: Literal["spectral", "projection"] = param(
        "spectral", "Jacobian norm penalised: spectral (power iteration) or along one random direction"
    )
    gp_power_iterations: int = param(2, "power iterations per probe for the spectral norm", minimum=0)
    gp_sided: Literal["two", "one"] = param("two", "(||J||-L)^2 as WGAN-GP, or only max(0, ||J||-L)^2")
    lipschitz_probes: int = param(
        256, "prior probes at which the trained decoder's Jacobian norm is measured", minimum=1
    )


@register_method
class LVAE(Method):
    name = "lvae"
    paper = "lvae"
    private = True
    description = "LVAE conv VAE: plain, DP-SGD, or Lipschitz-constrained decoder"
    Params = LVAEParams
    kinds = ("image",)
    releases_n = DPSGD_RELEASES_N
    released = ("model.pt",)  # DP-SGD's iterate (a private run writes no Lipschitz claim)

    def data_errors(self, params: LVAEParams, facts: Facts) -> list[tuple[str, str]]:
        if facts.record_shape != (1, 28, 28):
            return [("", f"its networks take 1x28x28 images, the data's are {'x'.join(map(str, facts.record_shape))}")]
        return []

    RESOURCES = Resources(threads=2, mem_mb=3000, runtime=120)
    precisions = PRECISIONS

    def resources(self, params: MethodParams, facts: Facts | None) -> Resources:
        """About 4 CPU-minutes per epoch of 10,000 images (plus a third for the gradient penalty)."""
        n = params.max_train or 10_000
        factor = 1.4 if params.constraint == "gradient_penalty" else 1.0
        return Resources(threads=2, mem_mb=3000, runtime=max(10, math.ceil(5 * params.epochs * n / 10_000 * factor)))

    train = forward("dpvae.methods.lvae.train")
    recompute_ledger = forward("dpvae.methods.lvae.accounting")

    def planned_ledger(self, params: LVAEParams, spec: RunSpec, facts: Facts) -> Ledger | None:
        """VAE-DPSGD's: q = B/N, T = ceil(epochs N / B) (a Lipschitz variant has no ledger: None)."""
        from dpvae.methods.lvae import accounting

        if params.constraint != "none":
            return None
        epsilon, delta, n = spec.epsilon, spec.delta, facts.n_train
        q, steps = params.batch_size / n, math.ceil(params.epochs * n / params.batch_size)
        sigma = accounting.noise_multiplier(params, epsilon, delta, q, steps)
        return accounting.ledger(sigma, q, steps, params.clip, delta, epsilon)

    def load(self, ctx: RunContext, model_dir: Any = None) -> Any:
        """The trained network (eval mode, on the run's device)."""
        from dpvae.methods.lvae.train import load

        return load(ctx, model_dir)

    def sample(self, ctx: RunContext, n: int | None) -> dict[str, np.ndarray]:
        """`n` images (default: as many as training records): Bernoulli means σ(decoder(z)), z ~ N(0, I).

        The model is unconditional: every label is 0.
        """
        from dpvae.methods.lvae.train import sample

        return sample(ctx, n)

    def elbo(self, ctx: RunContext, x: np.ndarray, samples: int, stream: str) -> np.ndarray:
        """Per-record ELBO (nats) of images `x` [N, 1, 28, 28], reconstruction averaged over `samples` draws."""
        from dpvae.methods.lvae.train import elbo

        return elbo(ctx, x, samples, stream)

    def reconstruct(self, ctx: RunContext, x: np.ndarray) -> np.ndarray:
        """σ(decoder(μ(x))): the mean reconstruction of each image (posterior mean decoded)."""
        from dpvae.methods.lvae.train import reconstruct

        return reconstruct(ctx, x)
