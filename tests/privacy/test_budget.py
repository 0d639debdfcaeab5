"""Step budgets: training refuses to run past its target epsilon."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from dpvae.methods.p3gm.accounting import P3GMSetting
from dpvae.privacy.accounting import INTEGER_ORDERS, epsilon
from dpvae.privacy.budget import StepBudget
from dpvae.privacy.dpsgd import DPSGD
from dpvae.privacy.ledger import Mechanism, PrivacyBudgetExceeded

DELTA = 1e-5


def dpsgd_epsilon(sigma: float, q: float, orders=INTEGER_ORDERS, conversion="classic"):
    return lambda steps: epsilon([Mechanism("dpsgd", sigma, q, steps)], DELTA, conversion, orders)[0]


def test_max_steps_is_the_last_step_within_the_target():
    eps_after = dpsgd_epsilon(1.322, 256 / 60000)  # PriVAE sigma(epsilon = 1) over 2344 steps
    budget = StepBudget(eps_after, 1.0)
    assert eps_after(budget.max_steps) <= 1.0 < eps_after(budget.max_steps + 1)  # no tolerance
    assert budget.max_steps >= 2344  # the paper's 10 epochs fit
    budget.check(budget.max_steps)
    with pytest.raises(PrivacyBudgetExceeded, match="accounted epsilon"):
        budget.check(budget.max_steps + 1)


def test_budget_counts_mechanisms_spent_before_training():
    """P3GM: DP-PCA and DP-EM are spent first; the SGD steps left shrink accordingly (credit, exp.sh)."""

    def eps_after(steps: int) -> float:
        setting = P3GMSetting(n_train=9442, batch_size=100, epochs=steps * 100 / 9442, sgd_sigma=2.1, pca_sigma=10.0)
        return setting.ledger().epsilon

    budget = StepBudget(eps_after, 1.0)
    assert 1417 <= budget.max_steps  # Table IV's 15 epochs = 1,417 steps: 0.999
    without_encoder = StepBudget(dpsgd_epsilon(2.1, 100 / 9442, conversion="improved"), 1.0)
    assert without_encoder.max_steps > budget.max_steps
    with pytest.raises(PrivacyBudgetExceeded):
        StepBudget(eps_after, 0.3)  # the encoding phase alone is above 0.3


def test_engine_refuses_the_step_past_the_budget_and_releases_nothing():
    model = nn.Linear(3, 1)
    budget = StepBudget(dpsgd_epsilon(4.0, 0.5), 2.0)
    assert 2 <= budget.max_steps <= 50
    engine = DPSGD(
        model, max_grad_norm=1.0, noise_multiplier=4.0, sample_rate=0.5, expected_batch_size=4, budget=budget
    )
    x = torch.randn(4, 3)
    for _ in range(budget.max_steps):
        engine.step(model(x).squeeze(1))
    before = model.weight.grad.clone()
    with pytest.raises(PrivacyBudgetExceeded):
        engine.step(model(x).squeeze(1))
    assert engine.steps == budget.max_steps and torch.equal(model.weight.grad, before)
    assert engine.mechanisms()[0].steps == budget.max_steps


@pytest.mark.parametrize("bad", [0.0, -1.0, float("inf")])
def test_invalid_target_is_rejected(bad):
    with pytest.raises(ValueError, match="target_epsilon"):
        StepBudget(lambda steps: 0.0, bad)
