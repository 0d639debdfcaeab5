"""DP-GM (Acs et al., TKDE 2018; no public code), P3GM's competitor (PAPERS.md §3.6).

1. DP kernel k-means (`dpvae.privacy.mechanisms.kmeans`): random Fourier features of a Gaussian kernel,
   noisy Lloyd iterations, noisy sizes of the final clusters; calibrated alone to
   `cluster_budget_fraction`·ε.
2. One MLP VAE per cluster (P3GM's VAE, `dpvae.methods.mlp`), trained with DP-SGD. Every cluster uses the
   same sampling rate q = min(1, B·k/N) (B records per cluster step in expectation for a cluster of N/k)
   and the same T = ⌈epochs/q⌉ steps and σ, so the k runs have one and the same RDP curve; σ is calibrated
   so that clustering + one run meets ε.
3. Samples: each cluster's share of n is drawn in proportion to its noisy size.

Parallel composition (the ledger lists one DP-SGD run): a record's cluster is a function of that record
and the released centres only, so under add/remove-one a neighbouring dataset changes the training set of
exactly one cluster; the k runs are independent given the centres, so the record's privacy loss is that
of one run. Under replace-one (strict ledger) the record may leave one cluster and join another: the
weak-triangle bound through the dataset without it (`replace_one_rdp`) covers that too. The per-cluster
gradient average divides by q·(noisy size), never the true size.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np

from dpvae.errors import ConfigError
from dpvae.methods.base import Method, Resources, RunContext
from dpvae.methods.mlp_common import DPVAEParams
from dpvae.methods.registry import register_method
from dpvae.models.precision import PRECISIONS
from dpvae.params import MethodParams, param

NOTES = (
    "clustering: DP kernel k-means (Gaussian releases of cluster counts and random-Fourier-feature sums, "
    "L2-sensitivity 1 under add/remove-one; replace-one: sqrt(2) and 2), calibrated alone to the clustering "
    "share of epsilon; generators: one DP-SGD run per cluster with identical (sigma, q, T, C), composed in "
    "parallel over the disjoint clusters (a record's cluster depends on it and the released centres only), so "
    "the ledger lists one run. Accountant: RDP, TF-Privacy orders, improved conversion (as the P3GM code). "
    "Strict: replace-one (clustering sensitivities sqrt(2)/2; DP-SGD by the weak triangle inequality, which "
    "also covers a record moving between clusters)."
)


@dataclass(frozen=True)
class DPGMParams(DPVAEParams):
    clusters: int = param(10, "k of DP kernel k-means", minimum=1)
    rff_dim: int = param(1000, "random Fourier features of the kernel k-means", minimum=1)
    cluster_budget_fraction: float = param(0.1, "share of epsilon spent on clustering (its epsilon alone)", exclusive_minimum=0, maximum=1)
    kmeans_iters: int = param(5, "noisy Lloyd iterations of the kernel k-means", minimum=1)
    bandwidth: float = param(0.5, "Gaussian-kernel bandwidth as a multiple of sqrt(record dimension)", exclusive_minimum=0)


def clustering_mechanisms(sigma: float, iterations: int, replace_one: bool = False):
    from dpvae.privacy.ledger import Mechanism

    counts, sums = (math.sqrt(2), 2.0) if replace_one else (1.0, 1.0)
    return (Mechanism("dp_kmeans.counts", sigma / counts, steps=iterations + 1, sensitivity=counts),
            Mechanism("dp_kmeans.sums", sigma / sums, steps=iterations, sensitivity=sums))


def dpgm_accounting(mechanisms, delta: float, replace_one: bool = False):
    from dpvae.privacy.ledger import Accounting

    return Accounting(tuple(mechanisms), delta, "replace-one" if replace_one else "add/remove-one", "rdp", "improved")


def cluster_rate(batch_size: int, clusters: int, n: int) -> float:
    return min(1.0, batch_size * clusters / n)


@register_method
class DPGM(Method):
    name = "dp-gm"
    paper = "p3gm"
    private = True
    description = "DP-GM: DP kernel k-means + one DP-SGD MLP VAE per cluster, sampled by noisy cluster sizes"
    Params = DPGMParams
    RESOURCES = Resources(threads=2, mem_mb=3000, runtime=60)
    precisions = PRECISIONS

    def resources(self, params: MethodParams, dataset: str) -> Resources:
        return Resources(threads=2, mem_mb=3000, runtime=120 if "mnist" in dataset else 60)

    def train(self, ctx: RunContext):
        import torch

        from dpvae.methods.mlp.records import num_classes, to_vectors
        from dpvae.methods.p3gm import solve_sgd_sigma
        from dpvae.privacy.budget import StepBudget
        from dpvae.privacy.ledger import Ledger, Mechanism
        from dpvae.privacy.mechanisms.kmeans import dp_kmeans

        p: DPGMParams = ctx.params
        if p.batching != "poisson":
            raise ConfigError(f"variants.{ctx.spec['variant']}.params.batching: dp-gm supports only 'poisson' "
                              f"(its parallel-composition accounting needs Poisson sampling), got {p.batching!r}")
        classes = num_classes(ctx.data)
        vectors = to_vectors(ctx.data.train.x, ctx.data.train.y, classes)
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
            self._train_cluster(ctx, j, torch.from_numpy(vectors[rows]), float(km.counts[j]), rate, steps, sigma,
                                budget, classes, d)
        (ctx.model_dir / "dp_gm.json").write_text(json.dumps({
            "clusters": p.clusters, "noisy_counts": km.counts.tolist(), "sigma_clustering": sigma_c,
            "sigma_sgd": sigma, "sample_rate": rate, "steps": steps, "classes": classes}, indent=2))
        notes = NOTES + f"; sigma_clustering {sigma_c:.6g}, sigma_sgd {sigma:.6g}, q {rate:.6g}, T {steps}"
        paper = dpgm_accounting(mechanisms(sigma), delta)
        strict = dpgm_accounting(mechanisms(sigma, replace_one=True), delta, replace_one=True)
        return Ledger(paper, strict, target, notes)

    def _train_cluster(self, ctx: RunContext, j: int, data, noisy_count: float, rate: float, steps: int,
                       sigma: float, budget, classes: int, d: int) -> None:
        import torch

        from dpvae.methods.mlp import store
        from dpvae.methods.mlp.training import fit
        from dpvae.models.losses import gaussian_kl
        from dpvae.models.mlp_vae import MLPVAE

        p: DPGMParams = ctx.params
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

    def sample(self, ctx: RunContext, n: int | None) -> dict[str, np.ndarray]:
        from dpvae.methods.mlp import store

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
    `mlp.training.Schedule` for `fit`); `batch_size` is the expected batch from the noisy cluster size."""

    def __init__(self, n: int, rate: float, steps: int, expected_batch: float) -> None:
        self.n, self.sample_rate, self.steps, self.batch_size = n, rate, steps, expected_batch

    def batch(self, generator):
        from dpvae.privacy.dpsgd import poisson_sample

        return poisson_sample(self.n, self.sample_rate, generator)

    def epoch_ends(self) -> list[int]:
        return [self.steps]
