"""P3GM (Takagi et al.; PAPERS.md §3.1): DP-PCA → DP-EM mixture prior → DP-SGD decoding phase.

Encoding phase: centre the record vectors (features + one-hot label) with a DP mean, a constant or — the
reference code's way — the exact mean; DP-PCA to d' = min(pca_components, d) dims gives the *frozen*
encoder mean μ(x) = (x − m)·W; DP-EM fits a diagonal mixture r_λ to the PCA features (rows clipped to 1).
Decoding phase: optional non-private decoder pre-training on DP outputs only (z from the sampling prior,
target PCA⁻¹(z) = z·Wᵀ + m; the code's undocumented 3000 Adam steps), then DP-SGD on the per-example
loss Σ(decoder(z) − x)² + KL(N(μ, σ²) ‖ r_λ) (Hershey–Olsen), z = μ + σ_φ(x)·ε, over σ_φ's head
(fc1, fc22) and the decoder. Released: the decoder and the sampling prior (N(0, I) as the code at HEAD,
or the DP-MoG as the paper). PGM = the same without noise (`private: false`); P3GM(AE) = σ_φ(x) = 0 (the
paper's; `no_kl` is the code's `loss_function_ae`: the KL term dropped, σ_φ still learned).

Privacy: the ledger is composed from the records the mechanisms return (DP mean and DP-PCA from
`dp_pca`, DP-EM, the DP-SGD engine's steps). Paper accounting = the code's: add/remove-one RDP sum,
improved conversion, TF-Privacy's orders; sound = replace-one, the relation the paper states (mean σ/2,
PCA σ_p/√2, DP-SGD by Mironov's Prop. 11 with Poisson sampling, or the fixed-partition bound for the code's
batches), with the initial noisy EM M-step counted. `sigma_sgd: auto` is calibrated so that the paper ε meets the target; a
given σ_s whose ε exceeds the target is raised (never lowered) to the calibrated value, noted in the
ledger. With `pca_mean: nonprivate` the release is not DP (the exact mean is the frozen encoder's
bias); the ledger says so.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from dpvae.errors import ConfigError, PrivacyBudgetExceeded
from dpvae.methods.base import Resources, RunContext
from dpvae.methods.mlp_common import Batching, MLPVAEMethod, Optimizer
from dpvae.methods.registry import register_method
from dpvae.params import MethodParams, param
from dpvae.privacy.ledger import Accounting, Ledger, Mechanism

PCAMean = Literal["dp", "zero", "nonprivate"]
NOT_DP_NONPRIVATE_MEAN = (
    "not DP: non-private centring mean (the data's exact mean is the frozen encoder's bias, neither released "
    "privately nor accounted; one record moves every centred row)"
)
NOTES = (
    "paper: the P3GM code's accountant (add/remove-one, TF-Privacy compute_rdp orders, improved conversion) over "
    "the records of every mechanism run; sound: replace-one (DP mean sigma/2, DP-PCA sigma/sqrt(2), DP-SGD via "
    "Mironov 2017 Prop. 11, or the fixed-partition bound for the code's batches) and the initial noisy EM M-step "
    "counted"
)
MEAN_RECORD, PCA_RECORD, SGD_RECORD = "dp_pca.mean", "dp_pca", "dpsgd"
LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class P3GMParams(MethodParams):
    """P3GM (DP-PCA -> DP-EM -> DP-SGD decoder; PAPERS.md 3.1): the paper's and the reference code's switches."""

    hidden: int = param(1000, "width of the MLP's hidden layer", minimum=1)
    optimizer: Optimizer = param("adam", "optimizer of the decoding phase (code: Adam; paper: SGD)")
    lr: float = param(0.001, "learning rate", exclusive_minimum=0)
    epochs: float = param(1, "DP-SGD passes over the training set", minimum=0)
    batch_size: int = param(100, "records per (expected) batch", minimum=1)

    pca_components: int = param(30, "d' = min(this, d) DP-PCA components", minimum=1)
    pca_mean: PCAMean = param("dp", "centring of DP-PCA: a released DP mean, zero (no centring), or the exact mean (the code; not DP)")
    sigma_mean: float = param(20.0, "noise multiplier of the DP centring mean (rows clipped to mean_radius*sqrt(d))", minimum=0)
    mean_radius: float = param(1.0, "row-norm bound of the DP mean per sqrt(d) (1 = features in [0, 1])", exclusive_minimum=0)
    sigma_pca: float = param(5.0, "sigma_p of DP-PCA (0 = no noise)", minimum=0)
    sigma_em: float = param(100.0, "sigma_e of DP-EM (0 = no noise)", minimum=0)
    em_iters: int = param(20, "T_e: DP-EM iterations", minimum=1)
    em_components: int = param(1, "mixture components of the DP-EM prior (paper 3, code 1)", minimum=1)
    account_em_init: bool = param(False, "count the initial noisy M-step in the paper ledger (the code does not)")
    clip: float | None = param(1.0, "per-example clipping norm C (null = no clipping, non-private PGM)")
    sigma_sgd: float | Literal["auto"] = param("auto", "DP-SGD noise multiplier; auto = calibrated to the target")
    pretrain_steps: int = param(3000, "non-private decoder pre-training steps on DP outputs (code; 0 = none)", minimum=0)
    pretrain_batch_size: int = param(100, "records per pre-training step", minimum=1)
    sampling_prior: Literal["normal", "mog"] = param("normal", "prior of released samples: N(0, I) (code) or the DP-MoG (paper)")
    encoder_variance: Literal["learned", "zero", "no_kl"] = param("learned", "sigma_phi(x) learned; 0 (P3GM(AE), the paper); or learned without the KL term (the code's P3GM-AE)")
    batching: Batching = param("poisson", "Poisson sampling (as accounted) or the code's fixed batches with replacement")
    record_every_epoch: bool = param(False, "record the decoder at the end of every epoch (fig 7's utility per epoch)")


# ------------------------------------------------------------------------------------------ privacy


def _sound(record: Mechanism, em_iters: int, components: int, fixed_batches: bool) -> Mechanism:
    """The record under replace-one adjacency (q = 1 releases: multiplier relative to the replace-one
    sensitivity), with the EM's initial noisy M-step counted ((T_e + 1) M-steps of 2K + 1 releases); the
    code's fixed batches drawn with replacement are one of 1/q fixed subsets per step (`fixed_partition_rdp`,
    replacing a record moves the clipped sum by 2C)."""
    if record.name == MEAN_RECORD:
        return Mechanism(record.name, record.noise_multiplier / 2, 1.0, record.steps, 2 * record.sensitivity)
    if record.name == PCA_RECORD:
        return Mechanism(record.name, record.noise_multiplier / math.sqrt(2), 1.0, record.steps, math.sqrt(2))
    if record.name.startswith("dp_em."):
        per_m_step = 1 if record.name == "dp_em.weights" else components
        return replace(record, steps=per_m_step * (em_iters + 1))
    if record.name == SGD_RECORD and fixed_batches:
        return Mechanism(record.name, record.noise_multiplier / 2, record.sample_rate, record.steps,
                         2 * record.sensitivity, sampling="fixed-partition")
    return record  # Poisson DP-SGD: q < 1, replace-one is the accountant's (Mironov 2017, Prop. 11)


def paper_epsilon(records: Sequence[Mechanism], delta: float) -> float:
    """The headline ε alone (the code's accountant): what calibration and the step budget check, cheaply
    (the sound accounting's replace-one curve costs seconds per evaluation)."""
    return Accounting(tuple(records), delta, adjacency="add/remove-one", accountant="rdp", conversion="improved").epsilon


def p3gm_ledger(records: Sequence[Mechanism], delta: float, em_iters: int, em_components: int,
                target: float | None, notes: str = NOTES, not_dp: str | None = None,
                fixed_batches: bool = False) -> Ledger:
    """Paper (the code's accountant, the headline) and sound accountings of the given mechanism records; a
    release that is not DP (the exact centring mean) has no sound accounting and says why."""
    records = tuple(records)
    paper = Accounting(records, delta, adjacency="add/remove-one", accountant="rdp", conversion="improved")
    if not_dp is not None:
        return Ledger(paper, None, target, f"{not_dp}; {notes}", not_dp=not_dp)
    sound = Accounting(tuple(_sound(r, em_iters, em_components, fixed_batches) for r in records), delta,
                       adjacency="replace-one", accountant="rdp", conversion="improved")
    return Ledger(paper, sound, target, notes)


def solve_sgd_sigma(epsilon_of: Any, target: float, floor: float) -> float:
    """The smallest σ ≥ `floor` (rounded up) whose ε meets `target` exactly."""
    from dpvae.privacy.accounting import solve_noise_multiplier

    if epsilon_of(floor) <= target:
        return floor
    sigma = solve_noise_multiplier(epsilon_of, target, bracket=(max(floor, 2.0**-8), 2.0**16))
    step = 1e-12
    while epsilon_of(sigma) > target:   # never return a σ whose ε exceeds the target
        sigma *= 1 + step
        step *= 2
    return sigma


# ------------------------------------------------------------------------------------------- method


@register_method
class P3GM(MLPVAEMethod):
    name = "p3gm"
    paper = "p3gm"
    private = True
    description = "P3GM: DP-PCA + DP-EM encoder, DP-SGD decoder (also PGM and P3GM(AE) by parameters)"
    Params = P3GMParams
    RESOURCES = Resources(threads=2, mem_mb=3000, runtime=30)

    def resources(self, params: MethodParams, dataset: str) -> Resources:
        heavy = "mnist" in dataset and params.record_every_epoch
        return Resources(threads=2, mem_mb=3000, runtime=90 if heavy else 30)

    def train(self, ctx: RunContext) -> Ledger | None:
        import torch

        from dpvae.methods.checkpoint import Checkpoint
        from dpvae.methods.mlp import store
        from dpvae.methods.mlp.records import num_classes, to_vectors
        from dpvae.methods.mlp.training import Schedule, fit
        from dpvae.methods.mlp.vae import decoder_state
        from dpvae.models.losses import MixturePrior, mixture_kl
        from dpvae.models.mlp_vae import MLPVAE
        from dpvae.privacy.budget import StepBudget
        from dpvae.privacy.mechanisms import dp_em_diagonal_gmm, dp_pca

        p: P3GMParams = ctx.params
        private = bool(ctx.spec["private"])
        classes = num_classes(ctx.data)
        vectors = to_vectors(ctx.data.train.x, ctx.data.train.y, classes)
        n, d = vectors.shape
        schedule = Schedule(p.batching, n, p.batch_size, p.epochs)
        if private:
            _check_private(p, ctx.spec["variant"], schedule.steps)

        # encoding phase: centring mean, DP-PCA, DP-EM (numpy, each from its own seeded stream)
        started, cpu_started = time.perf_counter(), time.process_time()
        pca = dp_pca(vectors, p.pca_components, p.sigma_pca, ctx.rng("dp-pca"), **_centring(p, d))
        features = pca.transform(vectors)
        gmm = dp_em_diagonal_gmm(features, p.em_components, p.em_iters, p.sigma_em, ctx.rng("dp-em"),
                                 account_initial_step=p.account_em_init)
        encoding = (*pca.mechanisms, *gmm.mechanisms)   # the DP mean (if any), the PCA, the EM releases

        # the DP-SGD noise: given, calibrated (auto), or raised to fit the target
        sigma, notes = _sgd_sigma(p, encoding, schedule, ctx, private)
        not_dp = NOT_DP_NONPRIVATE_MEAN if p.pca_mean == "nonprivate" else None

        def sgd_record(steps: int, s: float = sigma) -> Mechanism:
            return Mechanism(SGD_RECORD, s, schedule.sample_rate, steps, p.clip or 1.0)

        # decoding phase (torch, CPU)
        latent = pca.components.shape[1]
        components = torch.tensor(pca.components, dtype=torch.float32)
        centre = torch.tensor(pca.mean, dtype=torch.float32)
        model = MLPVAE(d, latent, p.hidden, pca_components=components, pca_mean=centre)
        zero_variance = p.encoder_variance == "zero"
        if zero_variance:   # P3GM(AE): z = μ(x); σ_φ's head is not part of the model that is trained
            model.fc1.requires_grad_(False)
            model.fc22.requires_grad_(False)
        info = {
            "method": self.name, "arch": {"data_dim": d, "latent_dim": latent, "hidden": p.hidden, "pca": True},
            "record_shape": list(ctx.data.train.x.shape[1:]), "classes": classes,
            "sampling_prior": p.sampling_prior, "encoder_variance": p.encoder_variance, "pca_mean": p.pca_mean,
            "prior": {"weights": gmm.weights.tolist(), "means": gmm.means.tolist(),
                      "variances": gmm.variances.tolist()},
            "sgd": {"sigma": sigma, "clip": p.clip, "steps": schedule.steps, "sample_rate": schedule.sample_rate,
                    "batching": p.batching, "epoch_ends": schedule.epoch_ends()},
        }
        encoded, cpu_encoded = time.perf_counter(), time.process_time()
        if p.pretrain_steps:
            _pretrain(model, info, components, centre, p, ctx.torch_generator("pretrain", device="cpu"))
        pretrained, cpu_pretrained = time.perf_counter(), time.process_time()

        prior = MixturePrior(*(torch.tensor(a, dtype=torch.float32) for a in (gmm.weights, gmm.means, gmm.variances)))
        reparam = ctx.torch_generator("reparameterisation", device="cpu")

        def loss_fn(batch: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            mu = model.pca(batch)                                                 # [B, d'] frozen
            if zero_variance:
                z, kl = mu, torch.zeros(len(batch))
            else:
                logvar = model.fc22(torch.relu(model.fc1(batch)))                 # [B, d']
                eps = torch.randn(mu.shape, generator=reparam)
                z = mu + eps * (0.5 * logvar).exp()
                kl = torch.zeros(len(batch)) if p.encoder_variance == "no_kl" else mixture_kl(mu, logvar, prior)
            se = (model.decode(z) - batch).square().sum(1)                       # [B]
            return se + kl, se

        budget = StepBudget(lambda steps: paper_epsilon([*encoding, sgd_record(steps)], ctx.delta),
                            ctx.epsilon) if private else None
        result = fit(model, torch.from_numpy(vectors), loss_fn, schedule, lr=p.lr, optimizer=p.optimizer,
                     clip=p.clip, sigma=sigma, batch_generator=ctx.torch_generator("batches", device="cpu"),
                     noise_generator=ctx.torch_generator("dp-sgd-noise", device="cpu"), other_generators=(reparam,),
                     checkpoint=Checkpoint(ctx), budget=budget,
                     snapshot=decoder_state if p.record_every_epoch else None, precision=ctx.precision)
        store.save_model(ctx.model_dir, model, info, result.recon_loss, result.snapshots)
        LOG.info("P3GM on %d x %d: encoding %.1f s (cpu %.1f s), pre-training %.1f s (cpu %.1f s), %d DP-SGD steps "
                 "(sigma %.4g) %.1f s (cpu %.1f s)", n, d, encoded - started, cpu_encoded - cpu_started,
                 pretrained - encoded, cpu_pretrained - cpu_encoded, schedule.steps, sigma,
                 time.perf_counter() - pretrained, time.process_time() - cpu_pretrained)
        if not private:
            return None
        sgd = [m for m in (result.engine.mechanisms() if result.engine else []) if m.steps]
        sgd = [Mechanism(SGD_RECORD, m.noise_multiplier, m.sample_rate, m.steps, m.sensitivity) for m in sgd]
        return p3gm_ledger([*encoding, *sgd], ctx.delta, p.em_iters, p.em_components, ctx.epsilon, notes, not_dp,
                           fixed_batches=p.batching == "code")


def _check_private(p: P3GMParams, variant: str, sgd_steps: int) -> None:
    """A private run needs noise in every mechanism it runs (σ = 0 means no privacy at all)."""
    key = f"variants.{variant}.params"
    zero = [k for k in ("sigma_pca", "sigma_em") if getattr(p, k) == 0]
    zero += ["sigma_mean"] if p.pca_mean == "dp" and p.sigma_mean == 0 else []
    zero += ["sigma_sgd"] if sgd_steps and p.sigma_sgd == 0 else []
    if zero:
        raise ConfigError(f"config key '{key}.{zero[0]}': 0 gives no privacy; a private P3GM run needs noise "
                          "in every mechanism (set 'private: false' for PGM)")
    if sgd_steps and p.clip is None:
        raise ConfigError(f"config key '{key}.clip': a private P3GM run needs a clipping norm")


def _centring(p: P3GMParams, dimension: int) -> dict[str, Any]:
    """`dp_pca`'s centring arguments: a DP mean (rows clipped to mean_radius·√d, released and recorded by
    `dp_pca`), 0, or "nonprivate" (the exact mean, as the reference code; not DP)."""
    if p.pca_mean == "zero":
        return {"mean": 0.0}
    if p.pca_mean == "nonprivate":
        return {"mean": "nonprivate"}
    return {"mean": "dp", "mean_noise_multiplier": p.sigma_mean, "mean_clip": p.mean_radius * math.sqrt(dimension)}


def _sgd_sigma(p: P3GMParams, encoding: tuple[Mechanism, ...], schedule: Any, ctx: RunContext,
               private: bool) -> tuple[float, str]:
    """σ_s for the run and the ledger note: as given, calibrated (auto) or raised to meet the target."""
    given = 0.0 if p.sigma_sgd == "auto" else float(p.sigma_sgd)
    if not private or schedule.steps == 0:
        return given, NOTES
    target = ctx.epsilon

    def epsilon_of(sigma: float) -> float:
        record = Mechanism(SGD_RECORD, sigma, schedule.sample_rate, schedule.steps, p.clip)
        return paper_epsilon([*encoding, record], ctx.delta)

    encoding_only = paper_epsilon(encoding, ctx.delta)
    if encoding_only > target:
        raise PrivacyBudgetExceeded(target, encoding_only)
    if p.sigma_sgd == "auto":
        sigma = solve_sgd_sigma(epsilon_of, target, 2.0**-8)
        return sigma, f"{NOTES}; sigma_sgd calibrated to the target: {sigma:.6g}"
    sigma = solve_sgd_sigma(epsilon_of, target, given)
    if sigma > given:
        return sigma, (f"{NOTES}; sigma_sgd raised from the configured {given:g} to {sigma:.6g} (the configured "
                       f"value gives epsilon {epsilon_of(given):.4f} > target {target:g})")
    return sigma, NOTES


def _pretrain(model: Any, info: dict, components: Any, centre: Any, p: P3GMParams, generator: Any) -> None:
    """The code's decoder initialisation: Adam on ‖decoder(z) − PCA⁻¹(z)‖², z from the sampling prior.
    Uses only DP outputs (the PCA and the mixture) and the centring mean; no data, no noise."""
    import torch

    from dpvae.methods.mlp.store import sample_latent

    decoder = [*model.fc3.parameters(), *model.fc4.parameters()]
    opt = torch.optim.Adam(decoder, lr=1e-3)
    for _ in range(p.pretrain_steps):
        z = sample_latent(info, p.pretrain_batch_size, generator)
        target = z @ components.T + centre
        loss = (model.decode(z) - target).square().sum(1).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
