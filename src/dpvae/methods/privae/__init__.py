"""PriVAE's family: the VAEs of Mathieu et al. (2019) trained non-privately (`vae-conv`: PriVAE's reference curves,
Adam; docs/papers.md §1.4) or by term-wise DP-SGD (`privae`, Takahashi et al. 2020; docs/papers.md §1.1).

The model follows the data: 32×32 images get the conv VAE with the sparse prior (`models/conv_vae.py`;
BatchNorm as Mathieu where `norm: batch`), 2-d points the pinwheel MLP VAE with the mixture prior
(`models/pinwheel_vae.py`). Each step minimises mean_i φ(x_i) + mean_j ψ(s_j) (`models/latent_vae.py`); the
batch-wise divergence ψ is estimated on `groups` random sub-groups (1 = the whole batch, Mathieu's setting).

PriVAE: each step Poisson-samples a batch (rate B/N), splits it into `groups` sub-groups by independent uniform
labels, and releases g̃ = (Σ_i clip_C1 ∇φ(x_i) + N(0, (σ'C1)²))/B + (Σ_j clip_C2 ∇ψ(s_j) + N(0, (σ'C2)²))/b
(`privacy.dpsgd.TermwiseDPSGD`), then takes a plain SGD step. σ' = κσ, σ being ordinary DP-SGD's
multiplier for the target (ε, δ) at the same rate and step count; κ per the `kappa` option (the
paper's closed form, √5, or the tight factor; docs/privacy.md). `engine: micro | batch` are
Table 1's aggregation baselines (clip C, noise σ on the paper's sensitivities B·C and C). Every run writes
the paper's ledger and the sound one (`accounting.py`); training and sampling are in `train.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from dpvae.methods.base import DPSGD_RELEASES_N, Method, Resources, forward
from dpvae.methods.registry import register_method
from dpvae.models.precision import PRECISIONS
from dpvae.params import MethodParams, param
from dpvae.runspec import RunSpec

if TYPE_CHECKING:
    from dpvae.data.declared import Facts
    from dpvae.privacy.ledger import Ledger

Optimizer = Literal["adam", "amsgrad", "sgd"]


@dataclass(frozen=True)
class VAEConvParams(MethodParams):
    """Mathieu et al.'s conv VAE on 32x32 Fashion-MNIST, or their pinwheel MLP VAE (docs/papers.md §1.2)."""

    epochs: float = param(10, "passes over the training set", minimum=0)
    batch_size: int = param(256, "records per (expected) batch B", minimum=1)
    groups: int = param(1, "sub-groups b the batch-wise divergence is estimated on (1 = the whole batch)", minimum=1)
    mc_samples: int = param(1, "L Monte-Carlo samples of the reconstruction term", minimum=1)
    latent_dim: int = param(50, "latent dimension D", minimum=1)
    prior: Literal["sparse", "mog", "normal"] = param(
        "sparse", "prior p(z): spike-and-slab (conv), 4-component mixture (pinwheel) or N(0, I) (conv)"
    )
    spike_weight: float = param(0.8, "gamma: weight of the sparse prior's spike", minimum=0, maximum=0.999)
    spike_std: float = param(0.05, "standard deviation of the sparse prior's spike", exclusive_minimum=0)
    prior_variance: float = param(0.03, "variance of each component of the pinwheel mixture prior", exclusive_minimum=0)
    hidden: int = param(100, "hidden width of the pinwheel MLP", minimum=1)
    beta: float = param(1.0, "weight of the per-example KL term", minimum=0)
    divergence: Literal["none", "mmd_dim", "kl_pq"] = param(
        "none", "batch-wise divergence: dimension-wise MMD or KL(p(z)||q(z))"
    )
    alpha: float = param(0.0, "weight of the batch-wise divergence", minimum=0)
    norm: Literal["group", "batch", "none"] = param(
        "group", "normalisation layers of the conv VAE (BatchNorm only without DP)"
    )
    optimizer: Optimizer = param(
        "adam", "optimizer (amsgrad = Adam with the AMSGrad correction, as Mathieu et al.'s main.py)"
    )
    lr: float = param(0.0005, "learning rate", exclusive_minimum=0)


