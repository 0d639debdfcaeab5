"""P3GM (Takagi et al.; docs/papers.md §3.1): DP-PCA → DP-EM mixture prior → DP-SGD decoding phase.

Encoding phase: centre the record vectors (features + one-hot label) with a DP mean, a constant or — the
reference code's way — the exact mean; DP-PCA to d' = min(pca_components, d) dims gives the *frozen*
encoder mean μ(x) = (x − m)·W; DP-EM fits a diagonal mixture r_λ to the PCA features (rows clipped to 1).
Decoding phase: optional non-private decoder pre-training on DP outputs only (z from the sampling prior,
target PCA⁻¹(z) = z·Wᵀ + m; the code's undocumented 3000 Adam steps, fewer on small N: `pretrain_steps`),
then DP-SGD on the per-example loss Σ(decoder(z) − x)² + KL(N(μ, σ²) ‖ r_λ) (Hershey–Olsen), z = μ + σ_φ(x)·ε,
over σ_φ's head
(fc1, fc22) and the decoder. Released: the decoder and the sampling prior (N(0, I) as the code at HEAD,
or the DP-MoG as the paper). PGM = the same without noise (`private: false`); P3GM(AE) = σ_φ(x) = 0 (the
paper's; `no_kl` is the code's `loss_function_ae`: the KL term dropped, σ_φ still learned).

Privacy: the ledger is composed from the records the mechanisms return (DP mean and DP-PCA from
`dp_pca`, DP-EM, the DP-SGD engine's steps). Paper accounting = the code's: add/remove-one RDP sum,
improved conversion, TF-Privacy's orders; sound = replace-one, the relation the paper states (mean σ/2,
PCA σ_p/√2, DP-SGD by Mironov's Prop. 11 with Poisson sampling, or the fixed-partition bound for the code's
batches), with the initial noisy EM M-step counted (`accounting.py`). `sigma_sgd: auto` is calibrated so that the
paper ε meets the target; a given σ_s whose ε exceeds the target is raised (never lowered) to the calibrated value,
noted in the ledger. With `pca_mean: nonprivate` the release is not DP (the exact mean is the frozen encoder's
bias); the ledger says so.

This module also trains DP-VAE (the MLP VAE end to end with DP-SGD; its ledger is the SGD's), the non-private
VAE and DP-GM (DP kernel k-means, then one DP-SGD MLP VAE per cluster; parallel composition, `DPGM_NOTES`).
"""

from __future__ import annotations

import json
import logging
import math
import time
from typing import Any

import numpy as np
import torch

from dpvae import randomness
from dpvae.methods.base import RunContext
from dpvae.methods.checkpoint import Checkpoint
from dpvae.methods.p3gm import store
from dpvae.methods.p3gm.accounting import (
    NOTES,
    SGD_RECORD,
    centring,
    check_private,
    dp_vae_ledger,
    dp_vae_sigma,
    dpgm_accounting,
    dpgm_ledger,
    dpgm_mechanisms,
    dpgm_schedule,
    dpgm_sigmas,
    paper_epsilon,
    run_ledger,
    run_sgd_sigma,
    sgd_record,
)
from dpvae.methods.p3gm.fit import FitResult, Schedule, fit
from dpvae.methods.p3gm.pretraining import pretrain_steps
from dpvae.models.losses import gaussian_kl
from dpvae.models.mlp_vae import MLPVAE
from dpvae.privacy.ledger import Ledger, Mechanism
from dpvae.progress import Progress

LOG = logging.getLogger(__name__)


# ------------------------------------------------------------------------------------------- P3GM


