"""Methods the experiments name whose modules do not exist yet: their typed parameters and resources.

Implementing one = writing `methods/<name>.py` (move its Params class there, register the Method) and
deleting its entry here; a test refuses a name that is both planned and registered.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from dpvae.methods.base import PlannedMethod, Resources
from dpvae.params import MethodParams, param

Optimizer = Literal["adam", "sgd"]


@dataclass(frozen=True)
class _MLPVAEParams(MethodParams):
    hidden: int = param(1000, "width of the MLP's hidden layer", minimum=1)
    latent_dim: int = param(30, "latent dimension", minimum=1)
    optimizer: Optimizer = param("adam", "optimizer of the decoder (and encoder) updates")
    lr: float = param(0.001, "learning rate", exclusive_minimum=0)
    epochs: float = param(1, "passes over the training set", minimum=0)
    batch_size: int = param(100, "records per (expected) batch", minimum=1)


@dataclass(frozen=True)
class DPVAEParams(_MLPVAEParams):
    clip: float = param(1.0, "per-example clipping norm C", exclusive_minimum=0)
    sigma_sgd: float | Literal["auto"] = param("auto", "DP-SGD noise multiplier; auto = calibrated to the target epsilon")
    batching: Literal["poisson", "code"] = param("poisson", "Poisson sampling (as accounted) or the reference code's fixed batches drawn with replacement")


@dataclass(frozen=True)
class DPGMParams(DPVAEParams):
    clusters: int = param(10, "k of DP kernel k-means", minimum=1)
    rff_dim: int = param(1000, "random Fourier features of the kernel k-means", minimum=1)
    cluster_budget_fraction: float = param(0.1, "share of epsilon spent on clustering", exclusive_minimum=0, maximum=1)


@dataclass(frozen=True)
class PrivBayesParams(MethodParams):
    degree: int = param(2, "k: parents per attribute in the Bayesian network", minimum=1)
    histogram_bins: int = param(20, "bins of every continuous attribute", minimum=2)
    pixel_bins: int = param(2, "bins of image pixels (2 = binarised)", minimum=2)


@dataclass(frozen=True)
class RyanParams(MethodParams):
    public_fraction: float = param(0.1, "share of the training split used non-privately to select marginals", exclusive_minimum=0, maximum=0.5)
    bins: int = param(10, "equal-width bins of continuous attributes", minimum=2)
    triple_threshold: float = param(0.1, "L1 dependence above which a triple marginal is measured", minimum=0)
    iterations: int = param(10000, "mirror-descent iterations of the private-pgm estimate", minimum=1)
    pixel_bins: int = param(2, "bins of image pixels (2 = binarised)", minimum=2)


@dataclass(frozen=True)
class FashionVAEParams(MethodParams):
    """Mathieu et al.'s conv VAE on 32x32 Fashion-MNIST, or their pinwheel MLP VAE (PAPERS.md 1.2)."""

    epochs: float = param(10, "passes over the training set", minimum=0)
    batch_size: int = param(256, "records per (expected) batch B", minimum=1)
    groups: int = param(1, "sub-groups b the batch-wise divergence is estimated on (1 = the whole batch)", minimum=1)
    mc_samples: int = param(1, "L Monte-Carlo samples of the reconstruction term", minimum=1)
    latent_dim: int = param(50, "latent dimension D", minimum=1)
    prior: Literal["sparse", "mog", "normal"] = param("sparse", "prior p(z): spike-and-slab, 4-component mixture or N(0, I)")
    spike_weight: float = param(0.8, "gamma: weight of the sparse prior's spike", minimum=0, maximum=1)
    spike_std: float = param(0.05, "standard deviation of the sparse prior's spike", exclusive_minimum=0)
    beta: float = param(1.0, "weight of the per-example KL term", minimum=0)
    divergence: Literal["none", "mmd_dim", "kl_pq"] = param("none", "batch-wise divergence: dimension-wise MMD or KL(p(z)||q(z))")
    alpha: float = param(0.0, "weight of the batch-wise divergence", minimum=0)
    norm: Literal["group", "batch", "none"] = param("group", "normalisation layers (BatchNorm only without DP)")
    optimizer: Optimizer = param("adam", "optimizer")
    lr: float = param(0.0005, "learning rate", exclusive_minimum=0)


@dataclass(frozen=True)
class PriVAEParams(FashionVAEParams):
    engine: Literal["termwise", "micro", "batch"] = param("termwise", "term-wise DP-SGD or the micro/batch-aggregation baselines")
    clip_sample: float = param(0.05, "C1: clipping norm of the per-example term", exclusive_minimum=0)
    clip_batch: float = param(0.0, "C2: clipping norm of the per-sub-group term (0 = no batch-wise term)", minimum=0)
    clip: float = param(0.0002, "C of the micro/batch-aggregation baselines", exclusive_minimum=0)
    kappa: Literal["paper", "sqrt5", "tight"] = param("paper", "term-wise noise factor sigma'/sigma: paper (Theorem 2, a claim), sqrt5 (sound, loose), tight (sound, exact); README")


