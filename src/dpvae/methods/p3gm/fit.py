"""The (DP-)SGD loop of the MLP-VAE methods: batches, per-example clipping and noise, optimiser, checkpoints.

    schedule = Schedule("poisson", n=63000, batch_size=300, epochs=4)          # 840 steps, q = 300/63000
    result = fit(model, data, loss_fn, schedule, lr=1e-3, clip=1.0, sigma=1.4, generators=gens, checkpoint=ck)

* `Schedule`: Poisson sampling (each record in a step's batch with probability q = B/N; T = ⌈epochs·N/B⌉,
  what the accountant assumes) or the P3GM code's loader (⌊N/B⌋ fixed consecutive batches, one drawn
  uniformly with replacement per step, ⌊N/B⌋ − 1 steps per epoch).
* Private steps go through `dpvae.privacy.dpsgd.DPSGD` (vectorised per-example clipping at C over all
  trainable parameters, N(0, σ²C²) on the sum, divided by B — the code's `_noised_step`); `clip=None`
  is a plain mean-loss step (non-private VAE, PGM).
* If asked, the loop keeps a snapshot of chosen parameters after each of `Schedule.snapshot_steps` (every
  epoch's end and iterations spaced evenly in log scale: fig 7's curves, computed from them at evaluation).
  It keeps no statistic of the batches (a loss of private records is not released by DP-SGD).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from dpvae.methods.checkpoint import Checkpoint, restore_rng, rng_state
from dpvae.models import precision as compute
from dpvae.privacy.dpsgd import DPSGD, poisson_sample
from dpvae.progress import Progress

#: loss_fn(batch [B, d]) -> per-example loss [B]
LossFn = Callable[[Tensor], Tensor]
#: iterations spaced evenly in log scale from the first to the last at which a recording run keeps a snapshot
CURVE_POINTS = 16


@dataclass(frozen=True)
class Schedule:
    """Which records each step sees, and how many steps make the run (see module doc).

    A batch size above the number of records (tiny test runs) is capped at it (q = 1).
    """

    batching: str
    n: int
    batch_size: int
    epochs: float

    def __post_init__(self) -> None:
        if self.batching not in ("poisson", "code"):
            raise ValueError(f"batching must be 'poisson' or 'code', got {self.batching!r}")
        if self.n < 1 or self.batch_size < 1:
            raise ValueError(f"n and batch_size must be >= 1, got {self.n} and {self.batch_size}")
        object.__setattr__(self, "batch_size", min(self.batch_size, self.n))
        if not self.epochs >= 0:
            raise ValueError(f"epochs must be >= 0, got {self.epochs}")

    @property
    def sample_rate(self) -> float:
        return self.batch_size / self.n

    @property
    def n_batches(self) -> int:
        """The code loader's fixed batches (the remainder of N/B is never used)."""
        return self.n // self.batch_size

    @property
    def steps_per_epoch(self) -> float:
        return self.n / self.batch_size if self.batching == "poisson" else max(self.n_batches - 1, 1)

    @property
    def steps(self) -> int:
        return math.ceil(self.epochs * self.steps_per_epoch - 1e-9)

    def epoch_ends(self) -> list[int]:
        """Step counts at which epochs 1, 2, ... end (the last may be partial)."""
        ends = [math.ceil(e * self.steps_per_epoch - 1e-9) for e in range(1, math.ceil(self.epochs - 1e-9) + 1)]
        return [min(end, self.steps) for end in ends]

    def snapshot_steps(self) -> list[int]:
        """Step counts after which a recording run keeps a snapshot: every epoch's end and `CURVE_POINTS`
        iterations from 1 to the last, evenly spaced in log scale (data-independent, like the schedule)."""
        grid = np.rint(np.geomspace(1, self.steps, CURVE_POINTS)).astype(int) if self.steps else []
        return sorted({*map(int, grid), *self.epoch_ends()})

    def batch(self, generator: torch.Generator) -> Tensor:
        """Row indices of one step's batch."""
        if self.batching == "poisson":
            return poisson_sample(self.n, self.sample_rate, generator)
        start = int(torch.randint(self.n_batches, (1,), generator=generator)) * self.batch_size
        return torch.arange(start, start + self.batch_size)