def train_p3gm(ctx: RunContext) -> Ledger | None:
    """Train one P3GM (PGM, P3GM(AE)) run: the encoding phase, the decoder's pre-training and DP-SGD."""
    from dpvae.models.losses import MixturePrior, mixture_kl
    from dpvae.privacy.budget import StepBudget
    from dpvae.privacy.mechanisms import dp_em_diagonal_gmm, dp_pca

    p = ctx.params
    private = bool(ctx.spec.private)
    classes = store.num_classes(ctx.data)
    vectors = store.to_vectors(ctx.data.train.x, ctx.data.train.y, classes)
    n, d = vectors.shape
    schedule = Schedule(p.batching, n, p.batch_size, p.epochs)
    if private:
        check_private(p, ctx.spec.variant, schedule.steps)

    # encoding phase: centring mean, DP-PCA, DP-EM (numpy, each from its own seeded stream)
    started, cpu_started = time.perf_counter(), time.process_time()
    encoding: tuple[Mechanism, ...] = ()  # the DP mean (if any), the PCA, the EM releases, as they are made

    def spent(*sgd: Mechanism) -> Ledger:  # the ledger of the releases so far (a progress line's ε)
        return run_ledger(p, [*encoding, *sgd], ctx.delta, ctx.epsilon, NOTES)

    name, epsilon = ctx.spec.method, (lambda _: spent()) if private else None
    phases = Progress(f"{name} encoding (DP-PCA, DP-EM)", 2, "phases", epsilon=epsilon)
    secret = randomness.is_secret(ctx.spec)  # a release: its statistics' noise from the discrete samplers
    pca = dp_pca(vectors, p.pca_components, p.sigma_pca, ctx.rng("dp-pca"), **centring(p, d), secret=secret)
    encoding = tuple(pca.mechanisms)
    phases.advance()
    features = pca.transform(vectors)
    gmm = dp_em_diagonal_gmm(
        features,
        p.em_components,
        p.em_iters,
        p.sigma_em,
        ctx.rng("dp-em"),
        account_initial_step=p.account_em_init,
        secret=secret,
    )
    encoding = (*pca.mechanisms, *gmm.mechanisms)
    phases.advance()

    # the DP-SGD noise: given, calibrated (auto), or raised to fit the target (as `accounting.planned_p3gm_ledger`)
    if private:
        sigma, notes = run_sgd_sigma(p, encoding, schedule, ctx.delta, ctx.epsilon)
    else:
        sigma, notes = 0.0 if p.sigma_sgd == "auto" else float(p.sigma_sgd), NOTES

    # decoding phase (torch, CPU)
    latent = pca.components.shape[1]
    components = torch.tensor(pca.components, dtype=torch.float32)
    centre = torch.tensor(pca.mean, dtype=torch.float32)
    model = MLPVAE(d, latent, p.hidden, pca_components=components, pca_mean=centre)
    zero_variance = p.encoder_variance == "zero"
    if zero_variance:  # P3GM(AE): z = μ(x); σ_φ's head is not part of the model that is trained
        model.fc1.requires_grad_(False)
        model.fc22.requires_grad_(False)
    info = {
        "method": ctx.spec.method,
        "arch": {"data_dim": d, "latent_dim": latent, "hidden": p.hidden, "pca": True},
        "record_shape": list(ctx.data.train.x.shape[1:]),
        "classes": classes,
        "sampling_prior": p.sampling_prior,
        "encoder_variance": p.encoder_variance,
        "pca_mean": p.pca_mean,
        "prior": {"weights": gmm.weights.tolist(), "means": gmm.means.tolist(), "variances": gmm.variances.tolist()},
        "sgd": {
            "sigma": sigma,
            "clip": p.clip,
            "steps": schedule.steps,
            "sample_rate": schedule.sample_rate,
            "batching": p.batching,
            "epoch_ends": schedule.epoch_ends(),
        },
    }
    encoded, cpu_encoded = time.perf_counter(), time.process_time()
    if steps := pretrain_steps(p, n):  # `auto`: from N, public under bounded DP (its line shows the total)
        progress = Progress(f"{name} decoder pre-training", steps, epsilon=epsilon)  # DP outputs only
        generator = ctx.torch_generator("pretrain", device="cpu")
        _pretrain(model, info, components, centre, steps, p.pretrain_batch_size, generator, progress)
    pretrained, cpu_pretrained = time.perf_counter(), time.process_time()

    prior = MixturePrior(*(torch.tensor(a, dtype=torch.float32) for a in (gmm.weights, gmm.means, gmm.variances)))
    reparam = ctx.torch_generator("reparameterisation", device="cpu")

    def loss_fn(batch: torch.Tensor) -> torch.Tensor:
        mu = model.pca(batch)  # [B, d'] frozen
        if zero_variance:
            z, kl = mu, torch.zeros(len(batch))
        else:
            logvar = model.fc22(torch.relu(model.fc1(batch)))  # [B, d']
            eps = torch.randn(mu.shape, generator=reparam)
            z = mu + eps * (0.5 * logvar).exp()
            kl = torch.zeros(len(batch)) if p.encoder_variance == "no_kl" else mixture_kl(mu, logvar, prior)
        return (model.decode(z) - batch).square().sum(1) + kl  # [B]

    budget = (
        StepBudget(
            lambda t: paper_epsilon([*encoding, sgd_record(sigma, schedule, p.clip or 1.0, t)], ctx.delta), ctx.epsilon
        )
        if private
        else None
    )
    result = fit(
        model,
        torch.from_numpy(vectors),
        loss_fn,
        schedule,
        lr=p.lr,
        optimizer=p.optimizer,
        clip=p.clip,
        sigma=sigma,
        batch_generator=ctx.torch_generator("batches", device="cpu"),
        noise_generator=ctx.torch_generator("dp-sgd-noise", device="cpu"),
        other_generators=(reparam,),
        checkpoint=Checkpoint(ctx),
        budget=budget,
        snapshot=store.snapshot_state if p.record_every_epoch else None,
        precision=ctx.precision,
        progress=Progress(
            f"{name} {'DP-SGD' if private else 'SGD'}",
            schedule.steps,
            epsilon=(lambda t: spent(sgd_record(sigma, schedule, p.clip or 1.0, t))) if private else None,
        ),
    )
    store.save_model(ctx.model_dir, model, info, result.snapshots)
    LOG.info(
        "P3GM on %d columns: encoding %.1f s (cpu %.1f s), pre-training %.1f s (cpu %.1f s), %d DP-SGD steps "
        "(sigma %.4g) %.1f s (cpu %.1f s)",  # no record count: docs/operations.md, "Progress while it runs"
        d,
        encoded - started,
        cpu_encoded - cpu_started,
        pretrained - encoded,
        cpu_pretrained - cpu_encoded,
        schedule.steps,
        sigma,
        time.perf_counter() - pretrained,
        time.process_time() - cpu_pretrained,
    )
    if not private:
        return None
    sgd = [m for m in (result.engine.mechanisms() if result.engine else []) if m.steps]
    sgd = [Mechanism(SGD_RECORD, m.noise_multiplier, m.sample_rate, m.steps, m.sensitivity) for m in sgd]
    return run_ledger(p, [*encoding, *sgd], ctx.delta, ctx.epsilon, notes)


