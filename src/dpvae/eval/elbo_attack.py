"""White-box membership inference on the per-record ELBO: what an attacker holding the model gets.

A VAE fits its training records better than unseen ones, so the evidence lower bound log p(x) ≥ ELBO(x)
(reconstruction term averaged over `elbo_samples` posterior draws, minus the KL term) is higher for members:
score = ELBO(x), high = "member" (the loss-threshold attack of Yeom et al. 2018, the white-box
"reconstruction" attack family of Hilprecht et al. 2019). Needs a method offering `elbo(ctx, x, samples,
stream)`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpvae.eval.base import EvalContext, Rows
from dpvae.eval.membership import AttackOptions, attack_rows, attack_sizes, targets, whitebox
from dpvae.eval.registry import register_metric
from dpvae.params import param

NAME = "mia_elbo"


@dataclass(frozen=True)
class ELBOAttackOptions(AttackOptions):
    elbo_samples: int = param(8, "posterior draws averaged in each record's ELBO ([choice])", minimum=1)


@register_metric(
    "elbo_attack",
    needs=("model", "data"),
    options=ELBOAttackOptions,
    check=attack_sizes,
    description="white-box membership inference on the per-record ELBO: trade-off curve, AUC, "
    "TPR at low FPR, empirical epsilon lower bounds",
)
def elbo_attack(ctx: EvalContext) -> Rows:
    method = whitebox(ctx, "elbo")
    chosen = targets(ctx)
    members = method.elbo(ctx.run, ctx.data.train.x[chosen.members], ctx.options.elbo_samples, "elbo-members")
    nonmembers = method.elbo(ctx.run, ctx.data.test.x[chosen.nonmembers], ctx.options.elbo_samples, "elbo-nonmembers")
    rows = attack_rows(ctx, NAME, members, nonmembers)
    return rows + [{"metric": f"{NAME}_mean_gap", "value": float(np.mean(members) - np.mean(nonmembers))}]