@dataclass(frozen=True)
class LVAEParams(MethodParams):
    """LVAE's conv VAE on binarised MNIST (PAPERS.md 2.1); DP-SGD when the variant is private."""

    constraint: Literal["none", "gradient_penalty", "spectral_norm"] = param("none", "Lipschitz constraint of the decoder")
    latent_dim: int = param(16, "latent dimension", minimum=1)
    epochs: float = param(30, "passes over the training set", minimum=0)
    batch_size: int = param(256, "records per (expected) batch", minimum=1)
    optimizer: Optimizer = param("adam", "optimizer")
    lr: float = param(0.001, "learning rate", exclusive_minimum=0)
    clip: float = param(1.0, "DP-SGD per-example clipping norm", exclusive_minimum=0)
    noise_multiplier: float | Literal["auto"] = param("auto", "DP-SGD sigma; auto = calibrated to the target epsilon")
    lipschitz: float = param(1.0, "L: Lipschitz constant of the decoder", exclusive_minimum=0)
    gp_weight: float = param(10.0, "lambda: weight of the gradient penalty", minimum=0)
    gp_probes: Literal["prior", "posterior", "interpolate"] = param("prior", "where the gradient penalty probes z")


@dataclass(frozen=True)
class P3GMParams(MethodParams):
    """P3GM (DP-PCA -> DP-EM -> DP-SGD decoder; PAPERS.md 3.1): the paper's and the reference code's switches."""

    hidden: int = param(1000, "width of the MLP's hidden layer", minimum=1)
    optimizer: Optimizer = param("adam", "optimizer of the decoding phase (code: Adam; paper: SGD)")
    lr: float = param(0.001, "learning rate", exclusive_minimum=0)
    epochs: float = param(1, "DP-SGD passes over the training set", minimum=0)
    batch_size: int = param(100, "records per (expected) batch", minimum=1)

    pca_components: int = param(30, "d' = min(this, d) DP-PCA components", minimum=1)
    sigma_pca: float = param(5.0, "sigma_p of DP-PCA (0 = no noise)", minimum=0)
    sigma_em: float = param(100.0, "sigma_e of DP-EM (0 = no noise)", minimum=0)
    em_iters: int = param(20, "T_e: DP-EM iterations", minimum=0)
    em_components: int = param(1, "mixture components of the DP-EM prior (paper 3, code 1)", minimum=1)
    account_em_init: bool = param(False, "count the initial noisy M-step in the paper ledger (the code does not)")
    pca_mean: Literal["dp", "zero", "nonprivate"] = param("dp", "DP-PCA centring: a released DP mean, none, or the code's exact mean (not DP)")
    sigma_mean: float = param(20.0, "noise multiplier of the DP centring mean (rows clipped to sqrt(d))", exclusive_minimum=0)
    clip: float | None = param(1.0, "per-example clipping norm C (null = no clipping, non-private PGM)")
    sigma_sgd: float | Literal["auto"] = param("auto", "DP-SGD noise multiplier: a number is raised (never lowered) to meet the target exactly; auto = calibrated")
    pretrain_steps: int = param(3000, "non-private decoder pre-training steps on DP outputs (code; 0 = none)", minimum=0)
    sampling_prior: Literal["normal", "mog"] = param("normal", "prior of released samples: N(0, I) (code) or the DP-MoG (paper)")
    encoder_variance: Literal["learned", "zero"] = param("learned", "sigma_phi(x) learned, or 0 (P3GM(AE))")
    batching: Literal["poisson", "code"] = param("poisson", "Poisson sampling (as accounted) or the code's fixed batches with replacement")
    record_every_epoch: bool = param(False, "record losses per iteration and utility per epoch (fig 7)")


PLANNED: tuple[PlannedMethod, ...] = (
    PlannedMethod("privae", "privae", True, "PriVAE: conv/MLP VAE trained with term-wise DP-SGD or the aggregation baselines",
                  PriVAEParams, Resources(threads=2, mem_mb=4000, runtime=120)),
    PlannedMethod("vae-conv", "privae", False, "non-private conv VAE (+ batch-wise divergence) of Mathieu et al.",
                  FashionVAEParams, Resources(threads=2, mem_mb=4000, runtime=60)),
    PlannedMethod("lvae", "lvae", True, "LVAE conv VAE: plain, DP-SGD, or Lipschitz-constrained decoder", LVAEParams,
                  Resources(threads=2, mem_mb=4000, runtime=120)),
    PlannedMethod("p3gm", "p3gm", True, "P3GM: DP-PCA + DP-EM encoder, DP-SGD decoder", P3GMParams,
                  Resources(threads=2, mem_mb=4000, runtime=30)),
    PlannedMethod("vae-mlp", "p3gm", False, "non-private MLP VAE with N(0, I) prior (P3GM's VAE)", _MLPVAEParams),
    PlannedMethod("dp-vae", "p3gm", True, "MLP VAE trained end to end with DP-SGD", DPVAEParams),
    PlannedMethod("privbayes", "p3gm", True, "PrivBayes (DataSynthesizer, correlated-attribute mode)", PrivBayesParams),
    PlannedMethod("ryan", "p3gm", True, "Ryan McKenna's NIST-2018 marginal method on private-pgm (mbi)", RyanParams),
    PlannedMethod("dp-gm", "p3gm", True, "DP-GM: DP kernel k-means + per-cluster DP-SGD VAEs", DPGMParams),
)
