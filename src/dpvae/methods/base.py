"""The contract every generative method implements, and the context a run gives it.

A method lives in `methods/<name>.py`: a `MethodParams` subclass (its typed parameters) and a `Method`
subclass registered with `@register_method`. Heavy libraries (torch, scikit-learn, jax, ...) are imported
inside `train`/`sample` or from a model module, so that validating a configuration stays fast (a test checks).
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from dpvae.devices import resolve_device
from dpvae.errors import NotBuiltError
from dpvae.models.precision import DEFAULT as DEFAULT_PRECISION
from dpvae.params import MethodParams

if TYPE_CHECKING:
    from dpvae.privacy.ledger import Ledger


@dataclass(frozen=True)
class Resources:
    """What one training job of a method needs; the rules and the SLURM profile read it."""

    threads: int = 2
    mem_mb: int = 4000
    runtime: int = 60        # minutes of wall time on the CPU reference machine
    gpu: bool = False        # asks the cluster for a GPU (runs on CPU when none is there)


@dataclass
class RunContext:
    """One run's resolved spec (see dpvae.runs.run_spec), its typed parameters and where outputs go."""

    spec: dict
    run_dir: Path
    params: Any = None                       # the method's MethodParams instance
    extra: dict = field(default_factory=dict)

    @property
    def model_dir(self) -> Path:
        """Where the trained model goes (the train stage points this at a temporary directory)."""
        return Path(self.extra.get("model_dir", self.run_dir / "model"))

    @property
    def ledger_path(self) -> Path:
        return self.run_dir / "privacy.json"

    @property
    def samples_path(self) -> Path:
        return self.run_dir / "samples.npz"

    @property
    def device(self) -> str:
        return resolve_device(self.spec.get("device", "auto"))

    @property
    def epsilon(self) -> float | None:
        """The run's target epsilon (None for a non-private run)."""
        return self.spec["epsilon"]

    @property
    def delta(self) -> float:
        return self.spec["delta"]

    @property
    def precision(self) -> str:
        """The run's model-compute precision (`dpvae.models.precision`); a spec names it only when not fp32."""
        return self.spec.get("precision", DEFAULT_PRECISION)

    def seed_for(self, stream: str) -> int:
        """A 32-bit seed for a named random stream of this run (same run + stream => same seed)."""
        digest = hashlib.sha256(f"{self.spec['run_id']}|{self.spec['seed']}|{stream}".encode()).digest()
        return int.from_bytes(digest[:4], "little")

    def rng(self, stream: str) -> np.random.Generator:
        return np.random.default_rng(self.seed_for(stream))

    def torch_generator(self, stream: str, device: str | None = None) -> Any:
        """A seeded `torch.Generator` for a named stream (on `device`, default the run's)."""
        import torch

        generator = torch.Generator(device=device or self.device)
        generator.manual_seed(self.seed_for(stream))
        return generator

    @cached_property
    def data(self) -> Any:
        """The prepared dataset, its training split subsampled to `params.max_train` if set.

        A planted outlier (meta `outlier_index`, LVAE's white image) is always kept in the subsample, in
        place of the last record drawn, and `outlier_index` then points at it in the subsample.
        """
        from dpvae.data.store import load_prepared

        prepared = load_prepared(Path(self.spec["data_root"]) / "prepared" / self.spec["dataset"])
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


class Method(ABC):
    """A generative method: trains from a run context and samples synthetic records.

    Class attributes: `name` (registry key), `paper`, `private` (default privacy of its variants),
    `description` (one line), `Params` (its typed parameters), `RESOURCES` (a training job's needs) and
    `precisions` (the config's `precision` values its training applies, `dpvae.models.precision`: under any
    other it trains at fp32, and its runs' specs, ids and hashes stay as they are).
    """

    name: ClassVar[str]
    paper: ClassVar[str]
    private: ClassVar[bool]
    description: ClassVar[str]
    Params: ClassVar[type[MethodParams]] = MethodParams
    RESOURCES: ClassVar[Resources] = Resources()
    precisions: ClassVar[tuple[str, ...]] = (DEFAULT_PRECISION,)
    implemented: ClassVar[bool] = True

    def resources(self, params: MethodParams, dataset: str) -> Resources:
        """A training job's resources for these parameters (override to scale with them)."""
        return self.RESOURCES

    @abstractmethod
    def train(self, ctx: RunContext) -> Ledger | None:
        """Fit the model, write it under ctx.model_dir, return the privacy ledger (None if non-private)."""

    @abstractmethod
    def sample(self, ctx: RunContext, n: int | None) -> dict[str, np.ndarray]:
        """Draw `n` synthetic records (None = the method's natural size) as arrays 'x' and 'y'.

        'x' has the prepared data's per-record shape and dtype float32, 'y' int64 labels in the data's
        label range; the same run and seed give the same arrays on CPU.
        """

    def __repr__(self) -> str:
        return f"<method {self.name} ({type(self).__module__})>"


class PlannedMethod(Method):
    """A method the workflow knows about (its runs are in the DAG) but whose module does not exist yet."""

    implemented = False

    def __init__(self, name: str, paper: str, private: bool, description: str,
                 params: type[MethodParams] = MethodParams, resources: Resources = Resources()) -> None:
        self.name, self.paper, self.private, self.description = name, paper, private, description
        self.Params, self.RESOURCES = params, resources

    def _refuse(self) -> None:
        raise NotBuiltError(f"method '{self.name}' ({self.description}) is not implemented yet; "
                            f"see README.md's status table")

    def train(self, ctx: RunContext) -> Ledger | None:
        self._refuse()

    def sample(self, ctx: RunContext, n: int | None) -> dict[str, np.ndarray]:
        self._refuse()

    def __repr__(self) -> str:
        return f"<planned method {self.name}>"
