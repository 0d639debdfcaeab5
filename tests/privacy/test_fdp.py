"""Trade-off functions: f_{eps,delta}, Gaussian DP, the CLT mu and the PLD curve of DP-SGD's mechanism."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpvae.privacy import fdp
from dpvae.privacy.ledger import Accounting, Mechanism

ALPHA = np.linspace(0, 1, 201)


def test_no_privacy_loss_means_guessing():
    assert np.allclose(fdp.eps_delta_tradeoff(ALPHA, 0.0, 0.0), 1 - ALPHA)
    assert np.allclose(fdp.gaussian_tradeoff(ALPHA, 0.0), 1 - ALPHA)


def test_eps_delta_tradeoff_is_symmetric_convex_and_below_guessing():
    f = fdp.eps_delta_tradeoff(ALPHA, 1.0, 1e-3)
    assert (f <= 1 - ALPHA + 1e-12).all() and (np.diff(f, 2) >= -1e-12).all()
    # symmetric trade-off function: f(f(alpha)) = alpha where f(alpha) > 0
    inner = fdp.eps_delta_tradeoff(f, 1.0, 1e-3)
    assert np.allclose(inner[f > 0.01], ALPHA[f > 0.01], atol=1e-9)


def test_clt_mu_formula():
    assert fdp.clt_mu(0.01, 10000, 1.0) == pytest.approx(0.01 * math.sqrt(10000 * (math.e - 1)))
    assert fdp.clt_mu(0.01, 1, 0.0) == math.inf


def test_the_pld_curve_of_dp_sgd_is_at_least_its_rdp_eps_delta_curve():
    mechanism = Mechanism("dpsgd", 2.0, 0.02, 500)
    delta = 1e-5
    rdp_eps = Accounting((mechanism,), delta).epsilon
    pld_eps = fdp.pld_epsilon([mechanism], delta, 1e-3)
    assert pld_eps <= rdp_eps  # PLD is the tighter accountant
    tight = fdp.pld_tradeoff([mechanism], ALPHA, 1e-3)
    assert (tight >= fdp.eps_delta_tradeoff(ALPHA, rdp_eps, delta) - 1e-9).all()
    assert (tight <= 1 - ALPHA + 1e-9).all()
    assert fdp.pld_tradeoff([Mechanism("none", 1.0, 0.5, 0)], ALPHA) == pytest.approx(1 - ALPHA)