@dataclass
class FitResult:
    """What a run of `fit` leaves besides the trained model."""

    snapshots: dict[int, dict[str, Tensor]] = field(default_factory=dict)  # step -> parameters, if asked
    engine: DPSGD | None = None  # the private engine (its records pay for the steps)


def make_optimizer(name: str, params: list[nn.Parameter], lr: float) -> torch.optim.Optimizer:
    if name == "adam":
        return torch.optim.Adam(params, lr=lr)
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr)
    raise ValueError(f"optimizer must be 'adam' or 'sgd', got {name!r}")


def fit(
    model: nn.Module,
    data: Tensor,
    loss_fn: LossFn,
    schedule: Schedule,
    *,
    lr: float,
    optimizer: str = "adam",
    clip: float | None = None,
    sigma: float = 0.0,
    batch_generator: torch.Generator,
    noise_generator: torch.Generator | None = None,
    other_generators: tuple[Any, ...] = (),
    checkpoint: Checkpoint | None = None,
    snapshot: Callable[[nn.Module], dict[str, Tensor]] | None = None,
    budget: Any = None,
    precision: str = "fp32",
    progress: Progress | None = None,
) -> FitResult:
    """Train `model`'s trainable parameters for `schedule.steps` steps on rows of `data` [N, d].

    `clip` None: plain mean-loss steps (no clipping, no noise). Otherwise a `DPSGD` engine clips every
    example's gradient at `clip` and adds N(0, (sigma·clip)²) to the sum (sigma 0: clipping only);
    `budget` (a `StepBudget`) makes it refuse a step past the target epsilon. `other_generators` are the
    loss's random streams, saved and restored with the checkpoint so that a resumed run is identical.
    `precision`: the run's model-compute precision (`dpvae.models.precision`; engine steps stay fp32).
    `progress`: the loop's reporter (`dpvae.progress`; by default one without ε), advanced once a step.
    """
    params = [p for p in model.parameters() if p.requires_grad]
    opt = make_optimizer(optimizer, params, lr)
    engine = None
    if clip is not None:
        engine = DPSGD(
            model,
            max_grad_norm=clip,
            noise_multiplier=sigma,
            sample_rate=schedule.sample_rate,
            expected_batch_size=schedule.batch_size,
            generator=noise_generator,
            budget=budget,
        )
    generators = (batch_generator, *((noise_generator,) if noise_generator is not None else ()), *other_generators)
    snapshots, start = {}, 0
    progress = progress or Progress("SGD", schedule.steps)
    state = checkpoint.load() if checkpoint is not None else None
    if state is not None:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        restore_rng(state["rng"], *generators)
        start, snapshots = state["step"], dict(state["snapshots"])
        if engine is not None:
            engine.steps = state["engine_steps"]
        progress.start_at(start)
    keep = set(schedule.snapshot_steps()) if snapshot is not None else set()
    model.train()
    for step in range(start, schedule.steps):
        batch = data[schedule.batch(batch_generator)]
        with compute.forward(precision, data.device, per_example=engine is not None):
            losses = loss_fn(batch).float()
        opt.zero_grad(set_to_none=True)
        if engine is not None:
            with compute.private(precision):
                engine.step(losses)  # an empty Poisson batch still releases (noise only) and is accounted
            opt.step()
        elif len(batch):
            losses.mean().backward()
            opt.step()
        progress.advance()
        if step + 1 in keep:
            snapshots[step + 1] = {k: v.detach().clone() for k, v in snapshot(model).items()}
        if checkpoint is not None and checkpoint.due(step) and step + 1 < schedule.steps:
            checkpoint.save(
                {
                    "model": model.state_dict(),
                    "optimizer": opt.state_dict(),
                    "step": step + 1,
                    "rng": rng_state(*generators),
                    "snapshots": snapshots,
                    "engine_steps": 0 if engine is None else engine.steps,
                }
            )
    if engine is not None:
        engine.close()
    model.eval()
    return FitResult(snapshots, engine)
