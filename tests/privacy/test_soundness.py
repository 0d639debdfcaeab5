"""Soundness: every ledger's stated sensitivity bounds what the code releases.

For each DP-SGD engine (standard, term-wise, micro, batch, partial-model) and each mechanism (DP-PCA with
its centring mean, DP-EM, DP k-means), many random neighbouring pairs — Poisson batches above the expected
size included, and multi-step runs whose public parameters are updated in between — are pushed through
the code, and the largest change of the released pre-noise statistic is compared with the sensitivity the
ledger states: the sound ledger must hold; the paper's ledger must hold where it is called a bound and is
shown to fail where it is only the paper's claim. Every check is run on a deliberately broken variant too
(one layer left out of the clipping norm; the expected instead of the realised batch size; a non-private
centring mean; unclipped or unnormalised rows), which it must catch.
"""

from __future__ import annotations

import ast
import copy
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import Tensor, nn

from dpvae.methods.dp2vae.accounting import dp2vae_ledger
from dpvae.methods.p3gm.accounting import sound_record
from dpvae.methods.privae.accounting import privae_ledger
from dpvae.privacy.dpsgd import DPSGD, BatchAggregation, MicroAggregation, TermwiseDPSGD, Units
from dpvae.privacy.dpsgd.analysis import clipped_sums, released_sum
from dpvae.privacy.dpsgd.engine import _Engine
from dpvae.privacy.mechanisms import dp_em_diagonal_gmm, dp_kmeans, dp_pca, em, gaussian, kmeans, pca

SRC = Path(__file__).resolve().parents[2] / "src" / "dpvae"
SLACK = 1e-9  # relative: float rounding only
TRIALS = 60


# -- a model whose gradients grow with its input, so that every clip binds --------------------------------


class Bilinear(nn.Module):
    """f(x) = w₂·(W₁x): no biases, so every sum of gradients flips with the sum of the inputs. The second
    layer starts small, so its gradient (W₁x) dominates the first's (w₂xᵀ): leaving it out of the clipping
    norm (the planted bug) leaves the larger gradient unclipped."""

    def __init__(self, d: int = 3, hidden: int = 4) -> None:
        super().__init__()
        self.first, self.second = nn.Linear(d, hidden, bias=False), nn.Linear(hidden, 1, bias=False)
        self.second.weight.data.mul_(0.01)

    def forward(self, x: Tensor) -> Tensor:
        return self.second(self.first(x)).squeeze(-1)


def records(rng: np.random.Generator, n: int = 40, d: int = 3) -> Tensor:
    """Records around a common random direction, one far outlier on the other side (index 0), scaled so that
    every clip binds: removing the outlier flips every shared and sub-group gradient."""
    direction = rng.normal(size=d)
    direction /= np.linalg.norm(direction)
    x = direction * rng.uniform(1, 3) + rng.normal(scale=0.5, size=(n, d))
    x[0] = -direction * rng.uniform(1.5, 3) * n
    return torch.as_tensor(30 * x, dtype=torch.float64)


@dataclass(frozen=True)
class RemovalPair:
    """A Poisson batch S of record indices and the record x ∈ S the neighbour lacks (add/remove-one)."""

    batch: Tensor
    removed: int

    @property
    def without(self) -> Tensor:
        return self.batch[self.batch != self.removed]


def removal_pairs(rng: np.random.Generator, n: int, rate: float, trials: int) -> Iterator[RemovalPair]:
    """Random Poisson batches (every third at twice the rate, so above the expected size) and a random member
    to remove, the outlier (record 0) half of the time."""
    for trial in range(trials):
        q = 2 * rate if trial % 3 == 0 else rate
        batch = np.flatnonzero(rng.random(n) < q)
        if rng.random() < 0.5 and 0 not in batch:
            batch = np.sort(np.append(batch, 0))
        if len(batch) == 0:
            continue
        yield RemovalPair(torch.as_tensor(batch), int(rng.choice(batch)))


# -- engines under test: how each turns a batch of records into its step inputs ----------------------------

N, RATE, EXPECTED, GROUPS = 40, 0.2, 8.0, 3


