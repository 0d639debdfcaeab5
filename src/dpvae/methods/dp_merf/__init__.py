"""DP-MERF (Harder et al. 2021), the DP²-VAE paper's main baseline (docs/papers.md §0, §4.4 table1/2, A-D9).

One Gaussian release: the label-conditional mean embedding of the training data in random Fourier features,
with noise of std σ·2/n (replace-one sensitivity 2/n); the generator is then trained on that noisy
embedding alone (post-processing), "single release" as `mnist_sr_gen.py`. σ is calibrated for the target
ε with the project's accountant in the reference code's way (one Gaussian, RDP, classic conversion,
continuous order; autodp in the repository); its repository has no ε = 10 setting (A-D9).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from dpvae.methods.base import Method, Resources, forward, halvings_error
from dpvae.methods.registry import register_method
from dpvae.models.precision import PRECISIONS
from dpvae.params import MethodParams, param
from dpvae.runspec import RunSpec

if TYPE_CHECKING:
    from dpvae.data.declared import Facts
    from dpvae.privacy.ledger import Ledger


@dataclass(frozen=True)
class DPMERFParams(MethodParams):
    batch_size: int = param(100, "generator batch", minimum=1)
    epochs: int = param(5, "generator epochs (each of n // batch_size iterations)", minimum=1)
    lr: float = param(0.01, "learning rate", exclusive_minimum=0)
    lr_decay: float = param(0.9, "learning-rate decay per epoch", exclusive_minimum=0, maximum=1)
    code_dim: int = param(5, "generator input code dimension", minimum=1)
    gen_hidden: int = param(200, "width of the generator's hidden linear layer", minimum=1)
    kernel_size: int = param(5, "generator conv kernel size", minimum=1)
    rff_dim: int = param(10000, "random Fourier features", minimum=2)
    rff_sigma: float = param(105.0, "kernel length scale of the random features", exclusive_minimum=0)
    gen_channels: list[int] = param([16, 8], "generator conv channels")
    noise_multiplier: float | Literal["auto"] = param("auto", "sigma of the one Gaussian release; auto = calibrated")


@register_method
class DPMERF(Method):
    name = "dp-merf"
    data_scaling = (
        "Images whose sides divide by 2^len(`gen_channels`) (checked); `rff_sigma` is a length scale in pixel "
        "units, about 3.75 sqrt(pixels) (105 for 28x28, 30 for 8x8): set it for other sizes."
    )
    paper = "dp2vae"
    private = True
    description = "DP-MERF: random-feature mean embeddings, one Gaussian release"
    Params = DPMERFParams
    RESOURCES = Resources(threads=2, mem_mb=6000, runtime=120, gpu=True)
    released = ("generator.pt",)  # fitted to the one noisy mean embedding
    precisions = PRECISIONS
    kinds = ("image",)
    releases_n = "the mean embedding's noise is scaled to its sensitivity 2/N, which the ledger records"

    def data_errors(self, params: MethodParams, facts: Facts) -> list[tuple[str, str]]:
        problem = halvings_error(facts, len(params.gen_channels))  # one 2x upsampling per channel count
        return [("gen_channels", problem)] if problem else []

    train = forward("dpvae.methods.dp_merf.train")

    recompute_ledger = forward("dpvae.methods.dp_merf.accounting")

    def planned_ledger(self, params: MethodParams, spec: RunSpec, facts: Facts) -> Ledger:
        from dpvae import randomness
        from dpvae.methods.dp_merf.accounting import ledger, noise_multiplier

        epsilon, delta, n = spec.epsilon, spec.delta, facts.n_train
        entries = params.rff_dim * facts.classes if randomness.is_secret(spec) else None  # a release's sampler
        return ledger(noise_multiplier(params, epsilon, delta, n), n, delta, epsilon, entries)

    sample = forward("dpvae.methods.dp_merf.train")
