"""The method interface every generative method implements, and the context a run gives it."""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

if TYPE_CHECKING:
    from dpvae.privacy.ledger import Ledger


@dataclass
class RunContext:
    """One run's resolved spec (see dpvae.runs.run_spec) and the places its outputs go."""

    spec: dict
    run_dir: Path
    extra: dict = field(default_factory=dict)

    @property
    def params(self) -> dict:
        return self.spec["params"]

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
        wanted = self.spec.get("device", "auto")
        if wanted != "auto":
            return wanted
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"

    def seed_for(self, stream: str) -> int:
        """A 32-bit seed for a named random stream of this run (same run + stream => same seed)."""
        digest = hashlib.sha256(f"{self.spec['run']}|{self.spec['seed']}|{stream}".encode()).digest()
        return int.from_bytes(digest[:4], "little")

    def rng(self, stream: str) -> np.random.Generator:
        return np.random.default_rng(self.seed_for(stream))

    @cached_property
    def data(self) -> Any:
        """The prepared dataset, its training split subsampled to params['max_train'] if set."""
        from dpvae.data.store import load_prepared

        prepared = load_prepared(Path(self.spec["data_root"]) / "prepared" / self.spec["dataset"])
        limit = self.params.get("max_train")
        if limit and limit < len(prepared.train.y):
            keep = np.sort(self.rng("max_train").choice(len(prepared.train.y), size=limit, replace=False))
            prepared = prepared.subset_train(keep)
        return prepared


class Method(ABC):
    """A generative method: trains from a run context and samples synthetic records."""

    name: ClassVar[str]
    paper: ClassVar[str]
    private: ClassVar[bool]
    description: ClassVar[str]
    implemented: ClassVar[bool] = True

    @abstractmethod
    def train(self, ctx: RunContext) -> Ledger | None:
        """Fit the model, write it under ctx.model_dir, return the privacy ledger (None if non-private)."""

    @abstractmethod
    def sample(self, ctx: RunContext, n: int | None) -> dict[str, np.ndarray]:
        """Draw `n` synthetic records (None = the method's natural size) as arrays 'x' and 'y'."""


class PlannedMethod(Method):
    """A method the workflow knows about (its runs are in the DAG) but that is not implemented yet."""

    implemented = False

    def __init__(self, name: str, paper: str, private: bool, description: str) -> None:
        self.name, self.paper, self.private, self.description = name, paper, private, description

    def _refuse(self) -> None:
        raise NotImplementedError(
            f"method '{self.name}' ({self.description}) is not implemented yet; "
            f"see the open issues (`issues list`) and README.md's status table")

    def train(self, ctx: RunContext) -> Ledger | None:
        self._refuse()

    def sample(self, ctx: RunContext, n: int | None) -> dict[str, np.ndarray]:
        self._refuse()
