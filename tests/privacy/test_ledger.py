"""Tests of the privacy ledger: JSON round trip, re-derivation with dp-accounting, atomic write, budget guard."""

from __future__ import annotations

import json
import math
from pathlib import Path

import dp_accounting as dpa
import numpy as np
import pytest
from dp_accounting.rdp import RdpAccountant

from dpvae.privacy.accounting import DEFAULT_ORDERS, epsilon
from dpvae.privacy.ledger import Accounting, Ledger, Mechanism, PrivacyBudgetExceeded, check_budget
from dpvae.methods.recipes import P3GMSetting, dp2vae_ledger, p3gm_ledger

CREDIT = P3GMSetting(n_train=9442, batch_size=100, epochs=15, sgd_sigma=2.1, pca_sigma=10.0)


def dp_accounting_curve(mechanisms: list[dict], orders) -> np.ndarray:
    """Add/remove RDP of a ledger's JSON mechanisms, composed by Google's dp-accounting."""
    events = []
    for m in mechanisms:
        gaussian = dpa.GaussianDpEvent(m["noise_multiplier"])
        event = gaussian if m["sample_rate"] == 1 else dpa.PoissonSampledDpEvent(m["sample_rate"], gaussian)
        events.append(dpa.SelfComposedDpEvent(event, m["steps"]))
    accountant = RdpAccountant(orders=list(orders))
    accountant.compose(dpa.ComposedDpEvent(events))
    return accountant.rdp


def rederive(record: dict) -> float:
    """ε of one accounting's JSON, recomputed from its mechanisms with dp-accounting's RDP curves."""
    orders = np.asarray(record["orders"], dtype=float)
    if record["accountant"] == "rdp-order-search":
        orders = np.asarray([record["order"]])
    if record["adjacency"] == "add/remove-one":
        rdp = dp_accounting_curve(record["mechanisms"], orders)
    else:  # replace-one: q = 1 as Gaussians; q < 1 by the weak triangle inequality through D⁻
        full = [m for m in record["mechanisms"] if m["sample_rate"] == 1]
        sampled = [m for m in record["mechanisms"] if m["sample_rate"] < 1]
        rdp = dp_accounting_curve(full, orders) + (orders - 0.5) / (orders - 1) * dp_accounting_curve(
            sampled, 2 * orders
        ) + dp_accounting_curve(sampled, 2 * orders - 1)
    log_delta = math.log(record["delta"])
    if record["conversion"] == "classic":
        eps = rdp - log_delta / (orders - 1)
    else:
        eps = rdp + np.log1p(-1 / orders) - (log_delta + np.log(orders)) / (orders - 1)
    return float(np.min(eps))


def test_ledger_json_is_rederivable_with_dp_accounting(tmp_path: Path) -> None:
    path = p3gm_ledger(CREDIT, target_epsilon=1.0, notes="credit, exp.sh").write(tmp_path / "privacy.json")
    data = json.loads(path.read_text())
    for key in ("epsilon", "delta", "accountant", "conversion", "adjacency", "mechanisms", "paper", "strict"):
        assert key in data
    assert set(data["mechanisms"][0]) == {"name", "noise_multiplier", "sample_rate", "steps", "sensitivity"}
    assert data["adjacency"] == "add/remove-one" and data["strict"]["adjacency"] == "replace-one"
    assert rederive(data) == pytest.approx(data["epsilon"], rel=1e-6)
    assert rederive(data["strict"]) == pytest.approx(data["strict"]["epsilon"], rel=1e-6)
    assert data["epsilon"] == pytest.approx(0.976, rel=0.01)


def test_order_search_ledger_is_rederivable_with_dp_accounting() -> None:
    """Fractional optimal orders. (Below α ≈ 3 dp-accounting bounds the alternating series by its
    absolute values while opacus/pyvacy keep the signs, so e.g. σ = 0.5 would agree only to 0.1-3 %.)"""
    data = dp2vae_ledger(1.0, num_subsets=1000, steps=20000, batch_size=32).to_dict()
    assert data["accountant"] == "rdp-order-search" and not float(data["order"]).is_integer()
    assert rederive(data) == pytest.approx(data["epsilon"], rel=1e-6)
    assert rederive(data["strict"]) == pytest.approx(data["strict"]["epsilon"], rel=1e-6)


def test_round_trip_through_dict_and_file(tmp_path: Path) -> None:
    ledger = p3gm_ledger(CREDIT, target_epsilon=1.0, notes="note")
    assert Ledger.from_dict(ledger.to_dict()) == ledger
    assert Ledger.read(ledger.write(tmp_path / "nested" / "privacy.json")) == ledger
    headline_only = Ledger(ledger.paper)
    data = headline_only.to_dict()
    assert "strict" not in data and "paper" not in data and data["target_epsilon"] is None
    assert Ledger.from_dict(data) == headline_only