def _pretrain(
    model: Any, info: dict, components: Any, centre: Any, steps: int, batch: int, generator: Any, progress: Progress
) -> None:
    """The code's decoder initialisation: `steps` Adam steps on ‖decoder(z) − PCA⁻¹(z)‖², `batch` z a step from
    the sampling prior. Uses only DP outputs (the PCA and the mixture) and the centring mean; no data, no noise."""
    decoder = [*model.fc3.parameters(), *model.fc4.parameters()]
    opt = torch.optim.Adam(decoder, lr=1e-3)
    for _ in range(steps):
        z = store.sample_latent(info, batch, generator)
        target = z @ components.T + centre
        loss = (model.decode(z) - target).square().sum(1).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        progress.advance()


# --------------------------------------------------------------------------------- VAE and DP-VAE


def schedule_of(ctx: RunContext) -> Schedule:
    p = ctx.params
    return Schedule(p.batching, len(ctx.data.train.y), p.batch_size, p.epochs)


def train_vae(
    ctx: RunContext, *, clip: float | None = None, sigma: float = 0.0, budget: Any = None, epsilon: Any = None
) -> FitResult:
    """Train the MLP VAE of `ctx.params` (DP-SGD when `clip` is given) and write its model files (`epsilon`: the
    ledger after t steps, for the progress lines)."""
    p = ctx.params
    classes = store.num_classes(ctx.data)
    vectors = torch.from_numpy(store.to_vectors(ctx.data.train.x, ctx.data.train.y, classes))
    d = vectors.shape[1]
    model = MLPVAE(d, p.latent_dim, p.hidden)
    reparam = ctx.torch_generator("reparameterisation", device="cpu")

    def loss_fn(batch: torch.Tensor) -> torch.Tensor:
        mu, logvar = model.encode(batch)  # [B, d'] each
        z = mu + torch.randn(mu.shape, generator=reparam) * (0.5 * logvar).exp()
        se = (model.decode(z) - batch).square().sum(1)  # [B]
        return se + gaussian_kl(mu, logvar, torch.zeros_like(mu), torch.ones_like(mu))

    schedule = schedule_of(ctx)
    result = fit(
        model,
        vectors,
        loss_fn,
        schedule,
        lr=p.lr,
        optimizer=p.optimizer,
        clip=clip,
        sigma=sigma,
        batch_generator=ctx.torch_generator("batches", device="cpu"),
        noise_generator=ctx.torch_generator("dp-sgd-noise", device="cpu") if clip is not None else None,
        other_generators=(reparam,),
        checkpoint=Checkpoint(ctx),
        budget=budget,
        snapshot=store.snapshot_state if p.record_every_epoch else None,
        precision=ctx.precision,
        progress=Progress(f"{ctx.spec.method} training", schedule.steps, epsilon=epsilon),
    )
    info = {
        "method": ctx.spec.method,
        "arch": {"data_dim": d, "latent_dim": p.latent_dim, "hidden": p.hidden, "pca": False},
        "record_shape": list(ctx.data.train.x.shape[1:]),
        "classes": classes,
        "sampling_prior": "normal",
        "sgd": {
            "sigma": sigma,
            "clip": clip,
            "steps": schedule.steps,
            "sample_rate": schedule.sample_rate,
            "batching": p.batching,
            "epoch_ends": schedule.epoch_ends(),
        },
    }
    store.save_model(ctx.model_dir, model, info, result.snapshots)
    return result


