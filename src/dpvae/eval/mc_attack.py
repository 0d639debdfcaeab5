"""The Monte-Carlo membership-inference attack of Hilprecht, Härterich & Bernau (2019), black-box.

The attacker draws `n_synthetic` records from the trained model and scores each target x by the fraction of
them within distance r of x, f(x) = (1/n) Σ_i 1[d(x, g_i) ≤ r] (their Eq. 3); r is the median over all
targets of the distance to the nearest synthetic record (the median heuristic, their Eq. 4); d is the
Euclidean distance on flattened records, or on the first `pca_components` principal components fitted to
the synthetic records (Hilprecht's PCA distance; the attacker sees only synthetic data). High score =
"member". Written here rather than taken from `domias` (whose `baselines.MC` is the same formula): domias
keeps a float64 [targets × synthetic] matrix (1.6 GB at 2,000 × 100,000) and loops in Python, and pulls in
geomloss and tensorboardX; this version is chunked and checked against a brute-force loop in the tests.
Device: the synthetic records come from the method's `sample` (on the run's device, CPU-seeded), the
distances are computed on the run's device (float64; `dpvae.eval.membership`), the PCA on the CPU.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from dpvae.eval.base import EvalContext, Rows
from dpvae.eval.membership import (
    AttackOptions,
    attack_rows,
    attack_sizes,
    count_within,
    nearest_distances,
    targets,
)
from dpvae.eval.registry import register_metric
from dpvae.params import param

NAME = "mia_mc"


@dataclass(frozen=True)
class MCAttackOptions(AttackOptions):
    n_synthetic: int = param(
        20000,
        "generated samples the attack counts neighbours in ([choice] A-L5: the paper's 10,000-100,000; 20,000 keeps "
        "the CPU evaluation feasible)",
        minimum=1,
    )
    distance: Literal["euclidean", "pca"] = param("euclidean", "distance between images")
    pca_components: int = param(
        40, "principal components of the 'pca' distance (fitted on the synthetic data)", minimum=1
    )
    radius: Literal["median"] = param("median", "neighbourhood radius heuristic")


def mc_scores(
    targets_x: np.ndarray, synthetic: np.ndarray, device: str = "cpu"
) -> tuple[np.ndarray, float, np.ndarray]:
    """Hilprecht's MC scores of flattened targets [T, D] against synthetic records [S, D]: (scores, radius,
    nearest-synthetic distances), radius by the median heuristic; distances on `device`."""
    nearest = nearest_distances(targets_x, synthetic, device=device)
    radius = float(np.median(nearest))
    return count_within(targets_x, synthetic, radius, device=device) / len(synthetic), radius, nearest


@register_metric(
    "mc_attack",
    needs=("model", "data"),
    options=MCAttackOptions,
    check=attack_sizes,
    runtime=60,
    gpu=True,
    description="Monte-Carlo membership inference (Hilprecht et al. 2019): trade-off curve, AUC, "
    "TPR at low FPR, empirical epsilon lower bounds",
)
def mc_attack(ctx: EvalContext) -> Rows:
    from dpvae.methods.registry import get_method

    options: MCAttackOptions = ctx.options
    chosen = targets(ctx)
    drawn = get_method(ctx.run.spec.method).sample(ctx.run, options.n_synthetic)["x"]
    synthetic = drawn.reshape(len(drawn), -1)  # float32; chunks go to float64
    members = ctx.data.train.x[chosen.members].reshape(len(chosen.members), -1)
    nonmembers = ctx.data.test.x[chosen.nonmembers].reshape(len(chosen.nonmembers), -1)
    queries = np.concatenate([members, nonmembers]).astype(np.float64)
    if options.distance == "pca":
        from sklearn.decomposition import PCA

        pca = PCA(n_components=min(options.pca_components, *synthetic.shape), random_state=0).fit(synthetic)
        synthetic, queries = pca.transform(synthetic), pca.transform(queries)
    scores, radius, nearest = mc_scores(queries, synthetic, ctx.run.device)
    k = len(members)
    rows = attack_rows(
        ctx,
        NAME,
        scores[:k],
        scores[k:],
        nearest_members=nearest[:k],
        nearest_nonmembers=nearest[k:],
        radius=np.float64(radius),
    )
    return rows + [
        {"metric": f"{NAME}_radius", "value": radius},
        {"metric": f"{NAME}_zero_score_share", "value": float(np.mean(scores == 0))},
    ]
