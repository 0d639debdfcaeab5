"""The "pure" accountant: sequential composition of pure ε-DP (Laplace / exponential) mechanisms, δ = 0."""

from __future__ import annotations

import math

import pytest

from dpvae.privacy.accounting import pure_epsilon
from dpvae.privacy.ledger import Accounting, Mechanism
from support.dp_accounting_check import pure_rederive


def test_pure_epsilon_adds_steps_over_multipliers():
    mechanisms = (Mechanism("laplace", 4.0, steps=2), Mechanism("exponential", 10.0, steps=5))
    assert pure_epsilon(mechanisms) == pytest.approx(2 / 4 + 5 / 10)
    assert Accounting(mechanisms, 1e-5, accountant="pure").epsilon == pytest.approx(1.0)
    assert pure_epsilon((Mechanism("no noise", 0.0, steps=1),)) == math.inf


def test_pure_accountant_refuses_subsampling():
    with pytest.raises(ValueError, match="does not amplify"):
        pure_epsilon((Mechanism("laplace", 4.0, sample_rate=0.5, steps=1),))


def test_dp_accounting_rederives_the_pure_sum():
    mechanisms = [{"noise_multiplier": 28.0, "steps": 14}, {"noise_multiplier": 26.0, "steps": 13}]
    assert pure_rederive(mechanisms) == pytest.approx(1.0, rel=1e-6)
