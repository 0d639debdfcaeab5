"""The contract every generative method implements, and the context a run gives it.

A method lives in its family's package `methods/<family>/`: `__init__.py` holds a `MethodParams` subclass (its
typed parameters) and a `Method` subclass registered with `@register_method`; the heavy part (torch,
scikit-learn, jax, ...) is `train.py`, imported inside `train`/`sample`, so that validating a configuration stays
fast (a test checks); `accounting.py` holds the family's paper and sound ledgers.

A method may have a shared non-private first stage (DP²-VAE's pre-trained encoders): `stage1_params` names
what it depends on, and runs whose stage-1 parameters, dataset and seed agree share one stage-1 job
(`stage1_spec`); the run's `RunContext.stage1` has that job's identity (its random streams and data).
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from dpvae import randomness
from dpvae.data.declared import Facts
from dpvae.devices import resolve_device
from dpvae.models.precision import DEFAULT as DEFAULT_PRECISION
from dpvae.params import MethodParams
from dpvae.paths import ledger_file, model_path, prepared_dir, samples_file, stage1_dir, stage1_id
from dpvae.provenance import sha256_json
from dpvae.runspec import STAGE1_KIND, RunSpec
from dpvae.runtimes import Work

if TYPE_CHECKING:
    from dpvae.privacy.ledger import Ledger


#: values per record (a 28x28 image's pixels) from which a job's data counts as large: the size whose runs were
#: measured to need more (P3GM's and DP-GM's per-epoch records on MNIST, Ryan's 785 binarised attributes); every
#: dataset of smaller records (ISOLET's 617 columns and below) keeps a method's declared resources
LARGE_RECORD = 784


def large_records(facts: Facts | None) -> bool:
    """Whether the data's records hold at least `LARGE_RECORD` values (False where the facts are unknown): what
    a method's resources scale with, whatever the dataset is called."""
    return facts is not None and facts.attributes >= LARGE_RECORD


@dataclass(frozen=True)
class Resources:
    """What one training job of a method needs; the rules and the SLURM profile read it."""

    threads: int = 2
    mem_mb: int = 4000
    runtime: int = 60  # minutes of wall time on the CPU reference machine at paper scale (dpvae.runtimes)
    gpu: bool = False  # asks the cluster for a GPU (runs on CPU when none is there)
    work: Work | None = None  # what it computes in a unit a device log times (dpvae.runtimes), if one does


@dataclass
class RunContext:
    """One run's resolved spec (see dpvae.runs.run_spec), its typed parameters and where outputs go."""

    spec: RunSpec
    run_dir: Path
    params: Any = None  # the method's MethodParams instance
    extra: dict = field(default_factory=dict)
    method: Method | None = None  # the run's method (its shared first stage needs it)

    @property
    def model_dir(self) -> Path:
        """Where the trained model goes (the train stage points this at a temporary directory)."""
        return Path(self.extra.get("model_dir", model_path(self.run_dir)))

    @property
    def ledger_path(self) -> Path:
        return ledger_file(self.run_dir)

    @property
    def samples_path(self) -> Path:
        return samples_file(self.run_dir)

    @property
    def device(self) -> str:
        return resolve_device(self.spec.device)

    @property
    def epsilon(self) -> float | None:
        """The run's target epsilon (None for a non-private run)."""
        return self.spec.epsilon

    @property
    def delta(self) -> float | None:
        return self.spec.delta

    @property
    def precision(self) -> str:
        """The run's model-compute precision (`dpvae.models.precision`); a spec names it only when not fp32."""
        return self.spec.precision or DEFAULT_PRECISION

    def seed_for(self, stream: str) -> int:
        """The seed of a named random stream of this run (`dpvae.randomness`: same run + stream => same seed when
        seeded; secret bits from a key never written in a release)."""
        return randomness.stream_seed(self.spec, stream)

    def rng(self, stream: str) -> np.random.Generator:
        return np.random.default_rng(self.seed_for(stream))

    def torch_generator(self, stream: str, device: str | None = None) -> Any:
        """A `torch.Generator` for a named stream (on `device`, default the run's)."""
        import torch

        return randomness.seed_torch(torch.Generator(device=device or self.device), self.spec, stream)

    def seed_torch(self, stream: str) -> None:
        """Seed torch's global generator (weight initialisation) for a named stream, as `torch.manual_seed` does."""
        import torch

        randomness.seed_torch(torch.default_generator, self.spec, stream)
        if torch.cuda.is_available():
            torch.cuda.manual_seed_all(self.seed_for(stream))

    @cached_property
    def stage1(self) -> RunContext | None:
        """The context of the run's shared first stage (`stage1_spec`), or None (none, or this is one).

        Its named random streams and its training subsample are drawn for the stage-1 identity, not for
        the run, so that every run sharing the stage sees the same data (`data` is the stage's)."""
        if self.method is None or self.params is None or self.spec.is_stage1:
            return None
        spec = stage1_spec(self.spec, self.params, self.method)
        return None if spec is None else stage1_context(spec, self.method)

    @cached_property
    def data(self) -> Any:
        """The prepared dataset, its training split subsampled to `params.max_train` if set.

        A planted outlier (meta `outlier_index`, LVAE's white image) is always kept in the subsample, in
        place of the last record drawn, and `outlier_index` then points at it in the subsample. A run with a
        shared first stage has that stage's data (drawn for its identity).
        """
        from dpvae.data.store import load_prepared

        if self.stage1 is not None:
            return self.stage1.data
        prepared = load_prepared(prepared_dir(Path(self.spec.data_root), self.spec.dataset))
        if (expected := self.spec.data_identity) is not None:  # a dataset declared in the config
            from dpvae.data.declared import check_identity

            check_identity(prepared, expected, f"run {self.spec.run_id}", self.spec.data_root)
        limit = getattr(self.params, "max_train", None)
        if limit and limit < len(prepared.train.y):
            keep = self.rng("max_train").choice(len(prepared.train.y), size=limit, replace=False)
            outlier = prepared.meta.get("outlier_index")
            if outlier is not None and outlier not in keep:
                keep[-1] = outlier
            keep = np.sort(keep)
            prepared = prepared.subset_train(keep)
            if outlier is not None:
                prepared.meta["outlier_index"] = int(np.searchsorted(keep, outlier))
        return prepared


