"""P3GM's privacy accounting, once: the code's own way ("paper") and a sound way (docs/papers.md §3.1, §3.5, §5).

P3GM releases a DP-PCA (XᵀX of centred, clipped rows), a DP-EM mixture and a DP-SGD decoder. The code
centres the PCA with the data's *exact* mean, which then sits in the frozen encoder's bias, neither
released privately nor accounted: such a run is not DP (`centring="nonprivate"`, the paper-code switch;
its ledger says so). The default centres with a DP mean (rows clipped to `mean_clip`, Gaussian noise
σ_m·`mean_clip` on their sum, divided by the public training size N), released and budgeted; "zero"
does not centre (a data-independent constant) and costs nothing.

A run's ledger is composed from the records its mechanisms return (`dp_pca` with its DP mean, DP-EM, the
DP-SGD engine's steps): `p3gm_ledger`. Paper = the code's accountant (add/remove-one RDP sum, TF-Privacy's
orders, improved conversion); sound = replace-one, the relation the paper states (`sound_record`: DP mean
σ_m/2 at 2R, DP-PCA σ_p/√2 at √2, DP-SGD by Mironov's Prop. 11 with Poisson sampling or the fixed-partition
bound for the code's batches), with the initial noisy EM M-step counted. `P3GMSetting` describes a run by its
settings (exp.sh's arguments) and accounts the records such a run makes with the same `p3gm_ledger`. σ_s is
calibrated by `sgd_sigma` (the project's one solver, `privacy.accounting.solve_noise_multiplier`). DP-VAE's
ledger (DP-SGD alone) and DP-GM's (DP kernel k-means + parallel DP-SGD runs) are here too.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, NamedTuple, get_args

from dpvae import randomness
from dpvae.errors import ConfigError, PrivacyBudgetExceeded
from dpvae.privacy.accounting import Conversion, solve_noise_multiplier
from dpvae.privacy.ledger import Accounting, Ledger, Mechanism, recorded_mechanisms, replace_one_record
from dpvae.privacy.mechanisms.em import dp_em_records
from dpvae.privacy.mechanisms.pca import MEAN_RECORD, PCA_RECORD, dp_pca_records, kept_components
from dpvae.runspec import RunSpec
from dpvae.samplers import gaussian_sampler, restated

Centring = Literal["dp", "zero", "nonprivate"]
CENTRINGS: tuple[str, ...] = get_args(Centring)

P3GM_DELTA = 1e-5
P3GM_TEST_FRACTION = 0.1
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
DPVAE_NOTES = (
    "paper: the P3GM code's accountant for DP-SGD (add/remove-one, TF-Privacy orders, improved conversion); "
    "sound: replace-one via Mironov 2017 Prop. 11 (Poisson sampling) or the fixed-partition bound (the code's "
    "fixed batches)"
)
DPGM_NOTES = (
    "clustering: DP kernel k-means (Gaussian releases of cluster counts and random-Fourier-feature sums, "
    "L2-sensitivity 1 under add/remove-one; replace-one: sqrt(2) and 2), calibrated alone to the clustering "
    "share of epsilon; generators: one DP-SGD run per cluster with identical (sigma, q, T, C), composed in "
    "parallel over the disjoint clusters (a record's cluster depends on it and the released centres only), so "
    "the ledger lists one run. Accountant: RDP, TF-Privacy orders, improved conversion (as the P3GM code). "
    "Strict: replace-one (clustering sensitivities sqrt(2)/2; DP-SGD by the weak triangle inequality, which "
    "also covers a record moving between clusters)."
)
#: names of the records a run's mechanisms return (`dp_pca`'s MEAN_RECORD and PCA_RECORD, `dp_em_diagonal_gmm`,
#: the DP-SGD engine)
SGD_RECORD = "dpsgd"
EM_WEIGHTS, EM_MEANS, EM_VARIANCES = "dp_em.weights", "dp_em.means", "dp_em.variances"


# ------------------------------------------------------------------------------------------ one ledger


def sound_record(record: Mechanism, em_iters: int, em_components: int, fixed_batches: bool) -> Mechanism:
    """The record under replace-one adjacency (q = 1 releases: multiplier relative to the replace-one
    sensitivity), with the EM's initial noisy M-step counted ((T_e + 1) M-steps of 2K + 1 releases); DP-SGD
    as `privacy.ledger.replace_one_record` (Poisson as is, the code's fixed batches by the fixed-partition bound)."""
    if record.name in (MEAN_RECORD, PCA_RECORD):  # (a release's sampler restated at the replace-one sensitivity)
        factor = 2.0 if record.name == MEAN_RECORD else math.sqrt(2)
        under = factor * record.sensitivity
        sampler = None if record.sampler is None else restated(record.sampler, record.sensitivity, under)
        return Mechanism(record.name, record.noise_multiplier / factor, 1.0, record.steps, under, sampler=sampler)
    if record.name.startswith("dp_em."):
        per_m_step = 1 if record.name == EM_WEIGHTS else em_components
        return replace(record, steps=per_m_step * (em_iters + 1))
    return replace_one_record(record, fixed_batches)  # DP-SGD: a P3GM run's or a DP-SGD engine's own record


def paper_accounting(records: Sequence[Mechanism], delta: float) -> Accounting:
    """The code's accountant over the records: add/remove-one RDP sum, improved conversion."""
    return Accounting(tuple(records), delta, adjacency="add/remove-one", accountant="rdp", conversion="improved")


def paper_epsilon(records: Sequence[Mechanism], delta: float) -> float:
    """The headline ε alone: what calibration and the step budget check, cheaply (the sound accounting's
    replace-one curve costs seconds per evaluation)."""
    return paper_accounting(records, delta).epsilon


def p3gm_ledger(
    records: Sequence[Mechanism],
    delta: float,
    em_iters: int = 0,
    em_components: int = 1,
    target: float | None = None,
    notes: str = NOTES,
    not_dp: str | None = None,
    fixed_batches: bool = False,
) -> Ledger:
    """Paper (the code's accountant, the headline) and sound accountings of the given mechanism records; a
    release that is not DP (the exact centring mean) has no sound accounting and says why."""
    records = tuple(records)
    paper = paper_accounting(records, delta)
    if not_dp is not None:
        return Ledger(paper, None, target, f"{not_dp}; {notes}", not_dp=not_dp)
    sound = Accounting(
        tuple(sound_record(r, em_iters, em_components, fixed_batches) for r in records),
        delta,
        adjacency="replace-one",
        accountant="rdp",
        conversion="improved",
    )
    return Ledger(paper, sound, target, notes)


def sgd_sigma(
    configured: float | str,
    encoding: Sequence[Mechanism],
    sgd: Callable[[float], Mechanism],
    delta: float,
    target: float,
    notes: str,
    what: str = "run",
) -> tuple[float, str]:
    """σ_s and the ledger's note: the smallest σ (rounded up, never below the configured one) whose paper ε of
    the `encoding` records and the DP-SGD record `sgd(σ)` meets `target`; `configured` "auto" = from 2⁻⁸ up."""
    if encoding and (spent := paper_epsilon(encoding, delta)) > target:
        raise PrivacyBudgetExceeded(target, spent, what=what)

    def epsilon_of(sigma: float) -> float:
        return paper_epsilon([*encoding, sgd(sigma)], delta)

    given = 2.0**-8 if configured == "auto" else float(configured)
    sigma = solve_noise_multiplier(epsilon_of, target, floor=given)
    if configured == "auto":
        return sigma, f"{notes}; sigma_sgd calibrated to the target: {sigma:.6g}"
    if sigma > given:
        return sigma, (
            f"{notes}; sigma_sgd raised from the configured {given:g} to {sigma:.6g} (the configured "
            f"value gives epsilon {epsilon_of(given):.4f} > target {target:g})"
        )
    return sigma, notes


# ------------------------------------------------------------- a run's plan: what training and planning share


def check_private(params: Any, variant: str, sgd_steps: int) -> None:
    """A private run needs noise in every mechanism it runs (σ = 0 means no privacy at all)."""
    key = f"variants.{variant}.params"
    zero = [k for k in ("sigma_pca", "sigma_em") if getattr(params, k) == 0]
    zero += ["sigma_mean"] if params.pca_mean == "dp" and params.sigma_mean == 0 else []
    zero += ["sigma_sgd"] if sgd_steps and params.sigma_sgd == 0 else []
    if zero:
        raise ConfigError(
            f"config key '{key}.{zero[0]}': 0 gives no privacy; a private P3GM run needs noise "
            "in every mechanism (set 'private: false' for PGM)"
        )
    if sgd_steps and params.clip is None:
        raise ConfigError(f"config key '{key}.clip': a private P3GM run needs a clipping norm")


def centring(params: Any, dimension: int) -> dict[str, Any]:
    """`dp_pca`'s centring arguments for rows of `dimension` d: a DP mean (rows clipped to mean_radius·√d,
    released and recorded by `dp_pca`), 0, or "nonprivate" (the exact mean, as the reference code; not DP)."""
    if params.pca_mean == "zero":
        return {"mean": 0.0}
    if params.pca_mean == "nonprivate":
        return {"mean": "nonprivate"}
    clip = params.mean_radius * math.sqrt(dimension)
    return {"mean": "dp", "mean_noise_multiplier": params.sigma_mean, "mean_clip": clip}


def encoding_records(params: Any, dimension: int, secret: bool = False) -> tuple[Mechanism, ...]:
    """The records a run's encoding phase returns on rows of `dimension` d (features + one-hot label), known before
    it runs: `dp_pca`'s (`centring`) and DP-EM's on the d' = min(pca_components, d) PCA features (`secret`: a
    release's, with their discrete samplers)."""
    kept = kept_components(params.pca_components, dimension)
    em = dp_em_records(
        params.em_components,
        params.em_iters,
        params.sigma_em,
        kept,
        account_initial_step=params.account_em_init,
        secret=secret,
    )
    pca = dp_pca_records(params.sigma_pca, **centring(params, dimension), dimension=dimension if secret else None)
    return (*pca, *em)


def sgd_record(sigma: float, schedule: Any, clip: float, steps: int | None = None) -> Mechanism:
    """The DP-SGD record of `steps` (default: all of the `schedule`'s, `fit.Schedule`) steps at multiplier σ."""
    return Mechanism(
        SGD_RECORD, float(sigma), schedule.sample_rate, schedule.steps if steps is None else steps, float(clip)
    )


def run_sgd_sigma(
    params: Any, encoding: Sequence[Mechanism], schedule: Any, delta: float, target: float
) -> tuple[float, str]:
    """A private P3GM run's σ_s and ledger note (`sgd_sigma` over its encoding records and its schedule's DP-SGD)."""
    if schedule.steps == 0:
        return 0.0 if params.sigma_sgd == "auto" else float(params.sigma_sgd), NOTES
    return sgd_sigma(params.sigma_sgd, encoding, lambda s: sgd_record(s, schedule, params.clip), delta, target, NOTES)


def planned_p3gm_ledger(params: Any, spec: RunSpec, n: int, dimension: int) -> Ledger:
    """The ledger a private P3GM run on `n` rows of `dimension` d writes, before it trains: the encoding records,
    σ_s calibrated on them and the schedule's steps, as `train.train_p3gm` does."""
    from dpvae.methods.p3gm.fit import Schedule

    schedule = Schedule(params.batching, n, params.batch_size, params.epochs)
    check_private(params, spec.variant, schedule.steps)
    encoding = encoding_records(params, dimension, randomness.is_secret(spec))
    sigma, notes = run_sgd_sigma(params, encoding, schedule, spec.delta, spec.epsilon)
    sgd = (sgd_record(sigma, schedule, params.clip),) if schedule.steps else ()
    return run_ledger(params, (*encoding, *sgd), spec.delta, spec.epsilon, notes)


def dp_vae_sigma(params: Any, schedule: Any, delta: float, target: float) -> tuple[float, str]:
    """A private DP-VAE run's σ and ledger note: its DP-SGD alone calibrated (`sgd_sigma`) to the target."""
    return sgd_sigma(params.sigma_sgd, (), lambda s: sgd_record(s, schedule, params.clip), delta, target, DPVAE_NOTES)


def dp_vae_ledger(params: Any, run: Mechanism, delta: float, target: float | None, notes: str) -> Ledger:
    """A DP-VAE run's ledger of its DP-SGD record `run` (the fixed-partition bound with the code's batches)."""
    return p3gm_ledger([run], delta, target=target, notes=notes, fixed_batches=params.batching == "code")


def planned_dp_vae_ledger(params: Any, spec: RunSpec, n: int) -> Ledger:
    """The ledger a private DP-VAE run on `n` rows writes, before it trains (as `train.train_dp_vae`)."""
    from dpvae.methods.p3gm.fit import Schedule

    schedule = Schedule(params.batching, n, params.batch_size, params.epochs)
    sigma, notes = dp_vae_sigma(params, schedule, spec.delta, spec.epsilon)
    return dp_vae_ledger(params, sgd_record(sigma, schedule, params.clip), spec.delta, spec.epsilon, notes)


def run_ledger(params: Any, records: Sequence[Mechanism], delta: float, target: float | None, notes: str) -> Ledger:
    """A P3GM (PGM, P3GM(AE)) run's ledger from its records: not DP with the exact centring mean, DP-SGD by the
    fixed-partition bound with the code's batches."""
    not_dp = NOT_DP_NONPRIVATE_MEAN if params.pca_mean == "nonprivate" else None
    return p3gm_ledger(
        records,
        delta,
        params.em_iters,
        params.em_components,
        target,
        notes,
        not_dp,
        fixed_batches=params.batching == "code",
    )


def recompute_p3gm_ledger(params: Any, spec: RunSpec, recorded: dict) -> Ledger:
    """A P3GM run's ledger computed again from its parameters and its records (σ_s recalibrated)."""
    records = recorded_mechanisms(recorded)
    encoding = tuple(r for r in records if r.name != SGD_RECORD)
    runs = [r for r in records if r.name == SGD_RECORD]
    if not runs:
        return run_ledger(params, encoding, spec.delta, spec.epsilon, NOTES)
    (run,) = runs

    def sgd(sigma: float) -> Mechanism:
        return Mechanism(SGD_RECORD, sigma, run.sample_rate, run.steps, params.clip)

    sigma, notes = sgd_sigma(params.sigma_sgd, encoding, sgd, spec.delta, spec.epsilon, NOTES)
    return run_ledger(params, (*encoding, sgd(sigma)), spec.delta, spec.epsilon, notes)


def recompute_dp_vae_ledger(params: Any, spec: RunSpec, recorded: dict) -> Ledger:
    """A DP-VAE run's ledger computed again from its parameters and the rate and steps it records."""
    (run,) = recorded_mechanisms(recorded)
    sigma, notes = dp_vae_sigma(params, run, spec.delta, spec.epsilon)  # the record has q and T as a schedule
    return dp_vae_ledger(params, replace(run, noise_multiplier=sigma), spec.delta, spec.epsilon, notes)


# ------------------------------------------------------------------------------- a run by its settings


def p3gm_train_size(n_rows: int, test_fraction: float = P3GM_TEST_FRACTION) -> int:
    """Training rows after P3GM's split: scikit-learn's train_test_split keeps n − ⌈test_fraction·n⌉."""
    if isinstance(n_rows, bool) or int(n_rows) != n_rows or n_rows < 2:
        raise ValueError(f"n_rows must be an integer >= 2, got {n_rows}")
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    return int(n_rows) - math.ceil(test_fraction * n_rows)


@dataclass(frozen=True)
class P3GMSetting:
    """One P3GM run's privacy-relevant settings (`src/synthesize.py` arguments; defaults = exp.sh).

    `centring`: "dp" (default: a released DP mean with multiplier `mean_sigma` on rows clipped to
    `mean_clip`, e.g. √d for features in [0, 1]), "zero" (no centring: data-independent) or
    "nonprivate" (the code's exact mean: not DP).
    """

    n_train: int
    batch_size: int
    epochs: float
    sgd_sigma: float
    pca_sigma: float
    em_sigma: float = 100.0
    em_iters: int = 20
    n_components: int = 1
    clip: float = 1.0
    delta: float = P3GM_DELTA
    centring: Centring = "dp"
    mean_sigma: float = 20.0
    mean_clip: float = 1.0

    def __post_init__(self) -> None:
        for name in ("n_train", "batch_size", "n_components"):
            value = getattr(self, name)
            if isinstance(value, bool) or int(value) != value or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value}")
        if self.batch_size > self.n_train:
            raise ValueError(f"batch_size must be <= n_train ({self.n_train}), got {self.batch_size}")
        if isinstance(self.em_iters, bool) or int(self.em_iters) != self.em_iters or self.em_iters < 0:
            raise ValueError(f"em_iters must be an integer >= 0, got {self.em_iters}")
        if not self.epochs >= 0:
            raise ValueError(f"epochs must be >= 0, got {self.epochs}")
        if not self.sgd_sigma >= 0:
            raise ValueError(f"sgd_sigma must be >= 0, got {self.sgd_sigma}")
        for name in ("pca_sigma", "em_sigma", "clip", "mean_sigma", "mean_clip"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        if self.centring not in CENTRINGS:
            raise ValueError(f"centring must be one of {CENTRINGS}, got {self.centring!r}")

    @property
    def sgd_steps(self) -> int:
        """T = ⌈epochs·N/B⌉ as the code's accountant counts it (its loader runs ⌊N/B⌋ − 1 per epoch)."""
        return math.ceil(self.epochs * self.n_train / self.batch_size)

    def encoding_records(self) -> tuple[Mechanism, ...]:
        """The records a run's encoding phase returns (add/remove-one, N public as in q = B/N): the DP mean if
        any (q = 1, σ_m, sensitivity R = `mean_clip`), DP-PCA (σ_p, sensitivity 1 for unit rows) and DP-EM's
        T_e M-steps of 2K + 1 Gaussians at σ_e (the run's EM sensitivities depend on its data: 1 here)."""
        mean = (Mechanism(MEAN_RECORD, self.mean_sigma, 1.0, 1, self.mean_clip),) if self.centring == "dp" else ()
        k, t = self.n_components, self.em_iters
        return (
            *mean,
            Mechanism(PCA_RECORD, self.pca_sigma, sensitivity=1.0),
            Mechanism(EM_WEIGHTS, self.em_sigma, steps=t),
            Mechanism(EM_MEANS, self.em_sigma, steps=k * t),
            Mechanism(EM_VARIANCES, self.em_sigma, steps=k * t),
        )

    def sgd_record(self, sigma: float | None = None) -> Mechanism:
        """DP-SGD: q = B/N, T = ⌈epochs·N/B⌉, clip C, multiplier σ_s (or `sigma`)."""
        sigma = self.sgd_sigma if sigma is None else sigma
        return Mechanism(SGD_RECORD, sigma, self.batch_size / self.n_train, self.sgd_steps, self.clip)

    def records(self) -> tuple[Mechanism, ...]:
        return (*self.encoding_records(), self.sgd_record())

    def ledger(self, target_epsilon: float | None = None, notes: str = NOTES) -> Ledger:
        """`p3gm_ledger` of the records such a run makes (Poisson batches); not DP with the exact mean."""
        not_dp = NOT_DP_NONPRIVATE_MEAN if self.centring == "nonprivate" else None
        return p3gm_ledger(self.records(), self.delta, self.em_iters, self.n_components, target_epsilon, notes, not_dp)


def p3gm_fit_sgd_sigma(setting: P3GMSetting, target_epsilon: float) -> P3GMSetting:
    """`setting` with σ_s raised (never lowered) to the smallest value, rounded up, whose headline ε meets
    `target_epsilon` exactly (`sgd_sigma`); unchanged if it already does.

    The papers' fixed σ_s (exp.sh) give ε slightly above 1 on some datasets (Adult 1.009, ISOLET 1.006)
    and the DP centring mean costs a little more: those runs raise σ_s instead of overspending.
    Raises PrivacyBudgetExceeded if the mechanisms before DP-SGD alone already exceed the target.
    """
    sigma, _ = sgd_sigma(
        setting.sgd_sigma,
        setting.encoding_records(),
        setting.sgd_record,
        setting.delta,
        target_epsilon,
        NOTES,
        what="run's encoding phase (DP mean, DP-PCA, DP-EM)",
    )
    return replace(setting, sgd_sigma=sigma)


class CompositionComparison(NamedTuple):
    """P3GM fig9: the same mechanisms under Theorem 4's RDP sum and under the baseline composition."""

    proposed: Accounting
    baseline: Accounting


def p3gm_composition_comparison(setting: P3GMSetting, conversion: Conversion = "classic") -> CompositionComparison:
    """Fig 9: RDP composition vs baseline (PCA by the classic Gaussian bound, EM by zCDP, SGD by the
    moments accountant, each at δ/3, ε summed) over Theorem 4's three mechanisms (the paper's, without
    a centring mean: DP-PCA, DP-EM's T_e·(2K+1) Gaussians as one, DP-SGD). docs/papers.md's [computed] values use
    the classic conversion for the RDP curve too."""
    em_releases = setting.em_iters * (2 * setting.n_components + 1)
    mechanisms = (
        Mechanism("DP-PCA", setting.pca_sigma),
        Mechanism("DP-EM", setting.em_sigma, 1.0, em_releases),
        replace(setting.sgd_record(), name="DP-SGD"),
    )
    return CompositionComparison(
        proposed=Accounting(mechanisms, setting.delta, accountant="rdp", conversion=conversion),
        baseline=Accounting(
            mechanisms, setting.delta, accountant="gaussian+zcdp+moments (sequential)", conversion=conversion
        ),
    )


# ------------------------------------------------------------------------------------------------ DP-GM


def clustering_mechanisms(
    sigma: float, iterations: int, replace_one: bool = False, shape: tuple[int, int] | None = None
) -> tuple[Mechanism, ...]:
    """DP kernel k-means' releases: noisy counts (T + 1 times) and feature sums (T times); `shape` (k, D): a
    release's, whose discrete samplers are recorded (the noise set at add/remove sensitivity 1, `kmeans_records`)."""
    counts, sums = (math.sqrt(2), 2.0) if replace_one else (1.0, 1.0)
    exact = (None, None)
    if shape is not None:
        k, features = shape
        exact = (
            gaussian_sampler(sigma, 1.0, k, integer=True, under=counts),
            gaussian_sampler(sigma, 1.0, k * features, under=sums),
        )
    return (
        Mechanism("dp_kmeans.counts", sigma / counts, steps=iterations + 1, sensitivity=counts, sampler=exact[0]),
        Mechanism("dp_kmeans.sums", sigma / sums, steps=iterations, sensitivity=sums, sampler=exact[1]),
    )


def dpgm_accounting(mechanisms: Sequence[Mechanism], delta: float, replace_one: bool = False) -> Accounting:
    return Accounting(tuple(mechanisms), delta, "replace-one" if replace_one else "add/remove-one", "rdp", "improved")


def cluster_rate(batch_size: int, clusters: int, n: int) -> float:
    """Every cluster's sampling rate: B records a step in expectation for a cluster of N/k."""
    return min(1.0, batch_size * clusters / n)


def dpgm_mechanisms(
    params: Any,
    sigma_clustering: float,
    sigma: float,
    rate: float,
    steps: int,
    replace_one: bool = False,
    secret: bool = False,
) -> tuple[Mechanism, ...]:
    """The k-means releases and one DP-SGD run (the clusters' runs compose in parallel); `secret`: a release's."""
    shape = (params.clusters, params.rff_dim) if secret else None
    return (
        *clustering_mechanisms(sigma_clustering, params.kmeans_iters, replace_one, shape),
        Mechanism("dpsgd (one per cluster, parallel composition)", sigma, rate, steps, params.clip),
    )


def dpgm_schedule(params: Any, n: int, variant: str) -> tuple[float, int]:
    """(q, T) every cluster's DP-SGD run shares on `n` records: q = `cluster_rate`, T = ⌈epochs/q⌉ (Poisson
    sampling only: the parallel composition needs it; refused otherwise, naming the variant's key)."""
    if params.batching != "poisson":
        raise ConfigError(
            f"variants.{variant}.params.batching: dp-gm supports only 'poisson' "
            f"(its parallel-composition accounting needs Poisson sampling), got {params.batching!r}"
        )
    rate = cluster_rate(params.batch_size, params.clusters, n)
    return rate, math.ceil(params.epochs / rate - 1e-9)


def dpgm_sigmas(params: Any, epsilon: float, delta: float, rate: float, steps: int) -> tuple[float, float]:
    """σ of the k-means (calibrated alone to its share of ε) and of the DP-SGD runs (the rest; as configured
    where that meets the target)."""
    share = epsilon * params.cluster_budget_fraction
    sigma_c = solve_noise_multiplier(
        lambda s: dpgm_accounting(clustering_mechanisms(s, params.kmeans_iters), delta).epsilon, share, floor=2.0**-8
    )
    given = 2.0**-8 if params.sigma_sgd == "auto" else float(params.sigma_sgd)
    if not steps:
        return sigma_c, given
    sigma = solve_noise_multiplier(
        lambda s: dpgm_accounting(dpgm_mechanisms(params, sigma_c, s, rate, steps), delta).epsilon, epsilon, floor=given
    )
    return sigma_c, sigma


def dpgm_ledger(
    params: Any,
    sigma_clustering: float,
    sigma: float,
    rate: float,
    steps: int,
    delta: float,
    target: float | None,
    secret: bool = False,
) -> Ledger:
    """Paper (add/remove-one) and strict (replace-one) accountings of a DP-GM run (`secret`: a release's, its
    k-means noise from the discrete samplers)."""
    notes = DPGM_NOTES + f"; sigma_clustering {sigma_clustering:.6g}, sigma_sgd {sigma:.6g}, q {rate:.6g}, T {steps}"
    paper = dpgm_accounting(dpgm_mechanisms(params, sigma_clustering, sigma, rate, steps, secret=secret), delta)
    strict = dpgm_accounting(
        dpgm_mechanisms(params, sigma_clustering, sigma, rate, steps, replace_one=True, secret=secret),
        delta,
        replace_one=True,
    )
    return Ledger(paper, strict, target, notes)


def recompute_dp_gm_ledger(params: Any, spec: RunSpec, recorded: dict) -> Ledger:
    """A DP-GM run's ledger computed again from its parameters and the rate and steps its DP-SGD record holds."""
    run = recorded_mechanisms(recorded)[-1]
    sigma_c, sigma = dpgm_sigmas(params, spec.epsilon, spec.delta, run.sample_rate, run.steps)
    secret = randomness.is_secret(spec)
    return dpgm_ledger(params, sigma_c, sigma, run.sample_rate, run.steps, spec.delta, spec.epsilon, secret)


def planned_dp_gm_ledger(params: Any, spec: RunSpec, n: int) -> Ledger:
    """The ledger a DP-GM run on `n` records writes, before it trains (as `train.train_dp_gm`)."""
    rate, steps = dpgm_schedule(params, n, spec.variant)
    sigma_c, sigma = dpgm_sigmas(params, spec.epsilon, spec.delta, rate, steps)
    secret = randomness.is_secret(spec)
    return dpgm_ledger(params, sigma_c, sigma, rate, steps, spec.delta, spec.epsilon, secret)


def scaled_to_sound(params: Any, planned: Any, target: float) -> Any | None:
    """P3GM's parameters with σ_mean, σ_pca, σ_em and σ_s multiplied by the smallest factor k (to 1e-4 relative,
    rounded towards more noise) at which `planned(params)`'s sound ε meets `target`; σ_s is the paper calibration's
    at the target where that exists, else 1. The configured ratios between the stages stay: the ledger lists each
    stage's σ. None where no k in [1e-3, 1e6] meets it (a stage without noise, say)."""
    import dataclasses

    def scaled(k: float, sgd: float) -> Any:
        return dataclasses.replace(
            params,
            sigma_mean=params.sigma_mean * k,
            sigma_pca=params.sigma_pca * k,
            sigma_em=params.sigma_em * k,
            sigma_sgd=sgd * k,
        )

    def excess(k: float, sgd: float) -> float:
        try:
            ledger = planned(scaled(k, sgd))
        except (ValueError, PrivacyBudgetExceeded):
            return math.inf
        return math.inf if ledger is None or ledger.sound is None else ledger.sound.epsilon - target

    sgd = params.sigma_sgd if isinstance(params.sigma_sgd, float | int) else None
    if sgd is None:
        try:
            at_target = planned(params)
        except (ValueError, PrivacyBudgetExceeded):
            at_target = None
        runs = [m for m in (at_target.paper.mechanisms if at_target else ()) if m.name == SGD_RECORD]
        sgd = runs[0].noise_multiplier if runs else 1.0
    low, high = 1e-3, 1e6
    if excess(high, sgd) > 0:
        return None
    if excess(low, sgd) <= 0:
        return scaled(low, sgd)
    while high / low > 1 + 1e-4:  # bisection in log k: the sound ε falls as every σ grows
        middle = math.sqrt(low * high)
        low, high = (low, middle) if excess(middle, sgd) <= 0 else (middle, high)
    return scaled(high, sgd)
