"""Training checkpoints, so that a killed paper-scale job resumes where it stopped and ends with the same bytes.

    checkpoint = Checkpoint(ctx)                      # <run>/checkpoint.pt, keyed by the run's spec
    state = checkpoint.load()                         # None on a fresh start
    if state: model.load_state_dict(state["model"]); step = state["step"]; restore_rng(gen, state["rng"]) ...
    for step in range(step, total):
        ...
        if checkpoint.due(step):
            checkpoint.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": step + 1,
                             "rng": rng_state(gen), "engine_steps": engine.steps})

A checkpoint holds everything that decides the rest of the run — parameters, optimiser state, step and
*every* random stream (torch generators, numpy generators) and the privacy accountant's step count — so the
resumed run releases exactly what the uninterrupted one would have. It is written atomically (never half),
ignored if it belongs to another spec, and removed by the train stage once the model is in place.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from dpvae.files import atomic_write
from dpvae.methods.base import RunContext
from dpvae.provenance import sha256_json

CHECKPOINT_NAME = "checkpoint.pt"


class Checkpoint:
    """One run's checkpoint file; `every_seconds` / `every_steps` decide when `due` says to save."""

    def __init__(self, ctx: RunContext, every_seconds: float = 300.0, every_steps: int | None = None) -> None:
        self.path = Path(ctx.run_dir) / CHECKPOINT_NAME
        self.key = sha256_json(ctx.spec)
        self.every_seconds, self.every_steps = every_seconds, every_steps
        self._last = time.monotonic()

    def load(self) -> dict[str, Any] | None:
        """The saved state of this run's spec, or None (no checkpoint, or one of another spec)."""
        import torch

        if not self.path.is_file():
            return None
        saved = torch.load(self.path, map_location="cpu", weights_only=False)
        if saved.get("key") != self.key:
            return None
        return saved["state"]

    def due(self, step: int) -> bool:
        """Whether to save after `step` (a step count or a wall-clock interval has passed)."""
        if self.every_steps and (step + 1) % self.every_steps == 0:
            return True
        return time.monotonic() - self._last >= self.every_seconds

    def save(self, state: dict[str, Any]) -> None:
        import torch

        atomic_write(self.path, lambda tmp: torch.save({"key": self.key, "state": state}, tmp))
        self._last = time.monotonic()

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)


def rng_state(*generators: Any) -> list[Any]:
    """The states of torch Generators and numpy Generators, in order (restore with `restore_rng`)."""
    states = []
    for g in generators:
        states.append(g.get_state() if hasattr(g, "get_state") else g.bit_generator.state)
    return states


def restore_rng(states: list[Any], *generators: Any) -> None:
    for g, state in zip(generators, states, strict=True):
        if hasattr(g, "set_state"):
            g.set_state(state)
        else:
            g.bit_generator.state = state
