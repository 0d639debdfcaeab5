"""The audit has power and does not cry wolf: for every DP-SGD engine, an honest run's ε̂ stays below the
claimed ε and a planted bug (noise scaled by 0.1; the last private layer left out of the clipping norm)
drives the 95 % lower bound above it. Small settings (200 canaries, claimed ε = 1): seconds per run."""

from __future__ import annotations

import contextlib

import pytest
import torch

from dpvae.privacy.engine_audit import ENGINES, AuditSetting, run_audit
from support.planted_bugs import PLANTED

# engine -> (sample rate, steps, sub-groups); micro and batch aggregation at about one canary per batch
SMALL = {
    "dpsgd": (0.1, 40, 4),
    "partial": (0.1, 40, 4),
    "termwise": (0.05, 150, 16),
    "micro": (0.01, 250, 4),
    "batch": (0.01, 250, 4),
}


def audit_small(engine: str, bug: str | None = None):
    rate, steps, groups = SMALL[engine]
    setting = AuditSetting(engine, 1.0, rate, steps, canaries=200, records=100, groups=groups)
    torch.set_num_threads(1)
    with PLANTED[bug]() if bug else contextlib.nullcontext():
        return run_audit(setting)


@pytest.mark.parametrize("engine", ENGINES)
def test_an_honest_engine_stays_below_its_claim(engine: str) -> None:
    audit = audit_small(engine)
    assert audit.epsilon_paper == pytest.approx(1.0, rel=1e-6) and audit.epsilon_paper <= 1.0
    assert audit.epsilon_sound >= audit.epsilon_paper * (1 - 1e-9)
    assert audit.result.lower <= audit.result.point <= audit.epsilon_paper  # even the central estimate
    assert audit.result.max_certifiable > 2.5  # while it could show ε̂ > 2.5


@pytest.mark.parametrize("engine", ENGINES)
def test_noise_scaled_by_a_tenth_is_caught(engine: str) -> None:
    audit = audit_small(engine, "noise x0.1")
    assert audit.epsilon_paper <= 1.0 < audit.result.lower


@pytest.mark.parametrize("engine", ENGINES)
def test_a_layer_left_out_of_the_clipping_is_caught(engine: str) -> None:
    audit = audit_small(engine, "unclipped layer")
    assert audit.epsilon_paper <= 1.0 < audit.result.lower


def test_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="engine must be one of"):
        AuditSetting("opacus", 1.0, 0.1, 10)
    with pytest.raises(ValueError, match="sample_rate"):
        AuditSetting("dpsgd", 1.0, 0.0, 10)