def make_engine(kind: str, model: nn.Module) -> _Engine:
    common = dict(noise_multiplier=1.0, sample_rate=RATE)
    if kind == "dpsgd":
        return DPSGD(model, max_grad_norm=1.0, expected_batch_size=EXPECTED, **common)
    if kind == "termwise":
        return TermwiseDPSGD(
            model, sample_clip=1.0, batch_clip=0.5, expected_batch_size=EXPECTED, num_groups=GROUPS, **common
        )
    if kind == "micro":
        return MicroAggregation(model, max_grad_norm=1.0, expected_batch_size=EXPECTED, **common)
    return BatchAggregation(model, max_grad_norm=1.0, **common)


def step_inputs(kind: str, model: nn.Module, x: Tensor, labels: Tensor) -> tuple[Tensor, ...]:
    """φ_i = f(x_i); term-wise ψ_j = Σ_{i∈s_j} f(x_i); micro ψ = Σ_i f(x_i) shared by every unit; batch agg.
    one loss mean φ + ψ."""
    out = model(x)
    if kind == "dpsgd":
        return (out,)
    if kind == "termwise":
        return out, Units(labels, GROUPS).sum_by_unit(out), labels
    if kind == "micro":
        return 0.01 * out, out.sum()
    return (0.01 * out.mean() + out.sum(),)


def unclip_one_layer(monkeypatch: pytest.MonkeyPatch, engine: _Engine) -> None:
    """Planted bug: the last private layer is left out of the clipping norm (its gradient goes unclipped)."""
    original, dropped = engine._clip_factors, engine._private_layers[-1]

    def broken(layers, *args):
        return original([layer for layer in layers if layer is not dropped], *args)

    monkeypatch.setattr(engine, "_clip_factors", broken)


def use_expected_batch(monkeypatch: pytest.MonkeyPatch, engine: _Engine) -> None:
    """Planted bug: micro aggregation divides by the expected batch size B whatever the realised size."""
    monkeypatch.setattr(engine, "_normaliser", lambda num_examples: engine.expected_batch_size)


PLANTED = {"unclipped layer": unclip_one_layer, "expected batch": use_expected_batch}


@dataclass
class Worst:
    """Largest change of the released statistic and of each term's clipped sum over the pairs seen."""

    released: float = 0.0
    terms: dict[str, float] | None = None
    above_expected: int = 0  # pairs whose batch was larger than the expected batch size


