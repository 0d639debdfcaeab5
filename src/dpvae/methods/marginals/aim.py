"""AIM (McKenna, Mullins, Sheldon & Miklau 2022, "AIM: An Adaptive and Iterative Mechanism for Differentially
Private Synthetic Data", Algorithm 1), written from the paper on the project's integer codes (`discretize.py`),
with private-pgm (`mbi` 2.x) for estimation and sampling.

Workload W: every `degree`-way marginal of the d attributes (weights 1); candidates W+: its downward closure, each
r weighted w_r = sum over s in W of |r ∩ s|. With T rounds planned and alpha = 0.9 of each round's zCDP for the
measurement:

1. *Initialisation*: every 1-way marginal plus N(0, sigma0^2), sigma0 = sqrt(T / (2 alpha rho)).
2. *Rounds* while budget is left, starting from sigma_t = sigma0, eps_t = sqrt(8 (1 - alpha) rho / T): when what is
   left is at most twice a round's 1/(2 sigma_t^2) + eps_t^2/8, the round takes all of it (alpha for sigma_t, the
   rest for eps_t) and is the last. The candidates whose junction tree with the model's cliques stays within
   (rho used / rho) * `max_size` MB; the exponential mechanism (eps_t, score sensitivity max w_r) on
   w_r (|M_r(D) - M_r(model)|_1 - sqrt(2/pi) sigma_t n_r) picks r_t; its marginal plus N(0, sigma_t^2) is measured;
   the model is re-estimated (warm start). If the model's r_t marginal moved by at most sqrt(2/pi) sigma_t n_{r_t},
   the budget is annealed: sigma_{t+1} = sigma_t / 2, eps_{t+1} = 2 eps_t.
3. *Sampling*: `MarkovRandomField.synthetic_data` of the final estimate.

The rounds' zCDP is fixed in total (alpha and 1 - alpha of what the initialisation leaves) while each round's share
is chosen adaptively (budget annealing): a privacy filter, sound by fully adaptive composition of zCDP (Feldman &
Zrnic 2021's Renyi filter, at every order). `Budget` enforces the totals the ledger states.
"""

from __future__ import annotations

import io
import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from dpvae.methods.marginals.match3 import Clique, histogram
from dpvae.methods.marginals.mst import exponential_mechanism, l1_error
from dpvae.privacy import canaries

ALPHA = 0.9  # the paper's share of each round's zCDP spent on the measurement
#: a round takes all that is left when no more than this many rounds' worth remains (the paper: 2)
LAST_ROUND_MARGIN = 2.0


@dataclass(frozen=True)
class Plan:
    """AIM's budget on d attributes for T rounds at total zCDP rho: the initialisation's sigma0 (d 1-way marginals)
    and what the rounds may spend on measurements (`gaussian`) and selections (`selection`)."""

    rho: float
    d: int
    rounds: int

    @property
    def sigma0(self) -> float:
        return math.sqrt(self.rounds / (2 * ALPHA * self.rho))

    @property
    def epsilon0(self) -> float:
        return math.sqrt(8 * (1 - ALPHA) * self.rho / self.rounds)

    @property
    def initial(self) -> float:
        return self.d / (2 * self.sigma0**2)

    @property
    def gaussian(self) -> float:
        return ALPHA * (self.rho - self.initial)

    @property
    def selection(self) -> float:
        return (1 - ALPHA) * (self.rho - self.initial)


@dataclass
class Budget:
    """The rounds' privacy filter: spends never exceed the plan's totals (`spend` refuses), the last round takes
    what is left, rounded down."""

    plan: Plan
    gaussian: float = 0.0
    selection: float = 0.0
    rounds: list[tuple[float, float]] = field(default_factory=list)  # (sigma_t, eps_t) of every round

    def next_round(self, sigma: float, epsilon: float) -> tuple[float, float, bool]:
        """(sigma_t, eps_t, last) for a round wanting (sigma, epsilon)."""
        left_g, left_s = self.plan.gaussian - self.gaussian, self.plan.selection - self.selection
        if left_g <= LAST_ROUND_MARGIN / (2 * sigma**2) or left_s <= LAST_ROUND_MARGIN * epsilon**2 / 8:  # either part
            sigma, epsilon = 1 / math.sqrt(2 * left_g * (1 - 1e-12)), math.sqrt(8 * left_s * (1 - 1e-12))
            return sigma, epsilon, True
        return sigma, epsilon, False

    def spend(self, sigma: float, epsilon: float) -> None:
        gaussian, selection = self.gaussian + 1 / (2 * sigma**2), self.selection + epsilon**2 / 8
        if gaussian > self.plan.gaussian or selection > self.plan.selection:
            raise RuntimeError(f"AIM round (sigma {sigma}, eps {epsilon}) would exceed the planned zCDP")
        self.gaussian, self.selection = gaussian, selection
        self.rounds.append((sigma, epsilon))


