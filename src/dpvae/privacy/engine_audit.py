"""The engine-level one-run audit: Dirac canaries through a small model, for every DP-SGD engine.

The model's per-record loss is linear, f(x) = ⟨w₁, x₁⟩ + ⟨w₂, x₂⟩ (two private layers, no bias; for the
partial-model engine a third, public layer reads a public block of the record), so a record's gradient *is* the
record. Canary i is the record s·e_{j(i)} (s = 100C: clipping binds, and a layer left out of the clipping shows), a
Dirac vector on its own coordinate j(i), half of them in each private layer; the ordinary records are Gaussian on
coordinates of their own (norm ≈ 2C). Each canary is in the data with probability ½; every step Poisson-samples the
records and the included canaries at the engine's rate q and feeds the engine what its kind takes:

* standard DP-SGD and partial-model: per-record losses f(x_i);
* term-wise: φ_i = f(x_i) and ψ_j = Σ_{i∈s_j} f(x_i) over b random sub-groups (C2 = C1/2);
* micro aggregation: φ_i = f(x_i) and the shared ψ = Σ_i f(x_i);
* batch aggregation: the whole-batch loss Σ_i f(x_i).

σ is calibrated (rounded up) so that the engine's paper accounting of T steps is the claimed ε; the sound
accounting's ε is recorded beside it. After every step the auditor reads the released noisy gradient
at the canaries' coordinates (white-box; DP-SGD's accounting covers every step's release) and scores each
canary by the sum and the maximum of its observations; `one_run.audit` turns the scores into ε̂.

The canaries go through the engine's own clipping of the model's layers, so a bug there (a layer left
out of the clipping norm, noise too small) shows; under micro and batch aggregation the canaries of a
batch share one clipped direction, so those engines are audited at a sample rate with about one canary
per batch (`AuditSetting.sample_rate`, more steps).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import numpy as np
import torch
from torch import Tensor, nn

from dpvae.privacy.canaries import CANARY_SCALE, canary_unit
from dpvae.privacy.one_run import OneRunAudit, ScoreAccumulator, audit

ENGINES = ("dpsgd", "termwise", "micro", "batch", "partial")
DATA_DIM, PUBLIC_DIM = 8, 4


@dataclass(frozen=True)
class AuditSetting:
    """One audited training run of one engine at one claimed ε."""

    engine: str
    epsilon: float
    sample_rate: float
    steps: int
    canaries: int = 1000
    records: int = 200
    delta: float = 1e-5
    clip: float = 1.0
    groups: int = 4
    confidence: float = 0.95
    seed: int = 0

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}, got {self.engine!r}")
        if not (0 < self.sample_rate <= 1 and self.steps >= 1 and self.canaries >= 2 and self.records >= 0):
            raise ValueError(f"need 0 < sample_rate <= 1, steps >= 1, canaries >= 2, records >= 0: {self}")


@dataclass(frozen=True)
class EngineAudit:
    """ε̂ of one audited run beside the engine's claims (paper = the calibrated target, sound)."""

    setting: AuditSetting
    noise_multiplier: float
    epsilon_paper: float
    epsilon_sound: float
    result: OneRunAudit
    seconds: float

    def to_dict(self) -> dict:
        return {
            "setting": asdict(self.setting),
            "noise_multiplier": self.noise_multiplier,
            "epsilon_paper": self.epsilon_paper,
            "epsilon_sound": self.epsilon_sound,
            "result": self.result.to_dict(),
            "seconds": self.seconds,
        }


class RecordGradientModel(nn.Module):
    """f(x) = ⟨w₁, x[:, :d₁]⟩ + ⟨w₂, x[:, d₁:d₁+d₂]⟩ (+ ⟨v, x[:, d₁+d₂:]⟩, v public): ∇_w f(x) = x."""

    def __init__(self, first: int, second: int, public: int = 0) -> None:
        super().__init__()
        self.dims = (first, second, public)
        self.first, self.second = nn.Linear(first, 1, bias=False), nn.Linear(second, 1, bias=False)
        self.public = nn.Linear(public, 1, bias=False) if public else None

    def forward(self, x: Tensor) -> Tensor:  # x [B, d₁ + d₂ (+ d_public)] -> [B]
        d1, d2, _ = self.dims
        out = self.first(x[:, :d1]) + self.second(x[:, d1 : d1 + d2])
        if self.public is not None:
            out = out + self.public(x[:, d1 + d2 :])
        return out.squeeze(1)

    def private_grad(self) -> Tensor:
        return torch.cat([self.first.weight.grad.reshape(-1), self.second.weight.grad.reshape(-1)])


@dataclass(frozen=True)
class Population:
    """Every record of the audited run: the ordinary records, the canaries (rows), where each canary's
    Dirac sits, and which canaries are in the data."""

    records: Tensor  # [n, D]
    canaries: Tensor  # [m, D]
    coordinates: np.ndarray  # [m] the private coordinate of each canary
    included: np.ndarray  # [m] bool


