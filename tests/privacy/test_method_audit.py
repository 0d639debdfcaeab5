"""Every implemented private method, audited through its own training entry point (`method.train` in a canary
session, the `method_audit` analysis's `train_audited`) at the smoke settings of `audit_methods`: the 95 %
lower bound ε̂ of an honest run stays at or below the claimed ε, and with the planted bug (every noise
standard deviation times 0.1, the ledger unchanged) it lands above. Ryan's full training is left out at smoke
scale (mbi's compile takes ~45 s): its noisy measurements (`match3.measure`) are audited directly."""

from __future__ import annotations

import contextlib
from pathlib import Path

import numpy as np
import pytest
import torch

from dpvae.analyses.audit import train_audited
from dpvae.methods.registry import METHODS
from dpvae.paths import audit_file, ledger_file
from dpvae.privacy.canaries import CanarySession
from dpvae.runspec import Audit, RunSpec
from support.planted_bugs import scaled_noise

DELTA = 1e-5


def smoke_targets() -> dict[str, dict]:
    from dpvae.config import load_config
    from dpvae.paths import REPO_ROOT

    # at collection time (parametrize), so not the conftest fixture; `conftest` is ambiguous across test dirs
    config = load_config([REPO_ROOT / "config.yaml", REPO_ROOT / "tests" / "config" / "smoke.yaml"])
    params = config["experiments"]["audit_methods"]["params"]
    return {k: v for k, v in params["targets"].items() if k not in params.get("exclude", [])}


def test_every_private_method_is_audited(paper_config) -> None:
    targets = paper_config["experiments"]["audit_methods"]["params"]["targets"]
    private = {name for name in METHODS if METHODS.get(name).private}
    assert private == {t["method"] for t in targets.values()}
    engines = {t["params"]["engine"] for t in targets.values() if t["method"] == "privae"}
    assert engines == {"termwise", "micro", "batch"}


def _audit(label: str, target: dict, prepared_from_mirror, tmp_path: Path, bug: bool) -> dict:
    root = prepared_from_mirror(target["dataset"]).parent.parent
    spec = RunSpec.standalone(
        f"audit/{label}",
        tmp_path / ("bug" if bug else "honest"),
        dataset=target["dataset"],
        variant=label,
        method=target["method"],
        params=target.get("params", {}),
        epsilon=1.0,
        delta=DELTA,
        device="cpu",
        data_root=root,
        audit=Audit(1000),
    )
    torch.set_num_threads(1)
    with scaled_noise(0.1) if bug else contextlib.nullcontext():
        return train_audited(spec)


@pytest.mark.parametrize("label", sorted(smoke_targets()))
def test_an_honest_method_stays_below_its_claim_and_its_planted_bug_is_caught(
    label: str, prepared_from_mirror, tmp_path: Path
) -> None:
    target = smoke_targets()[label]
    honest = _audit(label, target, prepared_from_mirror, tmp_path, bug=False)
    buggy = _audit(label, target, prepared_from_mirror, tmp_path, bug=True)
    assert audit_file(tmp_path / "honest").is_file() and ledger_file(tmp_path / "honest").is_file()
    for record in (honest, buggy):
        assert record["epsilon_claimed"] <= 1.0 and record["max_certifiable"] > 4
    assert honest["lower"] <= honest["epsilon_claimed"]
    assert buggy["lower"] > buggy["epsilon_claimed"]


def _ryan_measure(bug: bool) -> dict:
    from dpvae.methods.marginals import match3
    from dpvae.methods.marginals.accounting import calibrate, ryan_accounting
    from dpvae.privacy.ledger import Ledger

    rng = np.random.default_rng(0)
    codes = rng.integers(0, 4, size=(500, 5))
    sizes = np.full(5, 4)
    sigma = calibrate(1.0, DELTA)
    session = CanarySession(1000, seed=3)
    with session.active(), scaled_noise(0.1) if bug else contextlib.nullcontext():
        match3.measure(codes, sizes, [(0, 1, 2), (2, 3, 4)], sigma, rng)
    return session.record(Ledger(ryan_accounting(sigma, DELTA), target_epsilon=1.0), DELTA)


def test_ryans_measurements_honest_and_with_a_tenth_of_the_noise() -> None:
    honest, buggy = _ryan_measure(False), _ryan_measure(True)
    assert honest["release"]["releases"] == 7 and honest["lower"] <= honest["epsilon_claimed"] <= 1.0
    assert buggy["lower"] > buggy["epsilon_claimed"]


def test_outside_a_session_a_release_is_the_methods_own_noise() -> None:
    from dpvae.privacy import canaries

    clean = np.arange(6.0).reshape(2, 3)
    noisy = canaries.release(
        clean, 2.0, lambda shape, std: std * np.random.default_rng(1).standard_normal(shape), sensitivity=1.0
    )
    assert np.array_equal(noisy, clean + 2.0 * np.random.default_rng(1).standard_normal((2, 3)))


def test_the_analysis_writes_each_audited_run_beside_its_table(tmp_path: Path) -> None:
    from dpvae import stages
    from dpvae.data.registry import prepare_dataset

    prepare_dataset("pinwheel", tmp_path / "data")
    experiment = {
        "paper": "audit",
        "analysis": "method_audit",
        "datasets": ["pinwheel"],
        "params": {
            "epsilon": 1,
            "canaries": 50,
            "exclude": ["skipped"],
            "targets": {
                "dp-vae": {"method": "dp-vae", "dataset": "pinwheel", "params": {"epochs": 1}},
                "skipped": {"method": "ryan", "dataset": "pinwheel"},
            },
        },
    }
    context = {
        "experiments": {"audit_methods": experiment},
        "variants": {},
        "data_root": str(tmp_path / "data"),
        "delta": DELTA,
    }
    out = tmp_path / "results" / "smoke" / "tables" / "audit_methods.csv"
    table = stages.analyze("audit_methods", context, out)
    run = tmp_path / "results" / "smoke" / "audit" / "dp-vae"
    assert audit_file(run).is_file() and ledger_file(run).is_file() and out.is_file()
    values = dict(zip(table["metric"], table["value"]))
    assert set(table["variant"]) == {"dp-vae"} and values["canaries"] == 50 and values["eps_claimed"] <= 1
    with pytest.raises(ValueError, match="unknown targets"):
        stages.analyze(
            "audit_methods",
            {
                **context,
                "experiments": {
                    "audit_methods": {**experiment, "params": {**experiment["params"], "exclude": ["nope"]}}
                },
            },
            out,
        )