class forward:  # noqa: N801 - used like a function in class bodies: train = forward("dpvae.methods.x.train")
    """A Method's method that imports its family's heavy module on first call and calls the function of the same
    name there (or `function`) with the same arguments: validation and planning never import torch."""

    def __init__(self, module: str, function: str | None = None) -> None:
        self.module, self.function = module, function

    def __set_name__(self, owner: type, name: str) -> None:
        self.function = self.function or name

    def __get__(self, method: Any, owner: type | None = None) -> Any:
        if method is None:
            return self
        return getattr(importlib.import_module(self.module), self.function)


class Method(ABC):
    """A generative method: trains from a run context and samples synthetic records.

    Class attributes: `name` (registry key), `paper`, `private` (default privacy of its variants),
    `description` (one line), `Params` (its typed parameters), `RESOURCES` (a training job's needs) and
    `precisions` (the config's `precision` values its training applies, `dpvae.models.precision`: under any
    other it trains at fp32, and its runs' specs, ids and hashes stay as they are).

    What a private run's directory may hold beyond its spec and provenance (`train.json`) and its ledger
    (`privacy.json`): `released`, glob patterns relative to `model/` of the files its ledgered mechanisms
    release (weights, snapshots of them, noisy statistics, and what is computed from those alone); every other
    file must be the same for neighbouring datasets (tests/privacy/test_run_directory_neighbours.py checks).
    `needs_public_data`: why the method reads a public sample of the data's distribution without noise (None:
    it does not); a dataset declared by the user has no such sample, so validation refuses the pair.
    """

    name: ClassVar[str]
    paper: ClassVar[str]
    private: ClassVar[bool]
    description: ClassVar[str]
    Params: ClassVar[type[MethodParams]] = MethodParams
    RESOURCES: ClassVar[Resources] = Resources()
    precisions: ClassVar[tuple[str, ...]] = (DEFAULT_PRECISION,)
    kinds: ClassVar[tuple[str, ...]] = ("table", "image")  # the data it trains on: [d] records, [C, H, W] images
    released: ClassVar[tuple[str, ...]] = ()
    needs_public_data: ClassVar[str | None] = None
    #: how its defaults scale with the data (widths, batch, epochs), or which parameter a small dataset needs
    data_scaling: ClassVar[str] = (
        "Defaults are fixed sizes, not fractions of the data; `max_train` caps the records it trains on and "
        "validation refuses a `batch_size` larger than the training split."
    )

    #: how a private release depends on the number N of training records, which it thereby makes public (bounded
    #: DP): e.g. q = B/N and T = epochs·N/B in the DP-SGD ledger; "" where neither the model nor the ledger does
    releases_n: ClassVar[str] = ""

    def data_defaults(self, facts: Facts) -> dict[str, Any]:
        """Parameters whose default depends on the kind of data, below every parameter the user states (`dpvae
        synth`; the workflow on a dataset declared under `datasets:`, `runs.param_layers`). Read from the data's public
        facts only. Empty: none."""
        return {}

    def data_errors(self, params: MethodParams, facts: Facts) -> list[tuple[str, str]]:
        """[(parameter or '', why)] where these parameters do not fit data with these facts (`n_train`: the run's
        training records, after `max_train`); checked at validation. Empty: they fit."""
        return []

    def resources(self, params: MethodParams, facts: Facts | None) -> Resources:
        """A training job's resources for these parameters and the data's facts (record shape, sizes; None where
        they are unknown): override to scale with them, never with the dataset's name."""
        return self.RESOURCES

    def stage1_params(self, params: MethodParams) -> dict[str, Any] | None:
        """Exactly the parameters the method's shared non-private first stage depends on (its key, with the
        dataset and the seed), or None when these parameters train no such stage (the default)."""
        return None

    def stage1_resources(self, params: MethodParams, facts: Facts | None) -> Resources:
        """A stage-1 job's resources (override with `stage1_params`)."""
        return self.RESOURCES

    def train_stage1(self, ctx: RunContext) -> dict[str, Any]:
        """Train the first stage of the stage-1 context `ctx` into ctx.model_dir; returns a summary for its
        json (override with `stage1_params`)."""
        raise NotImplementedError(f"method '{self.name}' has no first stage")

    @abstractmethod
    def train(self, ctx: RunContext) -> Ledger | None:
        """Fit the model, write it under ctx.model_dir, return the privacy ledger (None if non-private)."""

    def recompute_ledger(self, params: MethodParams, spec: RunSpec, recorded: dict) -> Ledger:
        """A private run's ledger computed again from its spec, its parameters and what its written ledger
        (`recorded`, the run's privacy.json) holds of the data (rates, steps, sizes): noise calibration and
        accounting rerun, no training. Every private method implements it; the contract test and
        `benchmarks/recompute_ledgers.py` compare it with the written ledger, bit for bit."""
        raise NotImplementedError(f"method '{self.name}' cannot recompute a run's ledger")

    @property
    def plans_its_ledger(self) -> bool:
        """Whether `planned_ledger` is implemented (then the noise can be calibrated to the sound bound)."""
        return type(self).planned_ledger is not Method.planned_ledger

    def planned_ledger(self, params: MethodParams, spec: RunSpec, facts: Facts) -> Ledger | None:
        """The ledger training would return, from the parameters, the spec's target (ε, δ) and the data's facts
        (`n_train`: the run's training records, after `max_train`), without training; None where it depends on
        more than these (it is then known only after training)."""
        return None

    def sound_calibrated_params(
        self, params: MethodParams, planned: Callable[[MethodParams], Ledger | None], target: float
    ) -> MethodParams | None:
        """Parameters whose release meets `target` with its sound ε, for a method whose noise the ε' search of
        `dpvae.runs.sound_calibrated_epsilon` cannot bring there alone (several fixed noise levels, as P3GM's
        stages); `planned(p)`: the release's planned ledger with parameters p (None: p cannot be planned). None:
        the method's own calibration does it (the default)."""
        return None

    @abstractmethod
    def sample(self, ctx: RunContext, n: int | None) -> dict[str, np.ndarray]:
        """Draw `n` synthetic records (None = the method's natural size) as arrays 'x' and 'y'.

        'x' has the prepared data's per-record shape and dtype float32, 'y' int64 labels in the data's
        label range; the same run and seed give the same arrays on CPU.
        """

    def __repr__(self) -> str:
        return f"<method {self.name} ({type(self).__module__})>"


