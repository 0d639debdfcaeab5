"""What the membership-inference metrics share: attacked targets, white-box access and the summary rows.

Targets: `n_members` records of the run's training split and `n_nonmembers` of the test split, drawn with a
stream that depends only on the dataset and the seed, so that every model of one seed is attacked on the
same records (paired comparisons). A planted outlier (meta `outlier_index`) is attacked as the paper reads
("1,000 members sampled from the training set": it is in only if drawn, `outlier: random`), or always
(`include`) or never (`exclude`).

Rows of an attack called `name`: `<name>_auc`, `<name>_tpr_at_1pct_fpr`, `<name>_tpr_at_0.1pct_fpr`,
`<name>_eps_lower_max`, `<name>_eps_lower_heldout` (see `dpvae.privacy.audit`), and
`<name>.npz` beside the metric's JSON with the trade-off curve (alpha, beta) and the scores.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from dpvae.data.declared import Facts
from dpvae.errors import NotBuiltError
from dpvae.eval.base import EvalContext, Rows
from dpvae.files import atomic_write
from dpvae.params import MetricOptions, param


@dataclass(frozen=True)
class AttackOptions(MetricOptions):
    n_members: int = param(1000, "attacked members drawn from the training set", minimum=1)
    n_nonmembers: int = param(1000, "attacked non-members drawn from the test set", minimum=1)
    outlier: Literal["random", "include", "exclude"] = param(
        "random", "the planted outlier among the members: only if drawn (the paper), always, or never"
    )
    confidence: float = param(
        0.95,
        "confidence of the Clopper-Pearson bounds behind the epsilon lower bounds",
        exclusive_minimum=0,
        maximum=0.999999,
    )


def attack_sizes(options: AttackOptions, facts: Facts, n_synthetic: int) -> list[tuple[str, str]]:
    """Members come from the run's training records, non-members from the test split."""
    problems = []
    if options.n_members > facts.n_train:
        problems.append(("n_members", f"{options.n_members} members but the run has {facts.n_train} training records"))
    if options.n_nonmembers > facts.n_test:
        problems.append(("n_nonmembers", f"{options.n_nonmembers} non-members but the test split has {facts.n_test}"))
    return problems


@dataclass(frozen=True)
class Targets:
    """Attacked records: member rows of the training split, non-member rows of the test split."""

    members: np.ndarray
    nonmembers: np.ndarray
    outlier: int | None  # training row of the planted outlier, if the dataset has one


def outlier_row(data: Any) -> int | None:
    """The training row of the dataset's planted outlier (meta `outlier_index`), or None."""
    index = data.meta.get("outlier_index")
    return None if index is None else int(index)


def targets(ctx: EvalContext) -> Targets:
    """The attacked records of this run (the same for every variant of a seed; see the module docstring)."""
    options, data = ctx.options, ctx.data
    n_train, n_test = len(data.train.y), len(data.test.y)
    outlier = outlier_row(data)
    if options.n_members > n_train or options.n_nonmembers > n_test:
        raise ValueError(
            f"evaluation options ask for {options.n_members} members / {options.n_nonmembers} "
            f"non-members but the run has {n_train} training / {n_test} test records"
        )
    seed = [int(ctx.run.spec.seed), zlib.crc32(f"{ctx.run.spec.dataset}|mia-targets".encode())]
    rng = np.random.default_rng(seed)
    pool = np.arange(n_train)
    if outlier is not None and options.outlier != "random":
        pool = pool[pool != outlier]
    take = options.n_members - int(outlier is not None and options.outlier == "include")
    members = rng.choice(pool, size=take, replace=False)
    if outlier is not None and options.outlier == "include":
        members = np.r_[members, outlier]
    nonmembers = rng.choice(n_test, size=options.n_nonmembers, replace=False)
    return Targets(np.sort(members), np.sort(nonmembers), outlier)


def whitebox(ctx: EvalContext, capability: str) -> Any:
    """The run's method if it offers `capability` (e.g. `elbo`, `reconstruct`), else a clear error."""
    from dpvae.methods.registry import get_method

    method = get_method(ctx.run.spec.method)
    if not callable(getattr(method, capability, None)):
        raise NotBuiltError(
            f"method '{method.name}' offers no '{capability}(ctx, x, ...)'; the white-box "
            "metrics need it (see dpvae.methods.lvae for an example)"
        )
    return method


