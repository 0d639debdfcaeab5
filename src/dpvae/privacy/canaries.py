"""Dirac gradient canaries inside a real training run: the method-level one-run audit (docs/audit.md).

    session = CanarySession(count=1000, seed=ctx.seed_for("canaries"))
    with session.active():
        ledger = method.train(ctx)          # the method's own training entry point, unchanged
    record = session.record(ledger, delta)  # -> <run>/audit.json

While a session is active, the first DP-SGD engine to release a step (`dpvae.privacy.dpsgd`, any kind; an engine
built only to calibrate σ never steps) carries the canaries; a method opts in simply by training with an engine. The
engine appends one private layer of its own, w ∈ R^m, never part of the model or its optimizer. Canary i is a record
whose loss is s·w_i: its gradient is the Dirac vector s·e_i (s = 100C, so clipping binds and it enters as exactly
C·e_i), and it is zero on the model, as the model's records are zero on w. Each step, every included canary
(each with probability ½, fixed for the run) joins the batch independently with the engine's sample
rate, as a record of the per-example kind the engine accounts for (`canary_parts`): clipped at the
engine's per-record clip and weighted like one record (standard DP-SGD: C/B with B the expected batch
size; term-wise: C1/B and, as a sub-group of its own, C2/b — together exactly the per-record claim of
the paper's two halves; micro and batch aggregation: C, the per-record sensitivity the papers state for
their averaged gradient).
The engine's own code clips them together with the batch and adds its noise to w like to every private
parameter; the auditor reads w's released (noisy) gradient after every step — a white-box view that
DP-SGD's accounting already covers — and scores each canary by the sum and the maximum of its
coordinate (`one_run.ScoreAccumulator`).

What this covers and what it does not: the noise the engine really adds, its sample rate, its number
of steps and its clipping of a record's gradient, as configured by the method (σ, C, q, T), against the
method's ledger. It does not cover the model's own layers (a clipping bug in one of them leaves w
alone: the engine-level audit, `dpvae.privacy.engine_audit`, puts canaries through the model), the
method's real batching (canaries are Poisson-sampled at the engine's rate, as the accountant assumes),
nor mechanisms outside DP-SGD (DP-PCA, DP-EM, DP k-means: the claimed ε includes them, the canaries
see only the engine). Methods whose noise is not a DP-SGD step (DP-MERF's mean embedding, GS-WGAN's
sanitised gradients, PrivBayes' conditionals, Ryan's measurements) make each noisy release through
`release(clean, std, draw, sensitivity=…)`: their own noise draw over the values plus one coordinate per
canary, shifted by the release's per-record sensitivity when the canary is in and drawn (`ReleaseSlot`).
Only one engine (or one named release) per run carries canaries (a method with several engines over
disjoint data, e.g. DP-GM's clusters, has each record in one of them).
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import Tensor, nn

from dpvae.privacy.one_run import ScoreAccumulator, audit

if TYPE_CHECKING:
    from dpvae.privacy.ledger import Ledger

CANARY_SCALE = 100.0  # a canary's gradient norm, in units of the clip it is clipped at
#: the tidy metrics of an audit record (metric -> its key in audit.json; `noise_multiplier` from the engine)
AUDIT_ROWS = {
    "eps_lower": "lower",
    "eps_point": "point",
    "eps_max_certifiable": "max_certifiable",
    "eps_claimed": "epsilon_claimed",
    "engine_eps_paper": "engine_epsilon_paper",
    "engine_eps_sound": "engine_epsilon_sound",
    "canaries": "canaries",
    "audit_seconds": "seconds",
}


def audit_rows(record: dict) -> list[dict]:
    """The tidy rows (metric, value) of one audit.json record."""
    rows = [{"metric": metric, "value": record[key]} for metric, key in AUDIT_ROWS.items() if key in record]
    if "engine" in record:  # a DP-SGD engine carried the canaries (else a noisy release: no engine claims)
        rows.append({"metric": "noise_multiplier", "value": record["engine"]["noise_multiplier"]})
    return rows


LAYER_NAME = "<canaries>"  # the engine's name for the canary layer (error messages)
TERM_NAME = "canary"
_ACTIVE: contextvars.ContextVar[CanarySession | None] = contextvars.ContextVar("canary_session", default=None)


def canary_parts(engine: Any) -> list[tuple[float, float]]:
    """(clip, weight in the released gradient) of each clipped term a record of the engine's per-example
    kind enters: standard DP-SGD C/B; term-wise C1/B and, as a sub-group of its own, C2/b; micro and batch
    aggregation C (the per-record sensitivity the papers state for their averaged gradient)."""
    kind = engine.kind
    if kind == "dpsgd":
        return [(engine.max_grad_norm, 1 / engine.expected_batch_size)]
    if kind == "termwise":
        parts = [(engine.sample_clip, 1 / engine.expected_batch_size)]
        return parts + ([(engine.batch_clip, 1 / engine.num_groups)] if engine.batch_clip > 0 else [])
    if kind in ("micro", "batch"):
        return [(engine.max_grad_norm, 1.0)]
    raise ValueError(f"no canary definition for engine kind {kind!r}")


def canary_unit(engine: Any) -> float:
    """What one sampled canary adds to its coordinate of the released gradient (before noise)."""
    return sum(clip * weight for clip, weight in canary_parts(engine))


class CanarySlot:
    """The canaries of one engine: the private layer w, their sampling, and the per-step observations."""

    def __init__(self, session: CanarySession, device: torch.device, dtype: torch.dtype) -> None:
        self.session = session
        self.layer = nn.Linear(session.count, 1, bias=False).to(device=device, dtype=dtype)
        nn.init.zeros_(self.layer.weight)
        self.generator = torch.Generator().manual_seed(session.seed)
        self.included = torch.as_tensor(session.included)
        self.scores = ScoreAccumulator(session.count)
        self.engine: Any = None
        self._unit: float | None = None

    def losses(self, engine: Any) -> tuple[Tensor, list[tuple[float, float]]]:
        """This step's canary losses [k] (a forward pass of w, recorded by the engine's hooks) and the
        (clip, weight) of each term they enter; every included canary is in the batch with the engine's
        sample rate."""
        parts = canary_parts(engine)
        self._unit = canary_unit(engine)
        drawn = torch.rand(self.session.count, generator=self.generator) < engine.sample_rate
        rows = torch.nonzero(drawn & self.included).squeeze(1).to(self.layer.weight.device)
        x = torch.zeros(len(rows), self.session.count, device=rows.device, dtype=self.layer.weight.dtype)
        x[torch.arange(len(rows), device=rows.device), rows] = CANARY_SCALE * max(clip for clip, _ in parts)
        with torch.enable_grad():
            return self.layer(x).squeeze(1), parts

    def observe(self) -> None:
        """Read w's released gradient (one coordinate per canary) after a step."""
        grad = self.layer.weight.grad
        if grad is None or self._unit is None:
            raise RuntimeError("the canary layer was not released in this step")
        self.scores.observe(grad.detach().reshape(-1).double().cpu().numpy() / self._unit)


