"""Soundness of MST's and AIM's ledgers: over random neighbouring pairs, the released pre-noise statistics move by
no more than the sensitivities the ledger states (paper: add/remove-one, sound: replace-one), AIM's adaptive rounds
never spend more than its ledger states, and the ledger's epsilon is the tight zCDP conversion of the composed rho.

The Gaussian rounds are pushed through the code (`mst.measure_one_way`, `mst.measure_cliques`) with the noisy release
(`canaries.release`) replaced by a recorder of its clean input; the selection's scores (`mst.pair_errors`) are
computed on both datasets against the same released model. Each check also runs with a planted bug (the marginals
left unweighted; the squared instead of the L1 error), which it must catch.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize

from dpvae.methods.marginals import accounting, aim, mst
from dpvae.privacy import canaries

SLACK = 1e-9
TRIALS = 60


def _neighbours(rng: np.random.Generator, adjacency: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sizes, D, D') of integer-coded records: D' = D without one record (add/remove) or with it replaced."""
    d = int(rng.integers(2, 6))
    sizes = rng.integers(2, 5, size=d)
    n = int(rng.integers(5, 40))
    codes = np.column_stack([rng.integers(0, s, size=n) for s in sizes])
    i = int(rng.integers(n))
    if adjacency == "add/remove-one":
        return sizes, codes, np.delete(codes, i, axis=0)
    other = codes.copy()
    other[i] = [rng.integers(0, s) for s in sizes]
    return sizes, codes, other


def _released(monkeypatch, measure) -> np.ndarray:
    """The clean inputs of every noisy release `measure()` makes, concatenated."""
    seen = []

    def record(clean, std, draw, *, sensitivity, sample_rate=1.0, name="release"):
        seen.append(np.asarray(clean, dtype=np.float64).ravel())
        return clean

    monkeypatch.setattr(canaries, "release", record)
    measure()
    return np.concatenate(seen)


def _largest_changes(monkeypatch, adjacency: str, seed: int = 0) -> dict[str, float]:
    """The largest L2 change of each Gaussian round's released vector and the largest change of a selection score."""
    rng = np.random.default_rng(seed)
    worst = {"round 1": 0.0, "round 2": 0.0, "selection": 0.0}
    for _ in range(TRIALS):
        sizes, d1, d2 = _neighbours(rng, adjacency)
        noise = np.random.default_rng(0)
        first = [
            _released(monkeypatch, lambda c=c: mst.measure_one_way(c, sizes, 1.0, noise, "t", False)) for c in (d1, d2)
        ]
        worst["round 1"] = max(worst["round 1"], float(np.linalg.norm(first[0] - first[1])))
        tree = [(a, a + 1) for a in range(len(sizes) - 1)]
        second = [
            _released(monkeypatch, lambda c=c: mst.measure_cliques(c, sizes, tree, 1.0, noise, "t")) for c in (d1, d2)
        ]
        worst["round 2"] = max(worst["round 2"], float(np.linalg.norm(second[0] - second[1])))
        marginals = [rng.random(s) * 10 for s in sizes]  # a released 1-way model: the same for both datasets
        total = float(rng.uniform(5, 40))
        scores = [mst.pair_errors(c, sizes, marginals, total) for c in (d1, d2)]
        worst["selection"] = max(worst["selection"], max(abs(scores[0][e] - scores[1][e]) for e in scores[0]))
    return worst


def _stated(sound: bool) -> dict[str, float]:
    round1, selection, round2 = accounting.mst_mechanisms(2.0, 4, sound)
    return {"round 1": round1.sensitivity, "selection": selection.sensitivity, "round 2": round2.sensitivity}


@pytest.mark.parametrize(("adjacency", "sound"), [("add/remove-one", False), ("replace-one", True)])
def test_mst_releases_move_no_more_than_the_ledger_states(monkeypatch, adjacency, sound):
    worst, stated = _largest_changes(monkeypatch, adjacency), _stated(sound)
    for part, change in worst.items():
        assert change <= stated[part] * (1 + SLACK), f"{part}: moved {change} > stated {stated[part]}"
    assert max(worst.values()) > 0.5 * min(stated.values()), "no pair moved anything: the check would be vacuous"