def worst_changes(kind: str, seed: int, bug: str | None, monkeypatch: pytest.MonkeyPatch) -> tuple[Worst, _Engine]:
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    model = Bilinear().double()
    engine = make_engine(kind, model)
    if bug is not None:
        PLANTED[bug](monkeypatch, engine)
    worst = Worst(terms={})
    for trial in range(TRIALS // 6):
        x = records(rng, N)
        labels = torch.as_tensor(rng.integers(0, GROUPS, N))  # independent labels, kept by the other records
        for pair in removal_pairs(rng, N, RATE, 6):

            def inputs(batch: Tensor) -> tuple[Tensor, ...]:  # one forward pass per engine call
                return step_inputs(kind, model, x[batch], labels[batch])

            before = released_sum(engine, *inputs(pair.batch))
            change = float(torch.linalg.vector_norm(before - released_sum(engine, *inputs(pair.without))))
            sums_before = clipped_sums(engine, *inputs(pair.batch))
            sums_after = clipped_sums(engine, *inputs(pair.without))
            for name in sums_before:
                moved = float(torch.linalg.vector_norm(sums_before[name] - sums_after[name]))
                worst.terms[name] = max(worst.terms.get(name, 0.0), moved)
            worst.released = max(worst.released, change)
            worst.above_expected += len(pair.batch) > EXPECTED
    return worst, engine


ENGINES = ["dpsgd", "termwise", "micro", "batch"]


@pytest.mark.parametrize("kind", ENGINES)
def test_engine_sound_sensitivity_holds_for_every_realised_batch(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    worst, engine = worst_changes(kind, 0, None, monkeypatch)
    (sound,) = engine.mechanisms(sound=True)
    assert worst.above_expected >= 10  # Poisson batches above the expected size were among the pairs
    assert worst.released <= sound.sensitivity * (1 + SLACK)
    assert worst.released >= 0.5 * sound.sensitivity  # the pairs reach the bound's order: the check has teeth


# The paper's ledger per engine: which of its per-term sensitivities are bounds (True) and which are only the
# paper's claim, exceeded by some neighbouring pair (False). Each is in the units of that term's clipped sum.
PAPER_HOLDS = {
    "dpsgd": {"dpsgd": True},
    "termwise": {"sample": True, "batch": False},
    "micro": {"micro": False},
    "batch": {"batch": False},
}


@pytest.mark.parametrize("kind", ENGINES)
def test_engine_paper_sensitivity_where_a_bound_and_where_only_a_claim(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    worst, engine = worst_changes(kind, 1, None, monkeypatch)
    stated = {m.name.split(".")[-1]: m.sensitivity for m in engine.mechanisms()}
    assert worst.terms is not None and set(stated) == set(PAPER_HOLDS[kind]) == set(worst.terms)
    for term, holds in PAPER_HOLDS[kind].items():
        assert (worst.terms[term] <= stated[term] * (1 + SLACK)) is holds, (term, worst.terms[term], stated[term])


@pytest.mark.parametrize("kind,bug", [(kind, "unclipped layer") for kind in ENGINES] + [("micro", "expected batch")])
def test_engine_check_catches_a_planted_bug(kind: str, bug: str, monkeypatch: pytest.MonkeyPatch) -> None:
    worst, engine = worst_changes(kind, 2, bug, monkeypatch)
    (sound,) = engine.mechanisms(sound=True)
    assert worst.released > sound.sensitivity * (1 + 1e-3)


def test_termwise_tight_kappa_is_the_exact_worst_case() -> None:
    """κ = tight: (C1/B + 2·C2/b)/√((C1/B)² + (C2/b)²) is the released gradient's worst case over its noise;
    the worst case is attained (a record whose own gradient points where its sub-group's clipped gradient
    flips to), so no smaller factor is sound for this engine."""
    model = nn.Linear(2, 1, bias=False).double()
    model.weight.data.zero_()
    b, big_b, c1, c2 = 2, 4.0, 1.0, 0.5
    engine = TermwiseDPSGD(
        model,
        sample_clip=c1,
        batch_clip=c2,
        expected_batch_size=big_b,
        num_groups=b,
        noise_multiplier=1.7,
        sample_rate=0.1,
    )
    x = torch.tensor([[-3.0, 0.0], [0.5, 2.0], [0.0, -1.0], [5.0, 0.0]], dtype=torch.double)  # record 3 joins group 0
    labels = torch.tensor([0, 1, 1, 0])

    def release(rows: Tensor, groups: Tensor) -> Tensor:
        out = model(rows).squeeze(1)
        return released_sum(engine, out, Units(groups, b).sum_by_unit(out), groups)

    change = float(torch.linalg.vector_norm(release(x, labels) - release(x[:3], labels[:3])))
    (sound,) = engine.mechanisms(sound=True)
    assert change == pytest.approx(c1 / big_b + 2 * c2 / b) == pytest.approx(sound.sensitivity)
    ledger = privae_ledger(1.7, 0.1, 1, 1e-5, c1, c2, big_b, b, kappa="tight")
    assert ledger.sound is not None and ledger.sound.mechanisms[0].noise_multiplier == pytest.approx(
        sound.noise_multiplier
    )
    assert sound.noise_multiplier == pytest.approx(1.7 * math.hypot(c1 / big_b, c2 / b) / (c1 / big_b + 2 * c2 / b))


# -- partial-model DP: public parameters trained on private data between the steps -------------------------


class EncoderDecoder(nn.Module):
    """Public encoders (one layer each, one per subset) and a private two-layer decoder: f_k(x) = w·(D·(E_k x))."""

    def __init__(self, subsets: int = 1) -> None:
        super().__init__()
        self.encoders = nn.ModuleList(nn.Linear(3, 3, bias=False) for _ in range(subsets))
        self.hidden, self.out = nn.Linear(3, 4, bias=False), nn.Linear(4, 1, bias=False)
        self.out.weight.data.mul_(0.01)

    def forward(self, x: Tensor, subset: int = 0) -> Tensor:
        return self.out(self.hidden(self.encoders[subset](x))).squeeze(-1)

    @property
    def decoder(self) -> list[nn.Parameter]:
        return [self.hidden.weight, self.out.weight]


def partial_engine(model: EncoderDecoder, batch: int) -> DPSGD:
    return DPSGD(
        model,
        max_grad_norm=1.0,
        noise_multiplier=1.0,
        sample_rate=1.0,
        expected_batch_size=batch,
        private_params=model.decoder,
        public_uses_private_data=True,
        max_batch_size=batch,
        generator=torch.Generator().manual_seed(0),
    )


Step = tuple[int, Tensor]  # (subset whose encoder is used, record indices of the batch)


def run_pair(
    x: Tensor,
    x_other: Tensor,
    schedule: list[Step],
    bug: bool,
    monkeypatch: pytest.MonkeyPatch,
    subsets: int = 1,
    pretrain: Callable[[EncoderDecoder, Tensor], None] | None = None,
) -> list[float]:
    """Train on D and on its neighbour D' side by side: the decoder (released) is shared, each side's
    encoders are updated from its own data (non-privately). Returns each step's change of the clipped sum."""
    torch.manual_seed(3)
    models = [EncoderDecoder(subsets).double()]
    models.append(copy.deepcopy(models[0]))
    if pretrain is not None:
        for model, data in zip(models, (x, x_other)):
            pretrain(model, data)
    engines = [partial_engine(m, len(schedule[0][1])) for m in models]
    if bug:
        for engine in engines:
            unclip_one_layer(monkeypatch, engine)
    changes = []
    for subset, batch in schedule:
        models[1].load_state_dict(
            {
                **models[1].state_dict(),
                "hidden.weight": models[0].hidden.weight.detach(),
                "out.weight": models[0].out.weight.detach(),
            }
        )  # the released decoder
        sums = [clipped_sums(e, m(data[batch], subset))["dpsgd"] for e, m, data in zip(engines, models, (x, x_other))]
        changes.append(float(torch.linalg.vector_norm(sums[0] - sums[1])))
        for engine, model, data in zip(engines, models, (x, x_other)):
            engine.step(model(data[batch], subset))
            with torch.no_grad():
                for p in model.parameters():
                    p -= 0.05 * p.grad
    return changes


def test_partial_model_sound_ledger_bounds_multi_step_runs_and_the_paper_claim_does_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Replace one record; fixed-size batches of 5 out of 12 over 3 steps. Once the record has updated the
    encoder, every later clipped gradient can move: the engine's sound bound (2C per unit, max_batch_size
    units, no amplification) holds, the per-example claim (2C under replace-one) does not."""
    rng = np.random.default_rng(4)
    worst_sound, worst_paper = 0.0, 0.0
    engine = partial_engine(EncoderDecoder().double(), 5)
    (sound,) = engine.mechanisms(sound=True)
    (paper,) = engine.mechanisms()
    bound = sound.sensitivity * engine.expected_batch_size  # in units of the clipped sum: 2·C·5
    for trial in range(12):
        x = records(rng, 12)
        schedule = [(0, torch.as_tensor(rng.choice(12, 5, replace=False))) for _ in range(3)]
        other = x.clone()
        first = int(schedule[0][1][0])  # a record of the first batch
        other[first] = -x[first] * rng.uniform(1, 5)
        changes = run_pair(x, other, schedule, False, monkeypatch)
        worst_sound = max(worst_sound, max(changes))
        worst_paper = max(worst_paper, max(changes[1:]))  # later steps, the record maybe not even in the batch
    assert bound == pytest.approx(10.0) and sound.sample_rate == 1.0
    assert worst_sound <= bound * (1 + SLACK)
    assert worst_paper > 2 * paper.sensitivity  # > 2C: the per-example claim is no bound once public parameters learn


def test_partial_model_check_catches_an_unclipped_layer(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(5)
    x = records(rng, 12)
    schedule = [(0, torch.as_tensor(rng.choice(12, 5, replace=False))) for _ in range(2)]
    other = x.clone()
    other[int(schedule[0][1][0])] *= -3
    assert max(run_pair(x, other, schedule, True, monkeypatch)) > 10.0 * (1 + 1e-3)


def test_dp2vae_sound_ledger_bounds_a_fixed_partition_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """DP²-VAE in small: K = 3 fixed subsets of 6 with one encoder each, pre-trained non-privately on its
    subset; each decoder step draws a subset and a batch of B = 4 from it. Replacing a record of subset 0
    moves a step's clipped sum by at most 2·B·C (the sound ledger's sensitivity) when subset 0 is drawn,
    and not at all otherwise; the paper's per-example claim (C, i.e. 2C under replace-one) is exceeded."""
    rng = np.random.default_rng(6)
    k, size, batch = 3, 6, 4
    ledger = dp2vae_ledger(1.0, num_subsets=k, steps=8, batch_size=batch, clip=1.0)
    assert ledger.sound is not None
    (sound,) = ledger.sound.mechanisms
    (paper,) = ledger.paper.mechanisms

    def pretrain(model: EncoderDecoder, data: Tensor) -> None:  # stage 1: each encoder on all of its subset
        for subset, encoder in enumerate(model.encoders):
            for _ in range(3):
                model.zero_grad()
                model(data[subset * size : (subset + 1) * size], subset).sum().backward()
                with torch.no_grad():
                    encoder.weight -= 0.05 * encoder.weight.grad

    worst_drawn, worst_other, worst = 0.0, 0.0, 0.0
    for trial in range(8):
        x = records(rng, k * size)
        other = x.clone()
        replaced = int(rng.integers(0, size))  # a record of subset 0 (rows 0..5)
        other[replaced] = -x[replaced] * rng.uniform(1, 5)
        draws = [int(d) for d in rng.integers(0, k, 8)]
        schedule = [(d, torch.as_tensor(d * size + rng.choice(size, batch, replace=False))) for d in draws]
        changes = run_pair(x, other, schedule, False, monkeypatch, subsets=k, pretrain=pretrain)
        for drawn, change in zip(draws, changes):
            if drawn == 0:
                worst_drawn = max(worst_drawn, change)
            else:
                worst_other = max(worst_other, change)
        worst = max(worst, max(changes))
    assert sound.sensitivity == 2 * batch * 1.0 and sound.sampling == "fixed-partition"
    assert worst_drawn <= sound.sensitivity * (1 + SLACK)
    assert worst_other == pytest.approx(0.0, abs=1e-9)  # another subset's step ignores the record
    assert worst > 2 * paper.sensitivity  # the paper's claim is exceeded


# -- mechanisms: DP-PCA (with its centring mean), DP-EM, DP k-means --------------------------------------


def rows_pairs(seed: int, trials: int = 200) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(D, D minus a row, D with that row replaced): rows of any scale, outliers included."""
    rng = np.random.default_rng(seed)
    for _ in range(trials):
        n, d = int(rng.integers(2, 12)), int(rng.integers(1, 6))
        x = rng.normal(size=(n, d)) * rng.choice([0.1, 1.0, 30.0]) + rng.normal(size=d)
        i = int(rng.integers(n))
        replaced = x.copy()
        replaced[i] = rng.normal(size=d) * rng.choice([0.1, 1.0, 100.0])
        yield x, np.delete(x, i, axis=0), replaced


def centred_moment(x: np.ndarray, centring: str, released_mean: np.ndarray) -> np.ndarray:
    """XᵀX of the clipped centred rows; "nonprivate" (the planted bug) centres each dataset with its own mean."""
    mean = pca.resolve_mean(x, "nonprivate") if centring == "nonprivate" else released_mean
    return pca.clipped_second_moment(x, mean)


@pytest.mark.parametrize("centring", ["dp", "nonprivate"])
def test_dp_pca_with_its_centring_mean_respects_paper_and_sound_sensitivities(centring: str) -> None:
    """Paper (add/remove): DP mean R, PCA 1 (the records `dp_pca` emits); sound (replace-one): 2R and √2
    (`sound_record` of the same records). The DP mean is released first, so XᵀX is compared at the same released
    mean (adaptive composition). The code's own empirical mean (the planted bug) breaks the PCA bounds."""
    clip = 2.0
    worst = {"mean remove": 0.0, "mean replace": 0.0, "pca remove": 0.0, "pca replace": 0.0}
    for x, removed, replaced in rows_pairs(7):
        fit = dp_pca(x, 1, 1.0, np.random.default_rng(0), mean="dp", mean_noise_multiplier=1.0, mean_clip=clip)
        paper_mean, paper_pca = fit.mechanisms
        sums = [gaussian.clip_rows(data, clip).sum(axis=0) for data in (x, removed, replaced)]
        worst["mean remove"] = max(worst["mean remove"], np.linalg.norm(sums[0] - sums[1]) / paper_mean.sensitivity)
        a = [centred_moment(data, centring, fit.mean) for data in (x, removed, replaced)]
        worst["pca remove"] = max(worst["pca remove"], np.linalg.norm(a[0] - a[1]) / paper_pca.sensitivity)
        sound_mean, sound_pca = (sound_record(r, 0, 1, fixed_batches=False) for r in fit.mechanisms)
        worst["mean replace"] = max(worst["mean replace"], np.linalg.norm(sums[0] - sums[2]) / sound_mean.sensitivity)
        worst["pca replace"] = max(worst["pca replace"], np.linalg.norm(a[0] - a[2]) / sound_pca.sensitivity)
    assert worst["mean remove"] <= 1 + SLACK and worst["mean replace"] <= 1 + SLACK
    holds = bool(worst["pca remove"] <= 1 + SLACK and worst["pca replace"] <= 1 + SLACK)
    assert holds is (centring == "dp"), worst
    assert fit.private is True and dp_pca(x, 1, 1.0, np.random.default_rng(0), mean="nonprivate").private is False


@pytest.mark.parametrize("bug", [False, True])
def test_dp_em_statistics_respect_the_recorded_sensitivities(bug: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Weights 2, means and variances 2√d' (the records, paper = sound: true bounds under both relations),
    with each record's responsibilities its own (given the released parameters). Planted bug: rows not
    clipped to norm 1."""
    if bug:
        monkeypatch.setattr(em, "clip_rows", lambda rows, max_norm=1.0: rows)
    rng = np.random.default_rng(8)
    violated = False
    for x, removed, replaced in rows_pairs(9):
        k = int(rng.integers(1, 4))
        records_only = np.zeros((2, x.shape[1]))  # the records depend on K and d' only
        fit = dp_em_diagonal_gmm(records_only, k, 1, 0.0, np.random.default_rng(0), account_initial_step=True)
        stated = [m.sensitivity for m in fit.mechanisms]
        resp = rng.dirichlet(np.ones(k), size=len(x))
        i = next(j for j in range(len(x)) if not np.array_equal(x[j], replaced[j]))
        z = [em.clip_rows(data) for data in (x, np.delete(x, i, axis=0), replaced)]
        r = [resp, np.delete(resp, i, axis=0), resp]
        base = em.mixture_statistics(z[0], r[0])
        for other, other_resp in zip(z[1:], r[1:]):
            moved = em.mixture_statistics(other, other_resp)
            changes = [
                np.linalg.norm(base[0] - moved[0]),
                *np.linalg.norm(base[1] - moved[1], axis=1),
                *np.linalg.norm(base[2] - moved[2], axis=1),
            ]
            bounds = [stated[0]] + [stated[1]] * k + [stated[2]] * k
            violated |= bool(any(c > s * (1 + SLACK) for c, s in zip(changes, bounds)))
    assert violated is bug


@pytest.mark.parametrize("bug", [False, True])
def test_dp_kmeans_statistics_respect_the_recorded_sensitivities(bug: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Counts and sums: 1 under add/remove (the records), √2 and 2 under replace-one (module docstring).
    Planted bug: features not normalised to unit norm."""
    rng = np.random.default_rng(10)
    violated = False
    for x, removed, replaced in rows_pairs(11):
        k = int(rng.integers(1, 4))
        fit = dp_kmeans(x, k, 1, 16, 1.0, 1.0, 1.0, np.random.default_rng(0))
        counts_record, sums_record = (m.sensitivity for m in fit.mechanisms)
        raw = fit.feature_map  # the planted bug: the cosine features without their normalisation
        feature_map = (lambda rows: np.cos(rows @ raw.frequencies + raw.offsets)) if bug else fit.feature_map
        i = next(j for j in range(len(x)) if not np.array_equal(x[j], replaced[j]))
        labels = rng.integers(0, k, len(x))
        other_labels = labels.copy()
        other_labels[i] = rng.integers(0, k)
        base = kmeans.cluster_statistics(feature_map(x), labels, k)
        gone = kmeans.cluster_statistics(feature_map(removed), np.delete(labels, i), k)
        swapped = kmeans.cluster_statistics(feature_map(replaced), other_labels, k)
        violated |= bool(np.linalg.norm(base[0] - gone[0]) > counts_record * (1 + SLACK))
        violated |= bool(np.linalg.norm(base[1] - gone[1]) > sums_record * (1 + SLACK))
        violated |= bool(np.linalg.norm(base[0] - swapped[0]) > math.sqrt(2) * (1 + SLACK))
        violated |= bool(np.linalg.norm(base[1] - swapped[1]) > 2 * (1 + SLACK))
    assert violated is bug


# -- pre-noise sums are out of training's reach ------------------------------------------------------------

ANALYSIS_NAMES = {"clipped_sums", "released_sum", "_aggregate", "_clipped_sum", "pre_noise"}
ANALYSIS_MODULE = "dpvae.privacy.dpsgd.analysis"
ALLOWED = {  # the analysis interface itself, the engine's machinery, and the sensitivity analysis
    "privacy/dpsgd/analysis.py",
    "privacy/dpsgd/engine.py",
    "privacy/dpsgd/opacus_reference.py",
    "privacy/dpsgd/sensitivity.py",
    "analyses/privae_table1.py",
}


def noiseless_references(source: str) -> list[str]:
    """Imports of the analysis module and uses of the names that reach clipped sums before noise."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(ANALYSIS_MODULE):
            found.append(f"import from {node.module}")
        elif (
            isinstance(node, ast.ImportFrom)
            and node.module == "dpvae.privacy.dpsgd"
            and any(alias.name == "analysis" for alias in node.names)
        ):
            found.append("import of dpvae.privacy.dpsgd.analysis")
        elif isinstance(node, ast.Import) and any(a.name.startswith(ANALYSIS_MODULE) for a in node.names):
            found.append(f"import {ANALYSIS_MODULE}")
        elif isinstance(node, ast.Attribute) and node.attr in ANALYSIS_NAMES:
            found.append(f".{node.attr}")
        elif isinstance(node, ast.Name) and node.id in ANALYSIS_NAMES:
            found.append(node.id)
    return found


def test_no_training_path_reaches_the_noiseless_sums() -> None:
    offenders = {}
    for path in SRC.rglob("*.py"):
        relative = path.relative_to(SRC).as_posix()
        if relative not in ALLOWED and (found := noiseless_references(path.read_text())):
            offenders[relative] = found
    assert offenders == {}
    for engine_class in (DPSGD, TermwiseDPSGD, MicroAggregation, BatchAggregation):
        public = {name for name in dir(engine_class) if not name.startswith("_")}
        assert public.isdisjoint(ANALYSIS_NAMES) and "step" in public


@pytest.mark.parametrize(
    "planted",
    [
        "from dpvae.privacy.dpsgd.analysis import clipped_sums\nclipped_sums(engine, losses)",
        "from dpvae.privacy.dpsgd import analysis\n",
        "engine._aggregate(terms, [[1.0]], include_public=False)",
        "engine.pre_noise(losses)",
    ],
)
def test_the_reachability_check_catches_a_planted_call(planted: str) -> None:
    assert noiseless_references(planted)


def test_a_training_step_does_not_go_through_the_analysis_interface(monkeypatch: pytest.MonkeyPatch) -> None:
    from dpvae.privacy.dpsgd import analysis

    def refuse(*args, **kwargs):
        raise AssertionError("training reached the analysis interface")

    monkeypatch.setattr(analysis, "clipped_sums", refuse)
    monkeypatch.setattr(analysis, "released_sum", refuse)
    model = Bilinear().double()
    engine = DPSGD(model, max_grad_norm=1.0, noise_multiplier=1.0, sample_rate=0.1, expected_batch_size=4)
    engine.step(model(torch.randn(4, 3, dtype=torch.double)))
    assert all(p.grad is not None for p in model.parameters())