def train_dp_vae(ctx: RunContext) -> Ledger | None:
    """Train one DP-VAE run (the MLP VAE end to end with DP-SGD); the non-private variant trains plainly."""
    from dpvae.privacy.budget import StepBudget

    p = ctx.params
    schedule = schedule_of(ctx)
    if not ctx.spec.private:
        train_vae(ctx, clip=p.clip, sigma=0.0 if p.sigma_sgd == "auto" else float(p.sigma_sgd))
        return None

    sigma, notes = dp_vae_sigma(p, schedule, ctx.delta, ctx.epsilon)  # as `accounting.planned_dp_vae_ledger`
    budget = StepBudget(lambda t: paper_epsilon([sgd_record(sigma, schedule, p.clip, t)], ctx.delta), ctx.epsilon)

    def spent(t: int) -> Ledger:  # after t steps (progress lines)
        return dp_vae_ledger(p, sgd_record(sigma, schedule, p.clip, t), ctx.delta, ctx.epsilon, notes)

    result = train_vae(ctx, clip=p.clip, sigma=sigma, budget=budget, epsilon=spent)
    (spent,) = result.engine.mechanisms()  # the engine's own record: sigma, q, steps run, C
    return dp_vae_ledger(p, spent, ctx.delta, ctx.epsilon, notes)


# ------------------------------------------------------------------------------------------ DP-GM


