"""GS-WGAN (Chen et al. 2020): gradient-sanitised WGAN with K discriminators (DP²-VAE baseline, Figs 2 and 4).

The training split is cut into K disjoint subsets, one discriminator each. Warm start: every discriminator is
pre-trained non-privately with its own generator (`pretrain_iters`, 0 = none), `chunk` at a time on stacked
parameters (each from its own seed and random stream: the chunking changes only float rounding). Main phase:
each iteration draws a discriminator k, trains it `critic_iters` WGAN-GP steps on its subset, then updates the
generator through it with the gradient w.r.t. each generated image clipped to C/B and perturbed with
N(0, (2σC/B)²) ("gradient sanitisation"); the released generator is the exponential moving average of the
generator. Accounting: see `dpvae.methods.gs_wgan.train` (authors' autodp way and the
project's accountants).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from dpvae.methods.base import Method, Resources, forward, subsets_error
from dpvae.methods.registry import register_method
from dpvae.params import CompileMode, MethodParams, param
from dpvae.runspec import RunSpec

if TYPE_CHECKING:
    from dpvae.data.declared import Facts
    from dpvae.privacy.ledger import Ledger


@dataclass(frozen=True)
class GSWGANParams(MethodParams):
    discriminators: int = param(1000, "K discriminators, one per disjoint subset", minimum=1)
    noise_multiplier: float = param(1.07, "sigma of the sanitised generator gradient", exclusive_minimum=0)
    batch_size: int = param(32, "records per discriminator batch", minimum=1)
    iters: int | Literal["auto"] = param(
        20000, "generator iterations; auto = as many as the target epsilon allows (authors' accountant)"
    )
    pretrain_iters: int = param(2000, "warm-start iterations per discriminator (0 = none)", minimum=0)
    z_dim: int = param(10, "latent dimension (Bernoulli(0.5) codes)", minimum=1)
    model_dim: int = param(64, "width md of both networks (generator 4md channels)", minimum=1)
    critic_iters: int = param(5, "discriminator steps per generator step", minimum=1)
    gp_weight: float = param(10.0, "gradient-penalty weight", minimum=0)
    logit_penalty: float = param(0.001, "epsilon penalty on real logits (PGGAN)", minimum=0)
    clip: float = param(1.0, "clipping bound C of each generated image's gradient (times 1/B)", exclusive_minimum=0)
    lr: float = param(0.0001, "Adam learning rate of both networks (betas 0.5, 0.9)", exclusive_minimum=0)
    ema: float = param(0.999, "exponential moving average of the released generator", minimum=0, maximum=1)
    chunk: int = param(
        8,
        "warm-start discriminators trained at once (vectorised) and checkpointed together. Chosen by memory, "
        "which grows linearly with it: about 0.45 GB per discriminator and its generator at model_dim 64, "
        "batch 32 (CPU peak RSS; on CUDA the benchmark's peak_mb_per_pair), so chunk = free memory / that, no "
        "larger than where steps/s stop rising; 8 pays on a CPU too (docs/dp2vae.md)",
        minimum=1,
    )
    vectorised: bool = param(True, "warm start on stacked parameters (False: one discriminator after another)")
    compile: CompileMode = param(
        False, "run the main phase's critic and generator iterations through torch.compile in this mode"
    )


@register_method
class GSWGAN(Method):
    name = "gs-wgan"
    paper = "dp2vae"
    private = True
    description = "GS-WGAN: gradient-sanitised WGAN with 1000 discriminators"
    Params = GSWGANParams
    released = ("generator.pt",)  # trained on sanitised gradients only
    kinds = ("image",)
    releases_n = "the K subsets hold N // K records each (B = min(batch_size, N // K) in the ledger)"

    def data_errors(self, params: GSWGANParams, facts: Facts) -> list[tuple[str, str]]:
        problems = [("discriminators", subsets_error(params.discriminators, facts))]
        if facts.record_shape != (1, 28, 28):
            problems.append(
                ("", f"its networks take 1x28x28 images, the data's are {'x'.join(map(str, facts.record_shape))}")
            )
        return [(k, v) for k, v in problems if v]

    def resources(self, params: GSWGANParams, facts: Facts | None) -> Resources:
        width = (params.model_dim / 64) ** 2
        steps = params.discriminators * params.pretrain_iters + (params.iters if params.iters != "auto" else 20000)
        return Resources(threads=2, mem_mb=16000, runtime=max(10, int(steps * width * 0.05 / 60)), gpu=True)

    train = forward("dpvae.methods.gs_wgan.train")

    recompute_ledger = forward("dpvae.methods.gs_wgan.accounting")

    def planned_ledger(self, params: GSWGANParams, spec: RunSpec, facts: Facts) -> Ledger:
        """B = min(batch_size, N // K); the iterations as configured or the authors' for the target."""
        from dpvae.methods.gs_wgan.accounting import authors_epsilon, authors_iters, ledger

        sigma, k, delta, epsilon = params.noise_multiplier, params.discriminators, spec.delta, spec.epsilon
        batch = min(params.batch_size, facts.n_train // k)
        iters = authors_iters(epsilon, sigma, k, batch, delta) if params.iters == "auto" else int(params.iters)
        authors = authors_epsilon(sigma, k, iters, batch, delta)
        return ledger(sigma, k, iters, batch, params.clip, delta, epsilon, authors)

    sample = forward("dpvae.methods.gs_wgan.train")