def test_replace_one_breaks_the_papers_sensitivities(monkeypatch):
    """The paper's add/remove-one values are no bound under replace-one (hence the sound accounting)."""
    worst, paper = _largest_changes(monkeypatch, "replace-one"), _stated(False)
    assert worst["selection"] > paper["selection"] and worst["round 1"] > paper["round 1"]


@pytest.mark.parametrize(
    ("bug", "part"),
    [
        (lambda: ("round_weight", lambda count: 1.0), "round 1"),  # the marginals left unweighted
        (lambda: ("l1_error", lambda data, model: float(((data - model) ** 2).sum())), "selection"),
    ],
    ids=["unweighted-marginals", "squared-error-score"],
)
def test_a_planted_bug_is_caught(monkeypatch, bug, part):
    name, broken = bug()
    monkeypatch.setattr(mst, name, broken)
    worst = _largest_changes(monkeypatch, "replace-one")
    assert worst[part] > _stated(True)[part] * (1 + SLACK)


def _tight_epsilon(rho: float, delta: float) -> float:
    """Canonne, Kamath & Steinke 2020, Prop. 12: the smallest eps with
    delta = min_alpha exp((alpha-1)(alpha rho - eps)) / (alpha - 1) * (1 - 1/alpha)^alpha (private-pgm's cdp_delta)."""

    def log_delta(eps: float) -> float:
        def f(alpha: float) -> float:
            return (alpha - 1) * (alpha * rho - eps) + alpha * math.log1p(-1 / alpha) - math.log(alpha - 1)

        return optimize.minimize_scalar(f, bounds=(1.0001, 1e6), method="bounded", options={"xatol": 1e-9}).fun

    return optimize.brentq(lambda eps: log_delta(eps) - math.log(delta), 1e-9, 1e3, xtol=1e-12)


@pytest.mark.parametrize("target", [0.3, 1.0, 10.0])
def test_the_mst_ledger_is_the_tight_zcdp_conversion_of_its_rho(target):
    d, delta = 15, 1e-5
    sigma = accounting.calibrate_mst(target, delta, d)
    ledger = accounting.mst_ledger(sigma, d, delta, target)
    assert ledger.epsilon <= target
    for sound in (False, True):
        records = accounting.mst_mechanisms(sigma, d, sound)
        rho = sum(m.steps / (2 * m.noise_multiplier**2) for m in records)
        if not sound:
            assert rho == pytest.approx(3 / (2 * sigma**2))  # rho/3 for each of the three parts
        accounted = ledger.sound if sound else ledger.paper
        assert accounted.epsilon == pytest.approx(_tight_epsilon(rho, delta), rel=1e-6)
        assert accounted.epsilon < rho + 2 * math.sqrt(rho * math.log(1 / delta))  # tighter than Bun & Steinke
    # sound: the Gaussian rounds' rho doubles (sqrt 2), the selection's quadruples (score sensitivity 2)
    assert sum(1 / (2 * m.noise_multiplier**2) * m.steps for m in accounting.mst_mechanisms(sigma, d, True)) == (
        pytest.approx((2 + 4 + 2) / (2 * sigma**2))
    )


# ------------------------------------------------------------------------------------------------------------ AIM


def _aim_largest_changes(monkeypatch, adjacency: str, seed: int = 1) -> dict[str, float]:
    """The largest L2 change of an AIM measurement (a raw marginal) and the largest change of a selection score
    against the same released model, in units of the code's stated selection sensitivity (max w_r)."""
    rng = np.random.default_rng(seed)
    worst = {"measurement": 0.0, "selection": 0.0}
    for _ in range(TRIALS):
        sizes, d1, d2 = _neighbours(rng, adjacency)
        d = len(sizes)
        candidates = aim.workload_candidates(d, 2)
        clique = list(candidates)[int(rng.integers(len(candidates)))]
        noise = np.random.default_rng(0)
        measured = [_released(monkeypatch, lambda c=c: aim._gaussian(c, sizes, clique, 1.0, noise)) for c in (d1, d2)]
        worst["measurement"] = max(worst["measurement"], float(np.linalg.norm(measured[0] - measured[1])))
        model = {r: rng.random(int(np.prod([sizes[a] for a in r]))) * 10 for r in candidates}  # released: fixed
        scores = [aim.selection_scores(c, sizes, candidates, model.__getitem__, 0.3) for c in (d1, d2)]
        change = float(np.abs(scores[0] - scores[1]).max()) / aim.selection_sensitivity(candidates)
        worst["selection"] = max(worst["selection"], change)
    return worst