def train_dp_gm(ctx: RunContext) -> Ledger:
    """Train one DP-GM run: DP kernel k-means, then one DP-SGD MLP VAE per cluster."""
    from dpvae.privacy.budget import StepBudget
    from dpvae.privacy.mechanisms.kmeans import dp_kmeans

    p = ctx.params
    classes = store.num_classes(ctx.data)
    vectors = store.to_vectors(ctx.data.train.x, ctx.data.train.y, classes)
    n, d = vectors.shape
    delta, target = ctx.delta, ctx.epsilon

    rate, steps = dpgm_schedule(p, n, ctx.spec.variant)  # as `accounting.planned_dp_gm_ledger`
    sigma_c, sigma = dpgm_sigmas(p, target, delta, rate, steps)
    secret = randomness.is_secret(ctx.spec)
    km = dp_kmeans(
        vectors,
        p.clusters,
        p.kmeans_iters,
        p.rff_dim,
        p.bandwidth * math.sqrt(d),
        sigma_c,
        sigma_c,
        ctx.rng("dp-kmeans"),
        secret,
    )
    assignment = km.assign(vectors)

    def epsilon_after(t: int) -> float:
        return dpgm_accounting(dpgm_mechanisms(p, sigma_c, sigma, rate, t), delta).epsilon

    budget = StepBudget(epsilon_after, target)

    def spent(u: int) -> Ledger:  # after u steps of all clusters (parallel: cluster 0's T steps spend it all)
        return dpgm_ledger(p, sigma_c, sigma, rate, min(u, steps), delta, target, secret)

    progress = Progress("dp-gm DP-SGD (all clusters)", p.clusters * steps, epsilon=spent)
    for j in range(p.clusters):
        rows = np.flatnonzero(assignment == j)
        data = torch.from_numpy(vectors[rows])
        _train_cluster(ctx, j, data, float(km.counts[j]), rate, steps, sigma, budget, classes, d, progress)
    (ctx.model_dir / "dp_gm.json").write_text(
        json.dumps(
            {
                "clusters": p.clusters,
                "noisy_counts": km.counts.tolist(),
                "sigma_clustering": sigma_c,
                "sigma_sgd": sigma,
                "sample_rate": rate,
                "steps": steps,
                "classes": classes,
            },
            indent=2,
        )
    )
    return dpgm_ledger(p, sigma_c, sigma, rate, steps, delta, target, secret)


def _train_cluster(
    ctx: RunContext,
    j: int,
    data,
    noisy_count: float,
    rate: float,
    steps: int,
    sigma: float,
    budget,
    classes: int,
    d: int,
    progress: Progress,
) -> None:
    p = ctx.params
    model = MLPVAE(d, p.latent_dim, p.hidden)
    reparam = ctx.torch_generator(f"reparameterisation-{j}", device="cpu")

    def loss_fn(batch: torch.Tensor) -> torch.Tensor:
        mu, logvar = model.encode(batch)
        z = mu + torch.randn(mu.shape, generator=reparam) * (0.5 * logvar).exp()
        se = (model.decode(z) - batch).square().sum(1)
        return se + gaussian_kl(mu, logvar, torch.zeros_like(mu), torch.ones_like(mu))

    # expected batch from the *noisy* size: the divisor of the noisy sum must not depend on the data
    schedule = ClusterSchedule(len(data), rate, steps, max(1.0, rate * noisy_count))
    fit(
        model,
        data,
        loss_fn,
        schedule,
        lr=p.lr,
        optimizer=p.optimizer,
        clip=p.clip,
        sigma=sigma,
        batch_generator=ctx.torch_generator(f"batches-{j}", device="cpu"),
        noise_generator=ctx.torch_generator(f"dp-sgd-noise-{j}", device="cpu"),
        other_generators=(reparam,),
        budget=budget,
        precision=ctx.precision,
        progress=progress,
    )
    info = {
        "method": "dp-gm",
        "cluster": j,
        "arch": {"data_dim": d, "latent_dim": p.latent_dim, "hidden": p.hidden, "pca": False},
        "record_shape": list(ctx.data.train.x.shape[1:]),
        "classes": classes,
        "sampling_prior": "normal",
        "sgd": {"sigma": sigma, "clip": p.clip, "steps": steps, "sample_rate": rate},
    }
    store.save_model(ctx.model_dir / f"cluster{j}", model, info)


def sample_dp_gm(ctx: RunContext, n: int | None) -> dict[str, np.ndarray]:
    """n records: each cluster's share drawn in proportion to its noisy size."""
    summary = json.loads((ctx.model_dir / "dp_gm.json").read_text())
    count = len(ctx.data.train.y) if n is None else int(n)
    weights = np.clip(np.asarray(summary["noisy_counts"], dtype=np.float64), 0, None)
    weights = weights / weights.sum() if weights.sum() > 0 else np.full(len(weights), 1 / len(weights))
    rng = ctx.rng("dp-gm-sample")
    shares = rng.multinomial(count, weights)
    parts, progress = [], Progress("sampling", count, "records")
    for j, share in enumerate(shares):
        if share:
            model, info = store.load_model(ctx.model_dir / f"cluster{j}")
            generator = ctx.torch_generator(f"sample-{j}", device="cpu")
            parts.append(store.generate(model, info, int(share), generator, progress))
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
