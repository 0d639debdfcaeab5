"""DP-GM's accounting: clustering calibrated to its share, one DP-SGD run (parallel composition), total <= target."""

from __future__ import annotations

import pytest

from dpvae.methods.p3gm.accounting import cluster_rate, clustering_mechanisms, dpgm_accounting
from dpvae.methods.p3gm.train import ClusterSchedule
from dpvae.privacy.accounting import solve_noise_multiplier
from dpvae.privacy.ledger import Mechanism
from support.dp_accounting_check import rederive


def test_clustering_share_and_total_budget():
    share = solve_noise_multiplier(
        lambda s: dpgm_accounting(clustering_mechanisms(s, 5), 1e-5).epsilon, 0.1, floor=2.0**-8
    )
    clustering = clustering_mechanisms(share, 5)
    assert dpgm_accounting(clustering, 1e-5).epsilon == pytest.approx(0.1, rel=1e-6)
    assert (clustering[0].steps, clustering[1].steps) == (6, 5)
    q = cluster_rate(200, 10, 43957)

    def sgd(sigma: float) -> Mechanism:
        return Mechanism("dpsgd", sigma, q, 110, 1.0)

    sigma = solve_noise_multiplier(lambda s: dpgm_accounting((*clustering, sgd(s)), 1e-5).epsilon, 1.0, floor=2.0**-8)
    total = dpgm_accounting((*clustering, sgd(sigma)), 1e-5)
    assert total.epsilon <= 1.0 and rederive(total.to_dict()) == pytest.approx(total.epsilon, rel=1e-4)


def test_replace_one_clustering_sensitivities():
    counts, sums = clustering_mechanisms(10.0, 3, replace_one=True)
    assert counts.noise_multiplier == pytest.approx(10 / 2**0.5) and sums.noise_multiplier == 5.0


def test_cluster_schedule_uses_the_shared_rate_and_the_noisy_size():
    schedule = ClusterSchedule(n=50, rate=0.1, steps=7, expected_batch=0.1 * 48.3)
    assert (schedule.sample_rate, schedule.steps, schedule.batch_size) == (0.1, 7, pytest.approx(4.83))
    assert cluster_rate(300, 10, 1000) == 1.0
