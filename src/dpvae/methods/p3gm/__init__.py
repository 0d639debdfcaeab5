"""P3GM's family: the MLP-VAE methods of the P3GM comparison (Takagi et al.; docs/papers.md §3).

* `p3gm` — P3GM: DP-PCA → DP-EM mixture prior → DP-SGD decoding phase (also PGM and P3GM(AE) by parameters);
* `dp-vae` — the same MLP VAE trained end to end with DP-SGD (the code's `--alg dp-vae`);
* `vae-mlp` — that VAE without privacy (`--alg vae`);
* `dp-gm` — DP-GM (Acs et al.): DP kernel k-means, one DP-SGD MLP VAE per cluster.

Here: their typed parameters and registered methods (light imports); `train.py` trains them, `fit.py` is the
(DP-)SGD loop they share, `store.py` their model files and record vectors, `accounting.py` P3GM's ledgers,
`pretraining.py` the decoder's pre-training steps.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np

from dpvae.methods.base import DPSGD_RELEASES_N, Method, Resources, RunContext, forward, large_records
from dpvae.methods.p3gm.pretraining import PRETRAIN_PASSES, PRETRAIN_STEPS, pretrain_steps
from dpvae.methods.registry import register_method
from dpvae.models.precision import PRECISIONS
from dpvae.params import MethodParams, param
from dpvae.runspec import RunSpec

if TYPE_CHECKING:
    from dpvae.data.declared import Facts
    from dpvae.privacy.ledger import Ledger

Optimizer = Literal["adam", "sgd"]
#: "poisson": each record joins a step's batch independently with probability B/N (what the accountant
#: assumes); "code": the P3GM reference loader — ⌊N/B⌋ fixed consecutive batches, one drawn uniformly
#: with replacement per step, ⌊N/B⌋ − 1 steps per epoch (docs/papers.md A-G8).
Batching = Literal["poisson", "code"]


@dataclass(frozen=True)
class MLPVAEParams(MethodParams):
    """P3GM's MLP VAE [d, hidden, d'] / [d', hidden, d] (tkgsn/P3GM `src/vae.py`), trained without privacy."""

    hidden: int = param(1000, "width of the MLP's hidden layer", minimum=1)
    latent_dim: int = param(30, "latent dimension", minimum=1)
    optimizer: Optimizer = param("adam", "optimizer of the decoder (and encoder) updates")
    lr: float = param(0.001, "learning rate", exclusive_minimum=0)
    epochs: float = param(1, "passes over the training set", minimum=0)
    batch_size: int = param(100, "records per (expected) batch", minimum=1)
    batching: Batching = param("code", "the reference code's fixed batches drawn with replacement, or Poisson sampling")
    record_every_epoch: bool = param(
        False, "keep the model after every epoch and at iterations spaced in log scale (fig 7's curves)"
    )


@dataclass(frozen=True)
class DPVAEParams(MLPVAEParams):
    """The same MLP VAE trained end to end with DP-SGD (per-example clipping, Gaussian noise)."""

    clip: float = param(1.0, "per-example clipping norm C", exclusive_minimum=0)
    sigma_sgd: float | Literal["auto"] = param(
        "auto", "DP-SGD noise multiplier; auto = calibrated to the target epsilon"
    )
    batching: Batching = param(
        "poisson", "Poisson sampling (as accounted) or the reference code's fixed batches drawn with replacement"
    )


PCAMean = Literal["dp", "zero", "nonprivate"]


@dataclass(frozen=True)
class P3GMParams(MethodParams):
    """P3GM (DP-PCA -> DP-EM -> DP-SGD decoder; docs/papers.md §3.1): the paper's and the reference code's switches."""

    hidden: int = param(1000, "width of the MLP's hidden layer", minimum=1)
    optimizer: Optimizer = param("adam", "optimizer of the decoding phase (code: Adam; paper: SGD)")
    lr: float = param(0.001, "learning rate", exclusive_minimum=0)
    epochs: float = param(1, "DP-SGD passes over the training set", minimum=0)
    batch_size: int = param(100, "records per (expected) batch", minimum=1)

    pca_components: int = param(30, "d' = min(this, d) DP-PCA components", minimum=1)
    pca_mean: PCAMean = param(
        "dp", "centring of DP-PCA: a released DP mean, zero (no centring), or the exact mean (the code; not DP)"
    )
    sigma_mean: float = param(
        20.0, "noise multiplier of the DP centring mean (rows clipped to mean_radius*sqrt(d))", minimum=0
    )
    mean_radius: float = param(
        1.0, "row-norm bound of the DP mean per sqrt(d) (1 = features in [0, 1])", exclusive_minimum=0
    )
    sigma_pca: float = param(5.0, "sigma_p of DP-PCA (0 = no noise)", minimum=0)
    sigma_em: float = param(100.0, "sigma_e of DP-EM (0 = no noise)", minimum=0)
    em_iters: int = param(20, "T_e: DP-EM iterations", minimum=1)
    em_components: int = param(1, "mixture components of the DP-EM prior (paper 3, code 1)", minimum=1)
    account_em_init: bool = param(False, "count the initial noisy M-step in the paper ledger (the code does not)")
    clip: float | None = param(1.0, "per-example clipping norm C (null = no clipping, non-private PGM)")
    sigma_sgd: float | Literal["auto"] = param("auto", "DP-SGD noise multiplier; auto = calibrated to the target")
    pretrain_steps: int | Literal["auto"] = param(
        "auto",
        f"non-private decoder pre-training steps on DP outputs (0 = none); auto = min({PRETRAIN_STEPS}, "
        f"ceil({PRETRAIN_PASSES} N / pretrain_batch_size)), the code's {PRETRAIN_STEPS} on large data: N is public "
        "under bounded DP (replace-one neighbours share it); no data value is read",
        minimum=0,
    )
    pretrain_batch_size: int = param(100, "records per pre-training step", minimum=1)
    sampling_prior: Literal["normal", "mog"] = param(
        "mog",
        "prior of released samples: the DP-MoG (paper) or N(0, I) (code HEAD, config.yaml's paper variants: A-G6; "
        "with d' = d it whitens the code, and Adult's label comes out independent of the features, AUROC ~0.5)",
    )
    encoder_variance: Literal["learned", "zero", "no_kl"] = param(
        "learned", "sigma_phi(x) learned; 0 (P3GM(AE), the paper); or learned without the KL term (the code's P3GM-AE)"
    )
    batching: Batching = param(
        "poisson", "Poisson sampling (as accounted) or the code's fixed batches with replacement"
    )
    record_every_epoch: bool = param(
        False, "keep the decoder after every epoch and at iterations spaced in log scale (fig 7's curves)"
    )


@dataclass(frozen=True)
class DPGMParams(DPVAEParams):
    clusters: int = param(10, "k of DP kernel k-means", minimum=1)
    rff_dim: int = param(1000, "random Fourier features of the kernel k-means", minimum=1)
    cluster_budget_fraction: float = param(
        0.1, "share of epsilon spent on clustering (its epsilon alone)", exclusive_minimum=0, maximum=1
    )
    kmeans_iters: int = param(5, "noisy Lloyd iterations of the kernel k-means", minimum=1)
    bandwidth: float = param(
        0.5, "Gaussian-kernel bandwidth as a multiple of sqrt(record dimension)", exclusive_minimum=0
    )


class MLPVAEMethod(Method):
    """Sampling, reconstruction and per-epoch snapshots of a model saved by `store.py`."""

    precisions = PRECISIONS  # their training loop (`fit.py`) applies each

    def sample(self, ctx: RunContext, n: int | None) -> dict[str, np.ndarray]:
        """n records (default: as many as the training split, the code's synthetic-set size)."""
        from dpvae.methods.p3gm import store

        model, info = store.load_model(ctx.model_dir)
        count = len(ctx.data.train.y) if n is None else int(n)
        return store.generate(model, info, count, ctx.torch_generator("sample", device="cpu"))

    def reconstruct(self, ctx: RunContext, x: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
        """decoder(encoder mean) of real records: P3GM's "public" synthetic data (Table VIII as computed)."""
        from dpvae.methods.p3gm import store

        model, info = store.load_model(ctx.model_dir)
        return store.reconstruct(model, info, store.to_vectors(x, y, info["classes"]))

    def snapshot_count(self, ctx: RunContext) -> int:
        """How many per-epoch snapshots the run kept (0 without record_every_epoch)."""
        from dpvae.methods.p3gm import store

        if not (ctx.model_dir / store.SNAPSHOTS).is_file():
            return 0
        return len(store.load_info(ctx.model_dir)["sgd"]["epoch_ends"])

    def sample_snapshot(self, ctx: RunContext, index: int, n: int | None) -> dict[str, np.ndarray]:
        """n records from the decoder as it was at the end of epoch `index + 1` (same prior as `sample`)."""
        from dpvae.methods.p3gm import store

        model, info = store.load_model(ctx.model_dir)
        snapshots, ends = store.load_snapshots(ctx.model_dir), info["sgd"]["epoch_ends"]
        if not snapshots or not 0 <= index < len(ends):
            kept = len(ends) if snapshots else 0
            raise IndexError(f"run {ctx.spec.run_id} kept {kept} epoch snapshots, asked for #{index}")
        model.load_state_dict({**model.state_dict(), **snapshots[ends[index]]})
        count = len(ctx.data.train.y) if n is None else int(n)
        return store.generate(model, info, count, ctx.torch_generator(f"sample-epoch{index + 1}", device="cpu"))

    def recon_curve(self, ctx: RunContext, x: np.ndarray, y: np.ndarray) -> list[tuple[int, float]]:
        """(iteration, reconstruction loss of records x, y) for every snapshot the run kept: the model's
        released states (DP-SGD's iterates) scored on data outside training, never a loss of training batches."""
        from dpvae.methods.p3gm import store

        model, info = store.load_model(ctx.model_dir)
        vectors = store.to_vectors(x, y, info["classes"])
        curve = []
        for step, state in store.load_snapshots(ctx.model_dir).items():
            model.load_state_dict({**model.state_dict(), **state})
            curve.append((step, store.recon_loss(model, vectors)))
        return curve


@register_method
class VAEMLP(MLPVAEMethod):
    name = "vae-mlp"
    data_scaling = (
        "Any [d] records or images (flattened). Widths are fixed (`hidden` 1000, `latent_dim` 30); "
        "`batch_size` 100 records a step, so `epochs` sets the steps (N / 100 each); on a small set lower both."
    )
    paper = "p3gm"
    private = False
    description = "non-private MLP VAE with N(0, I) prior (P3GM's VAE)"
    Params = MLPVAEParams
    RESOURCES = Resources(threads=2, mem_mb=3000, runtime=30)

    def train(self, ctx: RunContext) -> None:
        from dpvae.methods.p3gm.train import train_vae

        train_vae(ctx)
        return None


@register_method
class DPVAE(MLPVAEMethod):
    name = "dp-vae"
    data_scaling = (
        "As vae-mlp; a private run's noise is calibrated to the sampling rate batch_size / N and the steps, so a "
        "small N at the same epochs means few, noisy steps: raise `epochs` or lower `batch_size`."
    )
    paper = "p3gm"
    private = True
    description = "MLP VAE trained end to end with DP-SGD"
    releases_n = DPSGD_RELEASES_N
    Params = DPVAEParams
    released = ("model.pt", "snapshots.pt")  # DP-SGD's iterates
    RESOURCES = Resources(threads=2, mem_mb=3000, runtime=30)

    def resources(self, params: MethodParams, facts: Facts | None) -> Resources:
        return Resources(threads=2, mem_mb=3000, runtime=90 if large_records(facts) else 30)

    train = forward("dpvae.methods.p3gm.train", "train_dp_vae")

    recompute_ledger = forward("dpvae.methods.p3gm.accounting", "recompute_dp_vae_ledger")

    def planned_ledger(self, params: DPVAEParams, spec: RunSpec, facts: Facts) -> Ledger:
        """DP-SGD alone: q = B/N and the steps of its `fit.Schedule` (Poisson or the code's batches)."""
        from dpvae.methods.p3gm.accounting import planned_dp_vae_ledger

        return planned_dp_vae_ledger(params, spec, facts.n_train)


@register_method
class P3GM(MLPVAEMethod):
    name = "p3gm"
    data_scaling = (
        "Any [d] records or images (flattened). DP-PCA keeps d' = min(`pca_components`, d) dims; `batch_size` "
        "and `pretrain_batch_size` (100) are records per step and must fit the training split (checked); the "
        "noise is calibrated to batch_size / N, so a small N wants fewer `epochs` or a smaller `batch_size`; "
        f"the decoder's pre-training (`pretrain_steps: auto`) scales with N up to the code's {PRETRAIN_STEPS:,} steps."
    )
    paper = "p3gm"
    private = True
    description = "P3GM: DP-PCA + DP-EM encoder, DP-SGD decoder (also PGM and P3GM(AE) by parameters)"
    releases_n = (
        f"the DP centring mean is a noisy sum divided by N; {DPSGD_RELEASES_N}; pre-training steps (auto) from N"
    )
    Params = P3GMParams
    RESOURCES = Resources(threads=2, mem_mb=3000, runtime=30)
    released = ("model.pt", "snapshots.pt", "model.json")  # the DP-PCA encoder, DP-SGD's iterates, the DP-EM prior

    def data_errors(self, params: P3GMParams, facts: Facts) -> list[tuple[str, str]]:
        """Pre-training draws `pretrain_batch_size` records a step from the training split."""
        if pretrain_steps(params, facts.n_train) and params.pretrain_batch_size > facts.n_train:
            why = f"{params.pretrain_batch_size} records a step but the run has {facts.n_train} training records"
            return [("pretrain_batch_size", why)]
        return []

    def resources(self, params: MethodParams, facts: Facts | None) -> Resources:
        heavy = large_records(facts) and params.record_every_epoch
        return Resources(threads=2, mem_mb=3000, runtime=90 if heavy else 30)

    train = forward("dpvae.methods.p3gm.train", "train_p3gm")

    recompute_ledger = forward("dpvae.methods.p3gm.accounting", "recompute_p3gm_ledger")

    def planned_ledger(self, params: P3GMParams, spec: RunSpec, facts: Facts) -> Ledger:
        """The encoding records on rows of d = features + label classes (the one-hot label), then DP-SGD."""
        from dpvae.methods.p3gm.accounting import planned_p3gm_ledger
        from dpvae.methods.p3gm.store import vector_dimension

        return planned_p3gm_ledger(params, spec, facts.n_train, vector_dimension(facts.record_shape, facts.classes))

    def sound_calibrated_params(self, params: P3GMParams, planned: Callable, target: float) -> P3GMParams | None:
        """Every stage's noise (DP mean, DP-PCA, DP-EM, DP-SGD) scaled by one factor until the sound ε meets the
        target: the split between the stages is the configured one (`p3gm.accounting.scaled_to_sound`)."""
        from dpvae.methods.p3gm.accounting import scaled_to_sound

        return scaled_to_sound(params, planned, target)


@register_method
class DPGM(Method):
    name = "dp-gm"
    data_scaling = (
        "[d] records (tables, flattened images). `clusters` (10) must leave records in each (checked: at most "
        "N); `batch_size` is the expected records per cluster step, its rate capped at 1; the kernel `bandwidth` "
        "scales with sqrt(d)."
    )
    paper = "p3gm"
    private = True
    description = "DP-GM: DP kernel k-means + one DP-SGD MLP VAE per cluster, sampled by noisy cluster sizes"
    releases_n = "each cluster's DP-SGD sample rate B·k/N and its steps are in the ledger"
    Params = DPGMParams
    RESOURCES = Resources(threads=2, mem_mb=3000, runtime=60)
    released = ("dp_gm.json", "cluster*/model.pt")  # the noisy cluster sizes, each cluster's DP-SGD model
    precisions = PRECISIONS

    def data_errors(self, params: DPGMParams, facts: Facts) -> list[tuple[str, str]]:
        """Every cluster needs records: at most one cluster per training record."""
        if params.clusters > facts.n_train:
            return [("clusters", f"{params.clusters} clusters but the run has {facts.n_train} training records")]
        return []

    def resources(self, params: MethodParams, facts: Facts | None) -> Resources:
        return Resources(threads=2, mem_mb=3000, runtime=120 if large_records(facts) else 60)

    train = forward("dpvae.methods.p3gm.train", "train_dp_gm")

    recompute_ledger = forward("dpvae.methods.p3gm.accounting", "recompute_dp_gm_ledger")

    def planned_ledger(self, params: DPGMParams, spec: RunSpec, facts: Facts) -> Ledger:
        """DP kernel k-means and one DP-SGD run per cluster at q = B·k/N (`accounting.dpgm_schedule`)."""
        from dpvae.methods.p3gm.accounting import planned_dp_gm_ledger

        return planned_dp_gm_ledger(params, spec, facts.n_train)

    sample = forward("dpvae.methods.p3gm.train", "sample_dp_gm")