def halvings_error(facts: Facts, halvings: int) -> str | None:
    """Why images of `facts` cannot be halved `halvings` times by a conv stack (None if they can)."""
    side = 2**halvings
    _, height, width = facts.record_shape
    if height % side or width % side:
        return f"{halvings} halvings need image sides divisible by {side}, the data's images are {height}x{width}"
    return None


def subsets_error(count: int, facts: Facts) -> str | None:
    """Why `count` disjoint subsets of the run's training records would be empty (None if not)."""
    if count > facts.n_train:
        return f"{count} disjoint subsets of the run's {facts.n_train} training records leave some empty"
    return None


#: `Method.releases_n` of a DP-SGD method that samples batches at q = B/N
DPSGD_RELEASES_N = "DP-SGD's sample rate q = B/N and its steps (epochs·N/B) are in the ledger"


def stage1_spec(spec: RunSpec, params: MethodParams, method: Method) -> RunSpec | None:
    """The spec of the shared first stage that run `spec` (with parsed `params`, of `method`) needs, or None.

    Its identity `<dataset>/<method>/<key>/seed<seed>`: key = the first 12 hex digits of the sha256 of the
    method's `stage1_params` (what the stage depends on, nothing else), so runs that differ only in what
    it does not read (epsilon, sigma, stage-2 settings) share it. Its directory is the run spec's `stage1`
    if it names one (set by `dpvae.runs.run_spec`), else results/<scale>/stage1/<identity>.
    """
    keyed = method.stage1_params(params)
    if keyed is None:
        return None
    key = sha256_json({"method": spec.method, "params": keyed})[:12]
    identity = stage1_id(spec.dataset, spec.method, key, spec.seed)
    return RunSpec.standalone(
        f"{STAGE1_KIND}/{identity}",
        spec.stage1 or stage1_dir(spec.scale, identity),
        kind=STAGE1_KIND,
        key=key,
        variant="",  # a stage-1 spec has no variant (nor privacy or target: `runspec.NOT_IN_STAGE1`)
        scale=spec.scale,
        dataset=spec.dataset,
        method=spec.method,
        params=keyed,
        seed=spec.seed,
        device=spec.device,
        data_root=spec.data_root,
        randomness=spec.randomness,
    )


def stage1_context(spec: RunSpec, method: Method, **extra: Any) -> RunContext:
    """The context of a stage-1 spec: its parameters are the keyed ones, every other one at its default."""
    params = method.Params.parse(spec.params, key=f"{spec.run_id}.params", name=method.name)
    return RunContext(spec, Path(spec.run), params, extra, method)