def attack_rows(
    ctx: EvalContext, name: str, scores_in: np.ndarray, scores_out: np.ndarray, **extra_arrays: np.ndarray
) -> Rows:
    """The summary rows of one attack and its `<name>.npz` artifact (curve + scores)."""
    from dpvae.privacy import audit

    rng = np.random.default_rng(zlib.crc32(f"{name}|heldout".encode()))
    stats = audit.summary(scores_in, scores_out, ctx.run.spec.delta, ctx.options.confidence, rng)
    curve = audit.tradeoff_curve(scores_in, scores_out)
    path = ctx.out_dir / f"{name}.npz"
    atomic_write(
        path,
        lambda tmp: np.savez_compressed(
            tmp, alpha=curve.alpha, beta=curve.beta, members=scores_in, nonmembers=scores_out, **extra_arrays
        ),
    )
    return [{"metric": f"{name}_{key}", "value": float(value)} for key, value in stats.items()]


def nearest_distances(queries: np.ndarray, pool: np.ndarray, chunk: int = 2048, device: str = "cpu") -> np.ndarray:
    """Euclidean distance from each query row to its nearest pool row ([Q, D] × [P, D] → [Q]), chunked, on
    `device` (see `_reduce_sq_distances`)."""
    return np.sqrt(np.maximum(_reduce_sq_distances(queries, pool, chunk, "min", device=device), 0))


def _reduce_sq_distances(
    queries: np.ndarray, pool: np.ndarray, chunk: int, how: str, radius_sq: float = 0.0, device: str = "cpu"
) -> np.ndarray:
    """Per query: the min squared distance to the pool, or the count of pool rows within sqrt(radius_sq).

    float64 throughout: NumPy on the CPU, torch on another device (`_reduce_on_device`, the same formula, equal
    up to float rounding: only a pool row at the radius itself could count differently)."""
    if not str(device).startswith("cpu"):
        return _reduce_on_device(queries, pool, chunk, how, radius_sq, device)
    q = np.ascontiguousarray(queries, dtype=np.float64)
    q_sq = (q**2).sum(1)
    out = np.full(len(q), np.inf) if how == "min" else np.zeros(len(q), dtype=np.int64)
    for start in range(0, len(pool), chunk):
        block = np.ascontiguousarray(pool[start : start + chunk], dtype=np.float64)
        d = q_sq[:, None] + (block**2).sum(1)[None, :] - 2 * (q @ block.T)  # [Q, chunk], float64
        if how == "min":
            out = np.minimum(out, d.min(1))
        else:
            out += (d <= radius_sq).sum(1)
    return out


def _reduce_on_device(
    queries: np.ndarray, pool: np.ndarray, chunk: int, how: str, radius_sq: float, device: str
) -> np.ndarray:
    """`_reduce_sq_distances` in torch float64 on `device`: the pool is copied there once, one result back."""
    import torch

    q = torch.as_tensor(np.ascontiguousarray(queries), device=device).double()
    rows = torch.as_tensor(np.ascontiguousarray(pool), device=device)
    q_sq = (q**2).sum(1)
    out = (
        torch.full((len(q),), torch.inf, dtype=torch.float64, device=device)
        if how == "min"
        else torch.zeros(len(q), dtype=torch.int64, device=device)
    )
    for start in range(0, len(rows), chunk):
        block = rows[start : start + chunk].double()
        d = q_sq[:, None] + (block**2).sum(1)[None, :] - 2 * (q @ block.T)  # [Q, chunk], float64
        out = torch.minimum(out, d.min(1).values) if how == "min" else out + (d <= radius_sq).sum(1)
    return out.cpu().numpy()


def count_within(
    queries: np.ndarray, pool: np.ndarray, radius: float, chunk: int = 2048, device: str = "cpu"
) -> np.ndarray:
    """Number of pool rows within Euclidean distance `radius` of each query ([Q]), on `device`."""
    return _reduce_sq_distances(queries, pool, chunk, "count", radius**2, device)
