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

This module also trains DP-VAE (the MLP VAE end to end with DP-SGD; its ledger is the SGD's), the non-private
VAE and DP-GM (DP kernel k-means, then one DP-SGD MLP VAE per cluster; parallel composition, `DPGM_NOTES`).
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import torch

from dpvae.errors import ConfigError, PrivacyBudgetExceeded
from dpvae.methods.base import RunContext
from dpvae.methods.checkpoint import Checkpoint
from dpvae.methods.p3gm import store
from dpvae.methods.p3gm.fit import FitResult, Schedule, fit
from dpvae.models.losses import gaussian_kl
from dpvae.models.mlp_vae import MLPVAE
from dpvae.privacy.ledger import Accounting, Ledger, Mechanism, dpsgd_ledger

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
DPVAE_NOTES = ("paper: the P3GM code's accountant for DP-SGD (add/remove-one, TF-Privacy orders, improved conversion); "
         "sound: replace-one via Mironov 2017 Prop. 11 (Poisson sampling) or the fixed-partition bound (the code's "
         "fixed batches)")
DPGM_NOTES = (
    "clustering: DP kernel k-means (Gaussian releases of cluster counts and random-Fourier-feature sums, "
    "L2-sensitivity 1 under add/remove-one; replace-one: sqrt(2) and 2), calibrated alone to the clustering "
    "share of epsilon; generators: one DP-SGD run per cluster with identical (sigma, q, T, C), composed in "
    "parallel over the disjoint clusters (a record's cluster depends on it and the released centres only), so "
    "the ledger lists one run. Accountant: RDP, TF-Privacy orders, improved conversion (as the P3GM code). "
    "Strict: replace-one (clustering sensitivities sqrt(2)/2; DP-SGD by the weak triangle inequality, which "
    "also covers a record moving between clusters)."
)
LOG = logging.getLogger(__name__)


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


def clustering_mechanisms(sigma: float, iterations: int, replace_one: bool = False):
    counts, sums = (math.sqrt(2), 2.0) if replace_one else (1.0, 1.0)
    return (Mechanism("dp_kmeans.counts", sigma / counts, steps=iterations + 1, sensitivity=counts),
            Mechanism("dp_kmeans.sums", sigma / sums, steps=iterations, sensitivity=sums))


def dpgm_accounting(mechanisms, delta: float, replace_one: bool = False):
    return Accounting(tuple(mechanisms), delta, "replace-one" if replace_one else "add/remove-one", "rdp", "improved")


def cluster_rate(batch_size: int, clusters: int, n: int) -> float:
    return min(1.0, batch_size * clusters / n)


# ------------------------------------------------------------------------------------------- P3GM


def train_p3gm(ctx: RunContext) -> Ledger | None:
    """Train one P3GM (PGM, P3GM(AE)) run: the encoding phase, the decoder's pre-training and DP-SGD."""
    from dpvae.models.losses import MixturePrior, mixture_kl
    from dpvae.privacy.budget import StepBudget
    from dpvae.privacy.mechanisms import dp_em_diagonal_gmm, dp_pca

    p = ctx.params
    private = bool(ctx.spec["private"])
    classes = store.num_classes(ctx.data)
    vectors = store.to_vectors(ctx.data.train.x, ctx.data.train.y, classes)
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
        "method": ctx.spec["method"], "arch": {"data_dim": d, "latent_dim": latent, "hidden": p.hidden, "pca": True},
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


def _check_private(p: Any, variant: str, sgd_steps: int) -> None:
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


def _centring(p: Any, dimension: int) -> dict[str, Any]:
    """`dp_pca`'s centring arguments: a DP mean (rows clipped to mean_radius·√d, released and recorded by
    `dp_pca`), 0, or "nonprivate" (the exact mean, as the reference code; not DP)."""
    if p.pca_mean == "zero":
        return {"mean": 0.0}
    if p.pca_mean == "nonprivate":
        return {"mean": "nonprivate"}
    return {"mean": "dp", "mean_noise_multiplier": p.sigma_mean, "mean_clip": p.mean_radius * math.sqrt(dimension)}


def _sgd_sigma(p: Any, encoding: tuple[Mechanism, ...], schedule: Any, ctx: RunContext,
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


def _pretrain(model: Any, info: dict, components: Any, centre: Any, p: Any, generator: Any) -> None:
    """The code's decoder initialisation: Adam on ‖decoder(z) − PCA⁻¹(z)‖², z from the sampling prior.
    Uses only DP outputs (the PCA and the mixture) and the centring mean; no data, no noise."""
    decoder = [*model.fc3.parameters(), *model.fc4.parameters()]
    opt = torch.optim.Adam(decoder, lr=1e-3)
    for _ in range(p.pretrain_steps):
        z = store.sample_latent(info, p.pretrain_batch_size, generator)
        target = z @ components.T + centre
        loss = (model.decode(z) - target).square().sum(1).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()


# --------------------------------------------------------------------------------- VAE and DP-VAE


def schedule_of(ctx: RunContext) -> Schedule:
    p = ctx.params
    return Schedule(p.batching, len(ctx.data.train.y), p.batch_size, p.epochs)


def train_vae(ctx: RunContext, *, clip: float | None = None, sigma: float = 0.0, budget: Any = None) -> FitResult:
    """Train the MLP VAE of `ctx.params` (DP-SGD when `clip` is given) and write its model files."""
    p = ctx.params
    classes = store.num_classes(ctx.data)
    vectors = torch.from_numpy(store.to_vectors(ctx.data.train.x, ctx.data.train.y, classes))
    d = vectors.shape[1]
    model = MLPVAE(d, p.latent_dim, p.hidden)
    reparam = ctx.torch_generator("reparameterisation", device="cpu")

    def loss_fn(batch: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mu, logvar = model.encode(batch)                                    # [B, d'] each
        z = mu + torch.randn(mu.shape, generator=reparam) * (0.5 * logvar).exp()
        se = (model.decode(z) - batch).square().sum(1)                     # [B]
        kl = gaussian_kl(mu, logvar, torch.zeros_like(mu), torch.ones_like(mu))
        return se + kl, se

    schedule = schedule_of(ctx)
    result = fit(model, vectors, loss_fn, schedule, lr=p.lr, optimizer=p.optimizer, clip=clip, sigma=sigma,
                 batch_generator=ctx.torch_generator("batches", device="cpu"),
                 noise_generator=ctx.torch_generator("dp-sgd-noise", device="cpu") if clip is not None else None,
                 other_generators=(reparam,), checkpoint=Checkpoint(ctx), budget=budget,
                 snapshot=decoder_state if p.record_every_epoch else None, precision=ctx.precision)
    info = {"method": ctx.spec["method"], "arch": {"data_dim": d, "latent_dim": p.latent_dim, "hidden": p.hidden,
                                                   "pca": False},
            "record_shape": list(ctx.data.train.x.shape[1:]), "classes": classes, "sampling_prior": "normal",
            "sgd": {"sigma": sigma, "clip": clip, "steps": schedule.steps, "sample_rate": schedule.sample_rate,
                    "batching": p.batching, "epoch_ends": schedule.epoch_ends()}}
    store.save_model(ctx.model_dir, model, info, result.recon_loss, result.snapshots)
    return result


def decoder_state(model: MLPVAE) -> dict[str, torch.Tensor]:
    """The decoder's parameters (what a per-epoch snapshot keeps)."""
    return {k: v for k, v in model.state_dict().items() if k.startswith(("fc3.", "fc4."))}


def train_dp_vae(ctx: RunContext) -> Ledger | None:
    """Train one DP-VAE run (the MLP VAE end to end with DP-SGD); the non-private variant trains plainly."""
    from dpvae.privacy.budget import StepBudget

    p = ctx.params
    schedule = schedule_of(ctx)
    if not ctx.spec["private"]:
        train_vae(ctx, clip=p.clip, sigma=0.0 if p.sigma_sgd == "auto" else float(p.sigma_sgd))
        return None

    def record(sigma: float, steps: int = schedule.steps) -> Mechanism:
        return Mechanism("dpsgd", sigma, schedule.sample_rate, steps, p.clip)

    def epsilon_of(sigma: float) -> float:   # the headline accounting only: calibration stays cheap
        return paper_epsilon([record(sigma)], ctx.delta)

    given = 2.0**-8 if p.sigma_sgd == "auto" else float(p.sigma_sgd)
    sigma = solve_sgd_sigma(epsilon_of, ctx.epsilon, given)
    notes = DPVAE_NOTES
    if p.sigma_sgd == "auto":
        notes += f"; sigma_sgd calibrated to the target: {sigma:.6g}"
    elif sigma > given:
        notes += (f"; sigma_sgd raised from the configured {given:g} to {sigma:.6g} (the configured value gives "
                  f"epsilon {epsilon_of(given):.4f} > target {ctx.epsilon:g})")
    budget = StepBudget(lambda steps: paper_epsilon([record(sigma, steps)], ctx.delta), ctx.epsilon)
    result = train_vae(ctx, clip=p.clip, sigma=sigma, budget=budget)
    (spent,) = result.engine.mechanisms()   # the engine's own record: sigma, q, steps run, C
    return dpsgd_ledger(spent, ctx.delta, ctx.epsilon, notes, fixed_batches=p.batching == "code")


# ------------------------------------------------------------------------------------------ DP-GM


def train_dp_gm(ctx: RunContext) -> Ledger:
    """Train one DP-GM run: DP kernel k-means, then one DP-SGD MLP VAE per cluster."""
    from dpvae.privacy.budget import StepBudget
    from dpvae.privacy.mechanisms.kmeans import dp_kmeans

    p = ctx.params
    if p.batching != "poisson":
        raise ConfigError(f"variants.{ctx.spec['variant']}.params.batching: dp-gm supports only 'poisson' "
                          f"(its parallel-composition accounting needs Poisson sampling), got {p.batching!r}")
    classes = store.num_classes(ctx.data)
    vectors = store.to_vectors(ctx.data.train.x, ctx.data.train.y, classes)
    n, d = vectors.shape
    delta, target = ctx.delta, ctx.epsilon

    share = target * p.cluster_budget_fraction
    sigma_c = solve_sgd_sigma(lambda s: dpgm_accounting(clustering_mechanisms(s, p.kmeans_iters), delta).epsilon,
                              share, 2.0**-8)
    km = dp_kmeans(vectors, p.clusters, p.kmeans_iters, p.rff_dim, p.bandwidth * math.sqrt(d), sigma_c, sigma_c,
                   ctx.rng("dp-kmeans"))
    assignment = km.assign(vectors)

    rate = cluster_rate(p.batch_size, p.clusters, n)
    steps = math.ceil(p.epochs / rate - 1e-9)

    def mechanisms(sigma: float, t: int = steps, replace_one: bool = False):
        return (*clustering_mechanisms(sigma_c, p.kmeans_iters, replace_one),
                Mechanism("dpsgd (one per cluster, parallel composition)", sigma, rate, t, p.clip))

    def epsilon_of(sigma: float, t: int = steps) -> float:
        return dpgm_accounting(mechanisms(sigma, t), delta).epsilon

    given = 2.0**-8 if p.sigma_sgd == "auto" else float(p.sigma_sgd)
    sigma = solve_sgd_sigma(epsilon_of, target, given) if steps else given
    budget = StepBudget(lambda t: epsilon_of(sigma, t), target)
    for j in range(p.clusters):
        rows = np.flatnonzero(assignment == j)
        _train_cluster(ctx, j, torch.from_numpy(vectors[rows]), float(km.counts[j]), rate, steps, sigma,
                            budget, classes, d)
    (ctx.model_dir / "dp_gm.json").write_text(json.dumps({
        "clusters": p.clusters, "noisy_counts": km.counts.tolist(), "sigma_clustering": sigma_c,
        "sigma_sgd": sigma, "sample_rate": rate, "steps": steps, "classes": classes}, indent=2))
    notes = DPGM_NOTES + f"; sigma_clustering {sigma_c:.6g}, sigma_sgd {sigma:.6g}, q {rate:.6g}, T {steps}"
    paper = dpgm_accounting(mechanisms(sigma), delta)
    strict = dpgm_accounting(mechanisms(sigma, replace_one=True), delta, replace_one=True)
    return Ledger(paper, strict, target, notes)


def _train_cluster(ctx: RunContext, j: int, data, noisy_count: float, rate: float, steps: int,
                   sigma: float, budget, classes: int, d: int) -> None:
    p = ctx.params
    model = MLPVAE(d, p.latent_dim, p.hidden)
    reparam = ctx.torch_generator(f"reparameterisation-{j}", device="cpu")

    def loss_fn(batch: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mu, logvar = model.encode(batch)
        z = mu + torch.randn(mu.shape, generator=reparam) * (0.5 * logvar).exp()
        se = (model.decode(z) - batch).square().sum(1)
        return se + gaussian_kl(mu, logvar, torch.zeros_like(mu), torch.ones_like(mu)), se

    # expected batch from the *noisy* size: the divisor of the noisy sum must not depend on the data
    schedule = ClusterSchedule(len(data), rate, steps, max(1.0, rate * noisy_count))
    result = fit(model, data, loss_fn, schedule, lr=p.lr, optimizer=p.optimizer, clip=p.clip, sigma=sigma,
                 batch_generator=ctx.torch_generator(f"batches-{j}", device="cpu"),
                 noise_generator=ctx.torch_generator(f"dp-sgd-noise-{j}", device="cpu"),
                 other_generators=(reparam,), budget=budget, precision=ctx.precision)
    info = {"method": "dp-gm", "cluster": j, "arch": {"data_dim": d, "latent_dim": p.latent_dim, "hidden": p.hidden,
                                                      "pca": False},
            "record_shape": list(ctx.data.train.x.shape[1:]), "classes": classes, "sampling_prior": "normal",
            "sgd": {"sigma": sigma, "clip": p.clip, "steps": steps, "sample_rate": rate}}
    store.save_model(ctx.model_dir / f"cluster{j}", model, info, result.recon_loss)


def sample_dp_gm(ctx: RunContext, n: int | None) -> dict[str, np.ndarray]:
    """n records: each cluster's share drawn in proportion to its noisy size."""
    summary = json.loads((ctx.model_dir / "dp_gm.json").read_text())
    count = len(ctx.data.train.y) if n is None else int(n)
    weights = np.clip(np.asarray(summary["noisy_counts"], dtype=np.float64), 0, None)
    weights = weights / weights.sum() if weights.sum() > 0 else np.full(len(weights), 1 / len(weights))
    rng = ctx.rng("dp-gm-sample")
    shares = rng.multinomial(count, weights)
    parts = []
    for j, share in enumerate(shares):
        if share:
            model, info = store.load_model(ctx.model_dir / f"cluster{j}")
            parts.append(store.generate(model, info, int(share), ctx.torch_generator(f"sample-{j}", device="cpu")))
    order = rng.permutation(count)
    return {key: np.concatenate([part[key] for part in parts])[order] for key in ("x", "y")}


class ClusterSchedule:
    """Poisson batches of one cluster's records at the rate and step count every cluster shares (duck-types
    `fit.Schedule` for `fit`); `batch_size` is the expected batch from the noisy cluster size."""

    def __init__(self, n: int, rate: float, steps: int, expected_batch: float) -> None:
        self.n, self.sample_rate, self.steps, self.batch_size = n, rate, steps, expected_batch

    def batch(self, generator):
        from dpvae.privacy.dpsgd import poisson_sample

        return poisson_sample(self.n, self.sample_rate, generator)

    def epoch_ends(self) -> list[int]:
        return [self.steps]