def population(setting: AuditSetting, model: RecordGradientModel, rng: np.random.Generator) -> Population:
    d1, d2, public = model.dims
    m, half = setting.canaries, setting.canaries // 2
    coordinates = np.r_[np.arange(half), d1 + np.arange(m - half)]  # half in each private layer
    data = np.setdiff1d(np.arange(d1 + d2), coordinates)
    records = np.zeros((setting.records, d1 + d2 + public))
    records[:, data] = rng.normal(size=(setting.records, len(data))) * 2 * setting.clip / np.sqrt(len(data))
    if public:
        records[:, d1 + d2 :] = rng.normal(size=(setting.records, public))
    canaries = np.zeros((m, d1 + d2 + public))
    canaries[np.arange(m), coordinates] = CANARY_SCALE * setting.clip
    included = rng.random(m) < 0.5
    return Population(torch.as_tensor(records), torch.as_tensor(canaries), coordinates, included)


def build_engine(
    setting: AuditSetting, model: RecordGradientModel, noise_multiplier: float, generator: torch.Generator
):
    """The engine of `setting.engine` over `model` (expected batch: q times the records and half the canaries)."""
    from dpvae.privacy.dpsgd import DPSGD, BatchAggregation, MicroAggregation, TermwiseDPSGD

    q, c = setting.sample_rate, setting.clip
    expected = max(q * (setting.records + setting.canaries / 2), 1.0)
    common = dict(noise_multiplier=noise_multiplier, sample_rate=q, generator=generator)
    if setting.engine == "dpsgd":
        return DPSGD(model, max_grad_norm=c, expected_batch_size=expected, **common)
    if setting.engine == "partial":
        return DPSGD(
            model,
            max_grad_norm=c,
            expected_batch_size=expected,
            **common,
            private_params=[model.first.weight, model.second.weight],
            public_uses_private_data=True,
            max_batch_size=setting.records + setting.canaries,
        )
    if setting.engine == "termwise":
        return TermwiseDPSGD(
            model, sample_clip=c, batch_clip=c / 2, expected_batch_size=expected, num_groups=setting.groups, **common
        )
    if setting.engine == "micro":
        return MicroAggregation(model, max_grad_norm=c, expected_batch_size=expected, **common)
    return BatchAggregation(model, max_grad_norm=c, **common)


def step_inputs(kind: str, losses: Tensor, groups: int, generator: torch.Generator) -> tuple[Tensor, ...]:
    """What `engine.step` takes, from the per-record losses of one batch (module docstring)."""
    from dpvae.privacy.dpsgd import Units, random_groups

    if kind in ("dpsgd", "partial"):
        return (losses,)
    if kind == "termwise":
        labels = random_groups(len(losses), groups, generator)
        return losses, Units(labels, groups).sum_by_unit(losses), labels
    if kind == "micro":
        return losses, losses.sum()
    return (losses.sum(),)


def engine_epsilon(engine, steps: int, delta: float, sound: bool) -> float:
    """ε of `steps` steps of `engine` at its current noise multiplier, under its paper or sound records."""
    from dpvae.privacy.ledger import Accounting

    done, engine.steps = engine.steps, steps
    try:
        return Accounting(tuple(engine.mechanisms(sound=sound)), delta).epsilon
    finally:
        engine.steps = done


def calibrate(engine, setting: AuditSetting) -> float:
    """The smallest σ (rounded up) whose paper ε over the run's steps is at most the claimed ε."""
    from dpvae.privacy.accounting import solve_noise_multiplier

    def paper_epsilon(sigma: float) -> float:
        engine.noise_multiplier = sigma
        return engine_epsilon(engine, setting.steps, setting.delta, sound=False)

    sigma = solve_noise_multiplier(paper_epsilon, setting.epsilon)
    engine.noise_multiplier = sigma
    return sigma


def run_audit(setting: AuditSetting) -> EngineAudit:
    """Train once with the canaries (module docstring) and audit the engine at its claimed ε."""
    started = time.time()
    torch.manual_seed(setting.seed)
    rng = np.random.default_rng([setting.seed, 7])
    half = setting.canaries // 2
    model = RecordGradientModel(
        half + DATA_DIM // 2,
        setting.canaries - half + DATA_DIM - DATA_DIM // 2,
        PUBLIC_DIM if setting.engine == "partial" else 0,
    ).double()
    for p in model.parameters():
        nn.init.zeros_(p)
    people = population(setting, model, rng)
    noise = torch.Generator().manual_seed(setting.seed)
    sampling = torch.Generator().manual_seed(setting.seed + 1)
    engine = build_engine(setting, model, 1.0, noise)
    sigma = calibrate(engine, setting)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    unit = canary_unit(engine)
    scores = ScoreAccumulator(setting.canaries)
    in_data = torch.as_tensor(people.included)
    for _ in range(setting.steps):
        rows = torch.rand(setting.records, generator=sampling) < setting.sample_rate
        drawn = (torch.rand(setting.canaries, generator=sampling) < setting.sample_rate) & in_data
        x = torch.cat([people.records[rows], people.canaries[drawn]])
        optimizer.zero_grad(set_to_none=True)
        engine.step(*step_inputs(setting.engine, model(x), setting.groups, sampling))
        scores.observe(model.private_grad()[people.coordinates].numpy() / unit)
        optimizer.step()
    engine.close()
    result = audit(scores.scores(), people.included, setting.delta, setting.confidence)
    return EngineAudit(
        setting,
        sigma,
        engine_epsilon(engine, setting.steps, setting.delta, sound=False),
        engine_epsilon(engine, setting.steps, setting.delta, sound=True),
        result,
        round(time.time() - started, 3),
    )