def _aim_stated(sound: bool) -> dict[str, float]:
    _, rounds, selection = accounting.aim_mechanisms(0.5, 4, 64, sound)
    return {"measurement": rounds.sensitivity, "selection": selection.sensitivity}


@pytest.mark.parametrize(("adjacency", "sound"), [("add/remove-one", False), ("replace-one", True)])
def test_aim_releases_move_no_more_than_the_ledger_states(monkeypatch, adjacency, sound):
    worst, stated = _aim_largest_changes(monkeypatch, adjacency), _aim_stated(sound)
    for part, change in worst.items():
        assert change <= stated[part] * (1 + SLACK), f"{part}: moved {change} > stated {stated[part]}"
    assert worst["selection"] > 0.5 * stated["selection"], "the check would be vacuous"


@pytest.mark.parametrize(
    "bug",
    [
        ("selection_sensitivity", lambda candidates: 1.0),  # the workload weights left out of the sensitivity
        ("l1_error", lambda data, model: float(((data - model) ** 2).sum())),
    ],
    ids=["unweighted-sensitivity", "squared-error-score"],
)
def test_an_aim_planted_bug_is_caught(monkeypatch, bug):
    name, broken = bug
    monkeypatch.setattr(aim, name, broken)
    assert _aim_largest_changes(monkeypatch, "replace-one")["selection"] > _aim_stated(True)["selection"] * (1 + SLACK)


@pytest.mark.parametrize("seed", range(20))
def test_aims_rounds_never_spend_more_than_the_ledger_states(seed):
    """Random annealing decisions: the filter's spend stays within the plan, and the last round uses it up."""
    rng = np.random.default_rng(seed)
    d, rounds = int(rng.integers(2, 20)), int(rng.integers(30, 400))
    plan = aim.Plan(float(rng.uniform(1e-4, 5)), d, rounds)
    budget, sigma, epsilon = aim.Budget(plan), plan.sigma0, plan.epsilon0
    for _ in range(10 * rounds):
        sigma, epsilon, last = budget.next_round(sigma, epsilon)
        budget.spend(sigma, epsilon)
        if last:
            break
        if rng.random() < 0.3:
            sigma, epsilon = sigma / 2, epsilon * 2
    assert last and len(budget.rounds) <= rounds
    assert budget.gaussian <= plan.gaussian and budget.selection <= plan.selection
    assert budget.gaussian == pytest.approx(plan.gaussian, rel=1e-9)
    assert budget.selection == pytest.approx(plan.selection, rel=1e-9)
    assert plan.initial + plan.gaussian + plan.selection == pytest.approx(plan.rho)
    with pytest.raises(RuntimeError, match="exceed"):
        budget.spend(sigma, epsilon)


@pytest.mark.parametrize("target", [0.3, 1.0, 10.0])
def test_the_aim_ledger_is_the_tight_zcdp_conversion_of_its_rho(target):
    d, rounds, delta = 15, 240, 1e-5
    noise = accounting.calibrate_aim(target, delta, d, rounds)
    ledger = accounting.aim_ledger(noise, d, rounds, delta, target)
    assert ledger.epsilon <= target
    rho = 1 / (2 * noise**2)
    for sound, accounted in ((False, ledger.paper), (True, ledger.sound)):
        records = accounting.aim_mechanisms(rho, d, rounds, sound)
        total = sum(m.steps / (2 * m.noise_multiplier**2) for m in records)
        initial, gaussian, selection = (m.steps / (2 * m.noise_multiplier**2) for m in records)
        if not sound:
            assert total == pytest.approx(rho)
        else:  # the Gaussian parts' rho doubles, the selections' quadruples
            plain = accounting.aim_mechanisms(rho, d, rounds, False)
            assert initial == pytest.approx(2 * plain[0].steps / (2 * plain[0].noise_multiplier ** 2))
            assert selection == pytest.approx(4 / (2 * plain[2].noise_multiplier ** 2))
        assert accounted.epsilon == pytest.approx(_tight_epsilon(total, delta), rel=1e-6)