def test_accounting_computes_epsilon_and_rejects_a_tampered_one() -> None:
    mechanisms = (Mechanism("sgd", 1.1, 0.01, 1000, sensitivity=1.0),)
    accounting = Accounting(mechanisms, 1e-5)
    assert (accounting.epsilon, accounting.order) == epsilon(mechanisms, 1e-5)
    with pytest.raises(TypeError):
        Accounting(mechanisms, 1e-5, epsilon=0.1)  # type: ignore[call-arg]
    data = accounting.to_dict()
    data["epsilon"] *= 0.9
    with pytest.raises(ValueError, match="does not match the recomputed"):
        Accounting.from_dict(data)


def test_ledger_rejects_inconsistent_or_unknown_content() -> None:
    ledger = p3gm_ledger(CREDIT)
    stale = ledger.to_dict()
    stale["mechanisms"][2]["noise_multiplier"] = 3.0
    with pytest.raises(ValueError, match="does not match the recomputed"):
        Ledger.from_dict(stale)
    other = Accounting(ledger.paper.mechanisms[:2], ledger.delta)  # a valid accounting, but not the paper's
    with pytest.raises(ValueError, match="differs from the 'paper' sub-object"):
        Ledger.from_dict({**ledger.to_dict(), **other.to_dict()})
    with pytest.raises(ValueError, match="unknown ledger keys"):
        Ledger.from_dict({**ledger.to_dict(), "eps": 1.0})
    with pytest.raises(ValueError, match="mechanism keys"):
        Mechanism.from_dict({"name": "x", "noise_multiplier": 1.0})


def test_write_is_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "privacy.json"
    first = p3gm_ledger(CREDIT, notes="first")
    first.write(path)
    before = path.read_text()

    def broken_dump(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(json, "dump", broken_dump)
    with pytest.raises(OSError, match="disk full"):
        p3gm_ledger(CREDIT, notes="second").write(path)
    assert path.read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["privacy.json"]


def test_budget_guard() -> None:
    ledger = p3gm_ledger(P3GMSetting(n_train=43957, batch_size=200, epochs=5, sgd_sigma=1.4, pca_sigma=5.0))
    assert ledger.epsilon > 1.0  # Adult's exp.sh setting: 1.009
    with pytest.raises(PrivacyBudgetExceeded, match=r"accounted epsilon 1\.009.*target epsilon 1\b") as error:
        check_budget(ledger, 1.0)
    assert error.value.achieved_epsilon == ledger.epsilon and error.value.target_epsilon == 1.0
    assert check_budget(ledger, 1.0, rel_tol=0.01) == ledger.epsilon
    assert check_budget(ledger.paper, 1.01) == ledger.epsilon
    mechanisms = list(ledger.paper.mechanisms)
    assert check_budget(mechanisms, 1.01, delta=1e-5) == pytest.approx(ledger.epsilon)
    with pytest.raises(PrivacyBudgetExceeded):
        check_budget(mechanisms, 0.5, delta=1e-5)
    with pytest.raises(ValueError, match="delta"):
        check_budget(mechanisms, 1.0)
    with pytest.raises(ValueError, match="delta"):
        check_budget(ledger, 1.0, delta=1e-6)
    with pytest.raises(ValueError, match="conversion"):
        check_budget(ledger, 1.0, conversion="classic")


def test_bad_input_names_the_argument() -> None:
    mechanism = (Mechanism("m", 1.0),)
    with pytest.raises(ValueError, match="adjacency"):
        Accounting(mechanism, 1e-5, adjacency="swap")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="conversion"):
        Accounting(mechanism, 1e-5, conversion="tight")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="mechanisms"):
        Accounting((), 1e-5)
    with pytest.raises(ValueError, match="target_epsilon"):
        Ledger(Accounting(mechanism, 1e-5), target_epsilon=0.0)
    with pytest.raises(ValueError, match="sample_rate"):
        Mechanism("m", 1.0, sample_rate=1.5)


def test_default_orders_are_tf_privacy_list() -> None:
    assert DEFAULT_ORDERS[:10] == (1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 3.0, 3.5, 4.0, 4.5)
    assert DEFAULT_ORDERS[10:-3] == tuple(float(a) for a in range(5, 64))
    assert DEFAULT_ORDERS[-3:] == (128.0, 256.0, 512.0)
