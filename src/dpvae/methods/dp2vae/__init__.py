"""DP²-VAE (Jiang et al. 2022; docs/papers.md §4.1-4.2, 4.5-4.6): non-private pre-trained encoders, DP decoder.

The training split is shuffled and cut into K disjoint subsets. Stage 1 pre-trains one encoder per subset
(each with a throw-away decoder, batch gradients clipped, no noise), all K at once (`models.stacked`).
Stage 2 re-initialises the decoder and trains it with partial-model DP-SGD: each step draws a subset k, a
batch of B of its records, clips the per-example decoder gradients (noise on their sum) and updates
encoder k with its clipped mean gradient, without noise (A-D2). Only the decoder is released. The
implementation is in `dpvae.methods.dp2vae.train` (imported on use: validation stays light).

Stage 1 is its own job (`stage1_params`, docs/dp2vae.md): it does not depend on epsilon or on any stage-2
setting, so every run with the same dataset, seed and stage-1 parameters loads the same encoders. Without
pre-training (`pretrain: false` or T_p = 0) there is no stage-1 job: the run initialises its encoders.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from dpvae.methods.base import Method, Resources, forward, halvings_error, subsets_error
from dpvae.methods.registry import register_method
from dpvae.params import CompileMode, MethodParams, param
from dpvae.runspec import RunSpec
from dpvae.runtimes import Work

if TYPE_CHECKING:
    from dpvae.data.declared import Facts
    from dpvae.privacy.ledger import Ledger


@dataclass(frozen=True)
class DP2VAEParams(MethodParams):
    subsets: int = param(1000, "K disjoint subsets, one pre-trained encoder each", minimum=1)
    pretrain: bool = param(True, "stage 1: pre-train the K encoders non-privately (False = ablation)")
    pretrain_iters: int = param(50, "stage-1 iterations per encoder (T_p; docs/dp2vae.md: the T_p study)", minimum=0)
    iters: int = param(20000, "stage-2 decoder iterations (T)", minimum=1)
    batch_size: int = param(32, "records per stage-2 batch (B), drawn from one subset", minimum=1)
    clip: float = param(1.0, "per-example clipping norm C", exclusive_minimum=0)
    noise_multiplier: float | Literal["auto"] = param("auto", "sigma; auto = calibrated to the target epsilon")
    optimizer: Literal["adam"] = param("adam", "optimizer (Adam, Appendix E.3)")
    lr: float = param(0.0001, "stage-2 learning rate", exclusive_minimum=0)
    pretrain_lr: float = param(0.0001, "stage-1 learning rate", exclusive_minimum=0)
    latent_dim: int = param(8, "latent dimension", minimum=1)
    hidden_channels: list[int] = param([512, 256], "conv channels of the encoder (reversed in the decoder)")
    decoder_norm: Literal["group", "none"] = param(
        "group", "normalisation in the released decoder (encoders: GroupNorm)"
    )
    loss: Literal["bce", "mse"] = param("bce", "per-example reconstruction loss (KL weight 1)")
    chunk: int = param(50, "stage-1 encoders trained at once (vectorised); memory grows with it", minimum=1)
    compile: CompileMode = param(
        False, "run the stage-2 step through torch.compile in this mode (reduce-overhead: CUDA graphs on CUDA)"
    )


@register_method
class DP2VAE(Method):
    name = "dp2vae"
    paper = "dp2vae"
    private = True
    description = "DP2-VAE: non-private pre-trained encoders, DP decoder"
    Params = DP2VAEParams
    released = ("decoder.pt",)  # the DP decoder (the encoders stay in the shared first stage's directory)
    kinds = ("image",)
    releases_n = "the K subsets hold N // K records each (the sound ledger's B = min(batch_size, N // K))"

    def data_errors(self, params: DP2VAEParams, facts: Facts) -> list[tuple[str, str]]:
        problems = [("hidden_channels", halvings_error(facts, len(params.hidden_channels)))]
        return [(k, v) for k, v in [*problems, ("subsets", subsets_error(params.subsets, facts))] if v]

    def resources(self, params: DP2VAEParams, facts: Facts | None) -> Resources:
        """Cost ~ T stage-2 steps (a stage-2 step costs ~4 stage-1 steps) of a model as wide as its widest
        layer; stage 1 is its own job (`stage1_resources`)."""
        return _sized(4 * params.iters, params, Work("dp2vae.stage2", params.iters, _shape(params)))

    def stage1_params(self, params: DP2VAEParams) -> dict[str, Any] | None:
        """Stage 1 reads the data subsample, the partition into K subsets, the architecture (its throw-away
        decoders too), B, C, T_p, its learning rate and `chunk` (the encoders trained together share one
        batch stream); not epsilon, delta, sigma, T or the stage-2 learning rate. None without pre-training."""
        if not params.pretrain or params.pretrain_iters == 0:
            return None
        return {
            "max_train": params.max_train,
            "subsets": params.subsets,
            "pretrain_iters": params.pretrain_iters,
            "pretrain_lr": float(params.pretrain_lr),
            "batch_size": params.batch_size,
            "clip": float(params.clip),
            "latent_dim": params.latent_dim,
            "hidden_channels": list(params.hidden_channels),
            "decoder_norm": params.decoder_norm,
            "loss": params.loss,
            "chunk": params.chunk,
        }

    def stage1_resources(self, params: DP2VAEParams, facts: Facts | None) -> Resources:
        """Cost ~ K·T_p stage-1 steps."""
        steps = params.subsets * params.pretrain_iters
        return _sized(steps, params, Work("dp2vae.stage1", steps, _shape(params)))

    train = forward("dpvae.methods.dp2vae.train")

    recompute_ledger = forward("dpvae.methods.dp2vae.accounting")

    def planned_ledger(self, params: DP2VAEParams, spec: RunSpec, facts: Facts) -> Ledger:
        """B = min(batch_size, N // K), as the partition into K subsets of N // K records gives it."""
        from dpvae.methods.dp2vae.accounting import dp2vae_ledger, noise_multiplier

        epsilon, delta, k = spec.epsilon, spec.delta, params.subsets
        batch = min(params.batch_size, facts.n_train // k)
        sigma = noise_multiplier(params, epsilon, delta, k, params.iters)
        return dp2vae_ledger(sigma, k, params.iters, batch, params.clip, delta, target_epsilon=epsilon)

    train_stage1 = forward("dpvae.methods.dp2vae.train")

    sample = forward("dpvae.methods.dp2vae.train")


def _sized(steps: int, params: DP2VAEParams, work: Work) -> Resources:
    """A job of `steps` stage-1-sized steps at ~0.02 s each per 512 channels of the widest layer."""
    width = max(params.hidden_channels) / 512
    return Resources(threads=2, mem_mb=8000, runtime=max(10, int(steps * width * 0.02 / 60)), gpu=True, work=work)


def _shape(params: DP2VAEParams) -> tuple[tuple[str, str], ...]:
    """What a step's time depends on, as benchmarks/dp2vae_stage1.py logs it."""
    return (("width", ",".join(map(str, params.hidden_channels))), ("batch", str(params.batch_size)))
