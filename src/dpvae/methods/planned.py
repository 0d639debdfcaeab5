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
class DP2VAEParams(MethodParams):
    subsets: int = param(1000, "K disjoint subsets, one pre-trained encoder each", minimum=1)
    pretrain: bool = param(True, "stage 1: pre-train the K encoders non-privately (False = ablation)")
    pretrain_iters: int = param(2000, "stage-1 iterations per encoder (T_p)", minimum=0)
    iters: int = param(20000, "stage-2 decoder iterations (T)", minimum=1)
    batch_size: int = param(32, "records per stage-2 batch (B), drawn from one subset", minimum=1)
    clip: float = param(1.0, "per-example clipping norm C", exclusive_minimum=0)
    noise_multiplier: float | Literal["auto"] = param("auto", "sigma; auto = calibrated to the target epsilon")
    optimizer: Optimizer = param("adam", "optimizer")
    lr: float = param(0.0001, "stage-2 learning rate", exclusive_minimum=0)
    pretrain_lr: float = param(0.0001, "stage-1 learning rate", exclusive_minimum=0)
    latent_dim: int = param(8, "latent dimension", minimum=1)
    hidden_channels: list[int] = param([512, 256], "conv channels of the encoder (reversed in the decoder)")
    decoder_norm: Literal["group", "none"] = param("group", "normalisation in the released decoder")
    loss: Literal["bce", "mse"] = param("bce", "per-example reconstruction loss (KL weight 1)")


@dataclass(frozen=True)
class DPMERFParams(MethodParams):
    batch_size: int = param(100, "generator batch", minimum=1)
    epochs: int = param(5, "generator epochs", minimum=1)
    lr: float = param(0.01, "learning rate", exclusive_minimum=0)
    lr_decay: float = param(0.9, "learning-rate decay per epoch", exclusive_minimum=0, maximum=1)
    code_dim: int = param(5, "generator input code dimension", minimum=1)
    rff_dim: int = param(10000, "random Fourier features", minimum=1)
    rff_sigma: float = param(105.0, "kernel length scale of the random features", exclusive_minimum=0)
    gen_channels: list[int] = param([16, 8], "generator conv channels")
    noise_multiplier: float | Literal["auto"] = param("auto", "sigma of the one Gaussian release; auto = calibrated")


@dataclass(frozen=True)
class GSWGANParams(MethodParams):
    discriminators: int = param(1000, "K discriminators, one per disjoint subset", minimum=1)
    noise_multiplier: float = param(1.07, "sigma of the sanitised generator gradient", exclusive_minimum=0)
    batch_size: int = param(32, "records per discriminator batch", minimum=1)
    iters: int | Literal["auto"] = param(20000, "generator iterations; auto = as many as the target epsilon allows")
    pretrain_iters: int = param(2000, "warm-start iterations per discriminator (0 = none)", minimum=0)
    z_dim: int = param(10, "latent dimension", minimum=1)
    critic_iters: int = param(5, "discriminator steps per generator step", minimum=1)
    gp_weight: float = param(10.0, "gradient-penalty weight", minimum=0)


PLANNED: tuple[PlannedMethod, ...] = (
    PlannedMethod("dp2vae", "dp2vae", True, "DP2-VAE: non-private pre-trained encoders, DP decoder", DP2VAEParams,
                  Resources(threads=2, mem_mb=8000, runtime=600, gpu=True)),
    PlannedMethod("dp-merf", "dp2vae", True, "DP-MERF: random-feature mean embeddings, one Gaussian release", DPMERFParams,
                  Resources(threads=2, mem_mb=8000, runtime=120, gpu=True)),
    PlannedMethod("gs-wgan", "dp2vae", True, "GS-WGAN: gradient-sanitised WGAN with 1000 discriminators", GSWGANParams,
                  Resources(threads=2, mem_mb=16000, runtime=1440, gpu=True)),
)
