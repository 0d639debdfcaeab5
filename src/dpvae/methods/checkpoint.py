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
*every* random stream (the method's torch and numpy generators, and the process-wide torch, CUDA, numpy
and `random` states, saved and restored here) and the privacy accountant's step count — so the resumed run
releases exactly what the uninterrupted one would have. It is written atomically (never half), ignored if
it belongs to another spec (or, for a release keyed by a seed file, another key), and removed by the train stage
once the model is in place. A release keyed by OS entropy writes none and starts over when killed
(`randomness.resumable`).

How often: the method's `every_seconds` / `every_steps`, unless the environment sets
`DPVAE_CHECKPOINT_EVERY_STEPS` or `DPVAE_CHECKPOINT_EVERY_SECONDS` (e.g. on a preemptible cluster, or a
test that kills a run after a few steps); checkpointing never changes what a run releases.
"""

from __future__ import annotations

import logging
import os
import random
import time
from pathlib import Path
from typing import Any

from dpvae import randomness
from dpvae.errors import ConfigError
from dpvae.files import save_torch
from dpvae.methods.base import RunContext
from dpvae.paths import checkpoint_file
from dpvae.provenance import sha256_json

EVERY_STEPS_VARIABLE = "DPVAE_CHECKPOINT_EVERY_STEPS"
EVERY_SECONDS_VARIABLE = "DPVAE_CHECKPOINT_EVERY_SECONDS"
log = logging.getLogger(__name__)


class Checkpoint:
    """One run's checkpoint file; `every_seconds` / `every_steps` decide when `due` says to save."""

    def __init__(self, ctx: RunContext, every_seconds: float = 300.0, every_steps: int | None = None) -> None:
        self.path = checkpoint_file(Path(ctx.run_dir))
        self.key = sha256_json(ctx.spec.to_dict()) + randomness.key_tag(ctx.spec)
        self.enabled = randomness.resumable(ctx.spec)  # a release keyed by OS entropy never checkpoints
        self.every_steps = _positive(EVERY_STEPS_VARIABLE, int) if os.environ.get(EVERY_STEPS_VARIABLE) else every_steps
        self.every_seconds = interval_seconds(every_seconds)
        self._last = time.monotonic()

    def load(self) -> dict[str, Any] | None:
        """The saved state of this run's spec, or None (no checkpoint, or one of another spec)."""
        import torch

        if not self.enabled or not self.path.is_file():
            return None
        try:
            saved = torch.load(self.path, map_location="cpu", weights_only=False)
        except Exception as error:  # written atomically, so only a damaged disk gets here: start over
            log.warning("ignoring unreadable checkpoint %s (%s); training from the start", self.path, error)
            return None
        if not isinstance(saved, dict) or saved.get("key") != self.key:
            log.warning("ignoring %s: it belongs to another spec of this run", self.path)
            return None
        if "global_rng" in saved:
            _restore_global_rng(saved["global_rng"])
        step = saved["state"].get("step") if isinstance(saved["state"], dict) else None
        log.info("resuming from checkpoint %s%s", self.path, "" if step is None else f" at step {step}")
        return saved["state"]

    def due(self, step: int) -> bool:
        """Whether to save after `step` (a step count or a wall-clock interval has passed)."""
        if not self.enabled:
            return False
        if self.every_steps and (step + 1) % self.every_steps == 0:
            return True
        return time.monotonic() - self._last >= self.every_seconds

    def save(self, state: dict[str, Any]) -> None:
        if not self.enabled:
            return
        payload = {"key": self.key, "state": state, "global_rng": _global_rng()}
        save_torch(self.path, payload)
        self._last = time.monotonic()

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)


def interval_seconds(default: float) -> float:
    """Seconds between two saves of a resume point: `DPVAE_CHECKPOINT_EVERY_SECONDS` when set, else `default`
    (training checkpoints and metrics' partial results alike)."""
    return _positive(EVERY_SECONDS_VARIABLE, float) if os.environ.get(EVERY_SECONDS_VARIABLE) else default


def _positive(variable: str, kind: type) -> Any:
    text = os.environ[variable]
    try:
        value = kind(text)
    except ValueError:
        value = 0
    if not value > 0:
        raise ConfigError(f"environment variable {variable}={text!r}: expected a positive number")
    return value


def _global_rng() -> dict[str, Any]:
    """The process-wide random states a method may draw from without its own generator."""
    import numpy as np
    import torch

    state = {"torch": torch.get_rng_state(), "numpy": np.random.get_state(), "random": random.getstate()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _restore_global_rng(state: dict[str, Any]) -> None:
    import numpy as np
    import torch

    torch.set_rng_state(state["torch"])
    np.random.set_state(state["numpy"])
    random.setstate(state["random"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


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