def workload_candidates(d: int, degree: int) -> dict[Clique, float]:
    """W+ with weights: every non-empty subset r of a workload marginal s (all `degree`-way ones), w_r = sum |r ∩ s|."""
    workload = list(itertools.combinations(range(d), min(degree, d)))
    closure = sorted({r for s in workload for k in range(1, len(s) + 1) for r in itertools.combinations(s, k)})
    return {r: float(sum(len(set(r) & set(s)) for s in workload)) for r in closure}


def selection_sensitivity(candidates: dict[Clique, float]) -> float:
    """The exponential mechanism's score sensitivity per unit L1 change: max w_r (a record moves every
    |M_r(D) - M_r(model)|_1 by at most 1 under add/remove-one, 2 under replace-one: the ledger's factor)."""
    return max(candidates.values())


def selection_scores(codes, sizes, weighted: dict[Clique, float], marginal_of, bias: float) -> np.ndarray:
    """w_r (|M_r(D) - M_r(model)|_1 - bias n_r) of every candidate r (`marginal_of(r)`: the released model's)."""
    return np.array(
        [
            w * (l1_error(histogram(codes, r, sizes), marginal_of(r)) - bias * int(np.prod([sizes[a] for a in r])))
            for r, w in weighted.items()
        ]
    )


def model_size(sizes: np.ndarray, cliques: list[Clique]) -> float:
    """Megabytes of the junction tree of `cliques` (private-pgm's `hypothetical_model_size`)."""
    from mbi import Domain
    from mbi.junction_tree import hypothetical_model_size

    return float(hypothetical_model_size(Domain(range(len(sizes)), [int(s) for s in sizes]), cliques))


def _gaussian(codes, sizes, clique, sigma, rng):
    from mbi import LinearMeasurement

    noise = lambda shape, std: std * rng.standard_normal(shape)  # noqa: E731
    y = canaries.release(histogram(codes, clique, sizes), sigma, noise, sensitivity=1.0, name="aim")
    return LinearMeasurement(y, clique, stddev=sigma)


def fit(
    codes: np.ndarray,
    sizes: np.ndarray,
    plan: Plan,
    degree: int,
    max_size: float,
    round_iterations: int,
    iterations: int,
    rng: np.random.Generator,
    progress=None,
    checkpoint=None,
):
    """AIM's rounds on the codes; returns (the final private-pgm model, the budget's record of its rounds).
    `checkpoint` (a `Checkpoint`): resume from the state it holds and save one after a round when it is due, so
    that a killed run ends with the bytes of an uninterrupted one."""
    from mbi import Domain
    from mbi.estimation import MirrorDescent

    d = codes.shape[1]
    domain = Domain(range(d), [int(s) for s in sizes])
    candidates = workload_candidates(d, degree)
    sensitivity = selection_sensitivity(candidates)
    state = checkpoint.load() if checkpoint is not None else None
    if state is None:
        measurements = [_gaussian(codes, sizes, (a,), plan.sigma0, rng) for a in range(d)]
        model = MirrorDescent().estimate(domain, measurements, iters=round_iterations)
        budget, sigma, epsilon, done, finished = Budget(plan), plan.sigma0, plan.epsilon0, 0, False
    else:
        model, measurements, budget, sigma, epsilon, done, finished = _resumed(state, plan, rng)
        if progress is not None:
            progress.start_at(done)
    while not finished:
        sigma, epsilon, finished = budget.next_round(sigma, epsilon)
        budget.spend(sigma, epsilon)
        used = plan.initial + budget.gaussian + budget.selection
        cliques = [m.clique for m in measurements]
        allowed = [r for r in candidates if model_size(sizes, cliques + [r]) <= used / plan.rho * max_size]
        allowed = allowed or [r for r in candidates if len(r) == 1]  # already in the model: its size stays
        bias = math.sqrt(2 / math.pi) * sigma
        scores = selection_scores(
            codes, sizes, {r: candidates[r] for r in allowed}, lambda r: _marginal(model, r), bias
        )
        r = allowed[exponential_mechanism(scores, epsilon, sensitivity, rng)]
        measurements.append(_gaussian(codes, sizes, r, sigma, rng))
        before = _marginal(model, r)
        model = MirrorDescent().estimate(domain, measurements, iters=round_iterations, warm_start=model)
        if progress is not None:
            progress.advance()
        if not finished and l1_error(_marginal(model, r), before) <= bias * domain.size(r):
            sigma, epsilon = sigma / 2, epsilon * 2
        done += 1
        # when due, and after the last round: the final estimate (`iterations`) is one call, minutes at paper scale
        if checkpoint is not None and (finished or checkpoint.due(done - 1)):
            checkpoint.save(_round_state(model, measurements, budget, sigma, epsilon, done, finished, rng))
    model = MirrorDescent().estimate(domain, measurements, iters=iterations, warm_start=model)
    return model, budget