def vae_resources(params: VAEConvParams, base: Resources) -> Resources:
    """Pinwheel runs are small (a 2-d MLP); image runs keep the method's declared needs."""
    if params.prior == "mog":
        return Resources(threads=1, mem_mb=1000, runtime=30)
    return base


@register_method
class VAEConv(Method):
    """Mathieu et al.'s VAE (+ MMD) trained non-privately with Adam."""

    name = "vae-conv"
    paper = "privae"
    private = False
    description = "non-private conv VAE (+ batch-wise divergence) of Mathieu et al."
    Params = VAEConvParams

    def data_defaults(self, facts: Facts) -> dict[str, Any]:
        """A table gets the pinwheel MLP VAE's prior and latent size, and a batch of at most a quarter of the training
        records ([choice]: q <= 1/4; N is public under the replace-one headline), so that a table trains without
        stating them (issue 64)."""
        if facts.kind != "table":
            return {}
        return {"prior": "mog", "latent_dim": 2, "batch_size": max(1, min(256, facts.n_train // 4))}

    def data_errors(self, params: VAEConvParams, facts: Facts) -> list[tuple[str, str]]:
        """The conv VAE takes 1x32x32 images; [d] records get the pinwheel MLP VAE, with the mixture prior."""
        if facts.kind == "table":
            errors = [] if params.prior == "mog" else [("prior", "the MLP VAE for [d] records has the prior 'mog'")]
            if params.latent_dim != 2:  # refused here, not by the model 20 s into training (issue 64)
                errors.append(("latent_dim", "the MLP VAE's mixture prior for [d] records is 2-dimensional: set 2"))
            return errors
        if facts.record_shape != (1, 32, 32):
            return [("", f"the conv VAE takes 1x32x32 images, the data's are {'x'.join(map(str, facts.record_shape))}")]
        return []

    RESOURCES = Resources(threads=2, mem_mb=4000, runtime=60)
    precisions = PRECISIONS

    def resources(self, params: VAEConvParams, facts: Facts | None) -> Resources:
        return vae_resources(params, self.RESOURCES)

    train = forward("dpvae.methods.privae.train", "train_vae")  # a private run returns its ledger
    sample = forward("dpvae.methods.privae.train", "sample_vae")


@dataclass(frozen=True)
class PriVAEParams(VAEConvParams):
    engine: Literal["termwise", "micro", "batch"] = param(
        "termwise", "term-wise DP-SGD or the micro/batch-aggregation baselines"
    )
    clip_sample: float = param(0.05, "C1: clipping norm of the per-example term", exclusive_minimum=0)
    clip_batch: float = param(0.0, "C2: clipping norm of the per-sub-group term (0 = no batch-wise term)", minimum=0)
    clip: float = param(0.0002, "C of the micro/batch-aggregation baselines", exclusive_minimum=0)
    kappa: Literal["paper", "sqrt5", "tight"] = param(
        "paper",
        "noise calibration: the paper's (headline = paper ledger) or sound (sqrt5, tight: headline = "
        "sound ledger); see docs/privacy.md#privacy-accounting",
    )


@register_method
class PriVAE(VAEConv):
    """Term-wise DP-SGD (or a Table-1 aggregation baseline) on Mathieu et al.'s VAEs, plain SGD: `vae-conv`'s
    models, training loop and sampling, private."""

    name = "privae"
    private = True
    description = "PriVAE: conv/MLP VAE trained with term-wise DP-SGD or the aggregation baselines"
    releases_n = f"{DPSGD_RELEASES_N}; on a table, the default batch from N (a quarter of it, at most 256)"
    Params = PriVAEParams
    RESOURCES = Resources(threads=2, mem_mb=4000, runtime=120)
    released = ("model.pt",)  # the engine's iterate

    recompute_ledger = forward("dpvae.methods.privae.accounting")

    def planned_ledger(self, params: PriVAEParams, spec: RunSpec, facts: Facts) -> Ledger:
        """q = B/N, T = ⌈epochs·N/B⌉, the noise calibrated as training calibrates it (κ from the parameters and δ
        alone, the aggregation baselines' sensitivities from their clip norm): nothing read from the data."""
        from dpvae.methods.privae.accounting import planned_ledger

        return planned_ledger(params, spec, facts.n_train)