class CanarySession:
    """m canaries with their inclusion bits (each included with probability ½), active around a training
    run; the first engine to release a step inside `active()` carries them."""

    def __init__(self, count: int, seed: int, confidence: float = 0.95) -> None:
        if int(count) != count or count < 2:
            raise ValueError(f"canaries must be an integer >= 2, got {count}")
        self.count, self.seed, self.confidence = int(count), int(seed), float(confidence)
        self.included = np.random.default_rng([self.seed, 1]).random(self.count) < 0.5
        self.slot: CanarySlot | None = None
        self.releases: ReleaseSlot | None = None
        self.engines = 0
        self.started = time.time()

    @contextlib.contextmanager
    def active(self) -> Iterator[CanarySession]:
        token = _ACTIVE.set(self)
        try:
            yield self
        finally:
            _ACTIVE.reset(token)

    def record(self, ledger: Ledger, delta: float) -> dict:
        """What audit.json holds: the canary engine, the claims, ε̂ and the raw scores."""
        from dpvae.privacy.ledger import Accounting

        if self.releases is not None and (self.slot is None or self.slot.engine is None):
            return self._release_record(ledger, delta)
        if self.slot is None or self.slot.engine is None:
            raise RuntimeError(
                "no DP-SGD engine released a step and no noisy release (`canaries.release`) was "
                "made during the audited run: this audit cannot cover the method"
            )
        engine, scores = self.slot.engine, self.slot.scores
        if scores.steps != engine.steps:
            raise RuntimeError(
                f"the canaries saw {scores.steps} of the engine's {engine.steps} steps (a run "
                "resumed from a checkpoint?): audit it in one uninterrupted run"
            )
        result = audit(scores.scores(), self.included, delta, self.confidence)
        claims = {}
        for kind in ("paper", "sound"):
            mechanisms = [m for m in engine.mechanisms(sound=kind == "sound") if m.steps > 0]
            claims[f"engine_epsilon_{kind}"] = Accounting(tuple(mechanisms), delta).epsilon if mechanisms else 0.0
        return {
            "epsilon_claimed": ledger.epsilon,
            "headline": ledger.headline,
            "ledger_epsilon_paper": ledger.paper.epsilon,
            "ledger_epsilon_sound": None if ledger.sound is None else ledger.sound.epsilon,
            **claims,
            "engine": {
                "kind": engine.kind,
                "noise_multiplier": engine.noise_multiplier,
                "sample_rate": engine.sample_rate,
                "steps": engine.steps,
                "canary_terms": [{"clip": c, "weight": w} for c, w in canary_parts(engine)],
                "engines_in_run": self.engines,
            },
            **result.to_dict(),
            "inclusion": self.included.astype(int).tolist(),
            "scores": {name: s.tolist() for name, s in scores.scores().items()},
            "seconds": round(time.time() - self.started, 3),
        }

    def _ledger_claims(self, ledger: Ledger) -> dict:
        return {
            "epsilon_claimed": ledger.epsilon,
            "headline": ledger.headline,
            "ledger_epsilon_paper": ledger.paper.epsilon,
            "ledger_epsilon_sound": None if ledger.sound is None else ledger.sound.epsilon,
        }

    def _release_record(self, ledger: Ledger, delta: float) -> dict:
        slot = self.releases
        result = audit(slot.scores.scores(), self.included, delta, self.confidence)
        return {
            **self._ledger_claims(ledger),
            "release": {
                "kind": "release",
                "name": slot.name,
                "releases": slot.scores.steps,
                "sensitivity": slot.sensitivity,
                "sample_rate": slot.sample_rate,
            },
            **result.to_dict(),
            "inclusion": self.included.astype(int).tolist(),
            "scores": {name: s.tolist() for name, s in slot.scores.scores().items()},
            "seconds": round(time.time() - self.started, 3),
        }


