"""Tests of the privacy ledger: JSON round trip, re-derivation with dp-accounting, atomic write, budget guard."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from dpvae.methods.dp2vae.accounting import dp2vae_ledger
from dpvae.methods.p3gm.accounting import P3GMSetting
from dpvae.methods.privae.accounting import privae_ledger
from dpvae.privacy.accounting import DEFAULT_ORDERS, epsilon
from dpvae.privacy.ledger import Accounting, Ledger, Mechanism, PrivacyBudgetExceeded, check_budget
from support.dp_accounting_check import rederive

CREDIT = P3GMSetting(n_train=9442, batch_size=100, epochs=15, sgd_sigma=2.1, pca_sigma=10.0)  # DP centring mean


def test_ledger_json_is_rederivable_with_dp_accounting(tmp_path: Path) -> None:
    path = CREDIT.ledger(target_epsilon=1.0, notes="credit, exp.sh").write(tmp_path / "privacy.json")
    data = json.loads(path.read_text())
    for key in (
        "epsilon",
        "delta",
        "accountant",
        "conversion",
        "adjacency",
        "mechanisms",
        "headline",
        "paper",
        "sound",
        "not_dp",
    ):
        assert key in data
    assert set(data["mechanisms"][0]) == {"name", "noise_multiplier", "sample_rate", "steps", "sensitivity", "sampling"}
    assert data["adjacency"] == "add/remove-one" and data["sound"]["adjacency"] == "replace-one"
    assert data["headline"] == "paper" and data["not_dp"] is None
    assert rederive(data) == pytest.approx(data["epsilon"], rel=1e-6)
    assert rederive(data["sound"]) == pytest.approx(data["sound"]["epsilon"], rel=1e-6)
    assert data["epsilon"] == pytest.approx(0.9986, abs=5e-4)  # exp.sh's 0.976 + the DP centring mean


def test_order_search_ledger_is_rederivable_with_dp_accounting() -> None:
    """Fractional optimal orders. (Below α ≈ 3 dp-accounting bounds the alternating series by its
    absolute values while opacus/pyvacy keep the signs, so e.g. σ = 0.5 would agree only to 0.1-3 %.)"""
    data = dp2vae_ledger(1.0, num_subsets=1000, steps=20000, batch_size=32).to_dict()
    assert data["accountant"] == "rdp-order-search" and not float(data["order"]).is_integer()
    assert rederive(data) == pytest.approx(data["epsilon"], rel=1e-6)
    assert data["sound"]["mechanisms"][0]["sampling"] == "fixed-partition"
    assert rederive(data["sound"]) == pytest.approx(data["sound"]["epsilon"], rel=1e-6)


@pytest.mark.parametrize("kappa", ["paper", "sqrt5", "tight"])
def test_privae_ledgers_are_rederivable_with_dp_accounting(kappa: str) -> None:
    ledger = privae_ledger(2.0, 256 / 60000, 2344, 1e-5, 0.05, 0.005, 256, 16, kappa=kappa)  # type: ignore[arg-type]
    data = ledger.to_dict()
    assert data["headline"] == ("paper" if kappa == "paper" else "sound")
    assert Ledger.from_dict(data) == ledger
    assert rederive(data["sound"]) == pytest.approx(data["sound"]["epsilon"], rel=1e-6)
    paper = data["paper"]  # Theorem 2: each half alone at δ/2, the ε added
    halves = [
        rederive({**paper, "accountant": "rdp", "delta": paper["delta"] / 2, "mechanisms": [m]})
        for m in paper["mechanisms"]
    ]
    assert paper["accountant"] == "rdp+rdp (sequential)" and sum(halves) == pytest.approx(paper["epsilon"], rel=1e-6)


def test_not_dp_ledger_round_trips_and_says_so(tmp_path: Path) -> None:
    ledger = replace(CREDIT, centring="nonprivate").ledger(target_epsilon=1.0)
    data = json.loads(ledger.write(tmp_path / "privacy.json").read_text())
    assert data["not_dp"].startswith("not DP: non-private centring mean") and "sound" not in data
    assert Ledger.read(tmp_path / "privacy.json") == ledger
    assert rederive(data) == pytest.approx(data["epsilon"], rel=1e-6)
    with pytest.raises(ValueError, match="not_dp"):
        Ledger(ledger.paper, ledger.paper, not_dp="reason")
    with pytest.raises(ValueError, match="headline 'sound'"):
        Ledger(ledger.paper, headline="sound")


def test_round_trip_through_dict_and_file(tmp_path: Path) -> None:
    ledger = CREDIT.ledger(target_epsilon=1.0, notes="note")
    assert Ledger.from_dict(ledger.to_dict()) == ledger
    assert Ledger.read(ledger.write(tmp_path / "nested" / "privacy.json")) == ledger
    headline_only = Ledger(ledger.paper)
    data = headline_only.to_dict()
    assert "sound" not in data and "paper" not in data and data["target_epsilon"] is None
    assert Ledger.from_dict(data) == headline_only
    released = replace(ledger, randomness="secret", public="N = 9 public (bounded DP: why); the domain")
    assert Ledger.read(released.write(tmp_path / "x.privacy.json")) == released
    assert "public" not in ledger.to_dict()  # a run's ledger: what is public is the release's to say


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
    ledger = CREDIT.ledger()
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
    first = CREDIT.ledger(notes="first")
    first.write(path)
    before = path.read_text()

    def broken_dump(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(json, "dump", broken_dump)
    monkeypatch.setattr(json, "dumps", broken_dump)  # dpvae.files.write_json serialises with dumps
    with pytest.raises(OSError, match="disk full"):
        CREDIT.ledger(notes="second").write(path)
    assert path.read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["privacy.json"]


def test_budget_guard() -> None:
    adult = P3GMSetting(n_train=43957, batch_size=200, epochs=5, sgd_sigma=1.4, pca_sigma=5.0, centring="nonprivate")
    ledger = adult.ledger()
    assert ledger.epsilon > 1.0  # Adult's exp.sh setting: 1.009, no tolerance
    with pytest.raises(PrivacyBudgetExceeded, match=r"accounted epsilon 1\.009.*target epsilon 1\b") as error:
        check_budget(ledger, 1.0)
    assert error.value.achieved_epsilon == ledger.epsilon and error.value.target_epsilon == 1.0
    with pytest.raises(TypeError):
        check_budget(ledger, 1.0, rel_tol=0.01)  # type: ignore[call-arg]
    assert check_budget(ledger.paper, 1.01) == ledger.epsilon
    sound_headline = Ledger(ledger.paper, ledger.paper, headline="sound")
    assert check_budget(sound_headline, 1.01) == ledger.epsilon
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