def _round_state(
    model, measurements, budget: Budget, sigma: float, epsilon: float, done: int, finished: bool, rng
) -> dict:
    """What decides the rest of a fit after `done` rounds: the model (the next estimate's warm start), the
    measurements, the budget spent, the next round's (sigma, eps), whether the rounds are over (only the final
    estimate left) and the generator's state."""
    import mbi

    from dpvae.methods.checkpoint import rng_state

    pytree = io.BytesIO()
    mbi.save((model, measurements), pytree)  # the arrays exactly: the warm start and every later draw are the same
    spent = {"gaussian": budget.gaussian, "selection": budget.selection, "rounds": budget.rounds}
    return {
        "step": done,
        "mbi": pytree.getvalue(),
        "budget": spent,
        "next": (sigma, epsilon),
        "finished": finished,
        "rng": rng_state(rng),
    }


def _resumed(state: dict, plan: Plan, rng):
    """(model, measurements, budget, sigma, eps, rounds done, finished) from `_round_state`'s dict; `rng` restored."""
    import mbi

    from dpvae.methods.checkpoint import restore_rng

    model, measurements = mbi.load(io.BytesIO(state["mbi"]))
    spent = state["budget"]
    budget = Budget(plan, spent["gaussian"], spent["selection"], [tuple(r) for r in spent["rounds"]])
    restore_rng(state["rng"], rng)
    sigma, epsilon = state["next"]
    return model, list(measurements), budget, sigma, epsilon, state["step"], state["finished"]


def _marginal(model, clique: Clique) -> np.ndarray:
    """The model's marginal on `clique` (flattened, C order): variable elimination in numpy on its log-potentials
    (mbi's `project` compiles a jax program per clique, minutes per round for ~100 candidates)."""
    factors = [
        (tuple(model.potentials[c].domain.attributes), np.asarray(model.potentials[c].values, dtype=np.float64))
        for c in model.potentials.cliques
    ]
    sizes = dict(zip(model.domain.attributes, model.domain.shape))
    return variable_elimination(factors, sizes, tuple(clique), float(model.total)).ravel()


def _aligned(attrs: tuple, values: np.ndarray, axes: tuple) -> np.ndarray:
    """`values` over `attrs` broadcast to the axis order `axes` (a superset)."""
    order = sorted(range(len(attrs)), key=lambda i: axes.index(attrs[i]))
    moved = np.transpose(values, order)
    return moved.reshape([values.shape[attrs.index(a)] if a in attrs else 1 for a in axes])


def variable_elimination(factors: list, sizes: dict, target: tuple, total: float) -> np.ndarray:
    """The marginal on `target` of the distribution proportional to exp(sum of the log-factors [(attrs, values)]),
    scaled to `total`: the other attributes eliminated greedily (smallest joint first), in log space."""
    factors = list(factors)
    hidden = sorted({a for attrs, _ in factors for a in attrs} - set(target))
    while hidden:

        def cost(z):
            return math.prod(sizes[a] for a in {a for attrs, _ in factors if z in attrs for a in attrs})

        z = min(hidden, key=lambda z: (cost(z), z))
        hidden.remove(z)
        touching = [f for f in factors if z in f[0]]
        factors = [f for f in factors if z not in f[0]]
        axes = tuple(sorted({a for attrs, _ in touching for a in attrs}))
        joint = sum(_aligned(attrs, values, axes) for attrs, values in touching)
        joint = (
            np.logaddexp.reduce(joint, axis=axes.index(z))
            if joint.shape[axes.index(z)] > 1
            else joint.squeeze(axes.index(z))
        )
        factors.append((tuple(a for a in axes if a != z), np.broadcast_to(joint, [sizes[a] for a in axes if a != z])))
    log = np.zeros([sizes[a] for a in target])
    for attrs, values in factors:
        log = log + _aligned(attrs, values, target)
    log = np.broadcast_to(log, [sizes[a] for a in target])
    p = np.exp(log - log.max())
    return total * p / p.sum()