class ReleaseSlot:
    """The canaries of a noisy release that is not a DP-SGD step (`release`): each release appends one
    coordinate per canary, shifted by the release's per-record sensitivity when the canary is in the data
    and drawn, before the method's own noise is added."""

    def __init__(self, session: CanarySession, name: str, sensitivity: float, sample_rate: float) -> None:
        self.session, self.name = session, name
        self.sensitivity, self.sample_rate = float(sensitivity), float(sample_rate)
        self.rng = np.random.default_rng([session.seed, 2])
        self.scores = ScoreAccumulator(session.count)

    def shifts(self, sensitivity: float, sample_rate: float) -> np.ndarray:
        """This release's canary coordinates before noise (each scored in units of its release's sensitivity)."""
        self.sensitivity, self.sample_rate = float(sensitivity), float(sample_rate)
        drawn = self.rng.random(self.session.count) < sample_rate
        return np.where(drawn & self.session.included, float(sensitivity), 0.0)


def release(
    clean: Any,
    std: float,
    draw: Callable[[tuple[int, ...], float], Any],
    *,
    sensitivity: float,
    sample_rate: float = 1.0,
    name: str = "release",
) -> Any:
    """`clean + draw(clean.shape, std)`: one noisy release of a mechanism that is not a DP-SGD step (numpy
    array or torch tensor; `draw(shape, std)` is the method's own noise, e.g. Gaussian or Laplace of that
    scale). Outside a canary session exactly that. In an audited run whose canaries no DP-SGD engine has
    claimed, the release is made over the values and one extra coordinate per canary (its shift: the
    release's per-record `sensitivity` — L2 for Gaussian, L1 for Laplace — when the canary is in the data
    and drawn with `sample_rate`), with the same noise draw; the canary coordinates are read, in units of
    the sensitivity, and stripped."""
    session = _ACTIVE.get()
    if session is None or (session.slot is not None and session.slot.engine is not None):
        return clean + draw(tuple(clean.shape), std)
    if session.releases is None:
        session.releases = ReleaseSlot(session, name, sensitivity, sample_rate)
    if session.releases.name != name:  # one mechanism per run carries the canaries
        return clean + draw(tuple(clean.shape), std)
    shifts = session.releases.shifts(sensitivity, sample_rate)
    if isinstance(clean, Tensor):
        extended = torch.cat([clean.reshape(-1), torch.as_tensor(shifts, dtype=clean.dtype, device=clean.device)])
    else:
        extended = np.concatenate([np.asarray(clean, dtype=np.float64).reshape(-1), shifts])
    noisy = extended + draw(tuple(extended.shape), std)
    observed = noisy[-session.count :]
    observed = observed.detach().double().cpu().numpy() if isinstance(observed, Tensor) else np.asarray(observed)
    session.releases.scores.observe(observed / sensitivity)
    return noisy[: -session.count].reshape(clean.shape)


def attach(engine: Any, device: torch.device, dtype: torch.dtype) -> CanarySlot | None:
    """Called by an engine at its first release: the active session's slot if this is the first such engine,
    else None."""
    session = _ACTIVE.get()
    if session is None:
        return None
    session.engines += 1
    if session.slot is not None or session.releases is not None:
        return None
    session.slot = CanarySlot(session, device, dtype)
    session.slot.engine = engine
    return session.slot
