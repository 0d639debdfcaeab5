"""DP-VAE (P3GM's `--alg dp-vae`): the MLP VAE trained end to end with DP-SGD; its ledger is the SGD's.

Paper accounting = the P3GM code's (add/remove-one, Poisson-subsampled Gaussian RDP, improved conversion);
sound = replace-one (Mironov 2017, Prop. 11; with the code's fixed batches, the fixed-partition bound). `sigma_sgd: auto` is calibrated to the target; a given σ
whose ε exceeds the target is raised (never lowered) to the calibrated value, noted in the ledger.
"""

from __future__ import annotations

from dpvae.methods.base import Resources, RunContext
from dpvae.methods.mlp_common import DPVAEParams, MLPVAEMethod
from dpvae.methods.registry import register_method
from dpvae.params import MethodParams
from dpvae.privacy.ledger import Accounting, Ledger, Mechanism

NOTES = ("paper: the P3GM code's accountant for DP-SGD (add/remove-one, TF-Privacy orders, improved conversion); "
         "sound: replace-one via Mironov 2017 Prop. 11 (Poisson sampling) or the fixed-partition bound (the code's "
         "fixed batches)")


def dpsgd_ledger(record: Mechanism, delta: float, target: float | None, notes: str = NOTES,
                 fixed_batches: bool = False) -> Ledger:
    """The engine's record under the paper's accountant and soundly (replace-one moves a clipped sum by 2C)."""
    paper = Accounting((record,), delta, adjacency="add/remove-one", accountant="rdp", conversion="improved")
    sound_record = record if not fixed_batches else Mechanism(
        record.name, record.noise_multiplier / 2, record.sample_rate, record.steps, 2 * record.sensitivity,
        sampling="fixed-partition")
    sound = Accounting((sound_record,), delta, adjacency="replace-one", accountant="rdp", conversion="improved")
    return Ledger(paper, sound, target, notes)


@register_method
class DPVAE(MLPVAEMethod):
    name = "dp-vae"
    paper = "p3gm"
    private = True
    description = "MLP VAE trained end to end with DP-SGD"
    Params = DPVAEParams
    RESOURCES = Resources(threads=2, mem_mb=3000, runtime=30)

    def resources(self, params: MethodParams, dataset: str) -> Resources:
        return Resources(threads=2, mem_mb=3000, runtime=90 if "mnist" in dataset else 30)

    def train(self, ctx: RunContext) -> Ledger | None:
        from dpvae.methods.mlp.vae import schedule_of, train_vae
        from dpvae.methods.p3gm import paper_epsilon, solve_sgd_sigma
        from dpvae.privacy.budget import StepBudget

        p: DPVAEParams = ctx.params
        schedule = schedule_of(ctx)
        if not ctx.spec["private"]:
            train_vae(ctx, clip=p.clip, sigma=0.0 if p.sigma_sgd == "auto" else float(p.sigma_sgd))
            return None

        def record(sigma: float, steps: int = schedule.steps) -> Mechanism:
            return Mechanism("dpsgd", sigma, schedule.sample_rate, steps, p.clip)

        def epsilon_of(sigma: float) -> float:   # the headline accounting only: calibration stays cheap
            return paper_epsilon([record(sigma)], ctx.delta)

        given = 2.0**-8 if p.sigma_sgd == "auto" else float(p.sigma_sgd)
        sigma = solve_sgd_sigma(epsilon_of, ctx.epsilon, given)
        notes = NOTES
        if p.sigma_sgd == "auto":
            notes += f"; sigma_sgd calibrated to the target: {sigma:.6g}"
        elif sigma > given:
            notes += (f"; sigma_sgd raised from the configured {given:g} to {sigma:.6g} (the configured value gives "
                      f"epsilon {epsilon_of(given):.4f} > target {ctx.epsilon:g})")
        budget = StepBudget(lambda steps: paper_epsilon([record(sigma, steps)], ctx.delta), ctx.epsilon)
        result = train_vae(ctx, clip=p.clip, sigma=sigma, budget=budget)
        (spent,) = result.engine.mechanisms()   # the engine's own record: sigma, q, steps run, C
        return dpsgd_ledger(spent, ctx.delta, ctx.epsilon, notes, fixed_batches=p.batching == "code")
