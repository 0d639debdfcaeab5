"""Your own data, end to end: one record never shapes what a private `dpvae synth` run uses or releases.

For every private method that takes a table, D is a small declared table and D' adds one record with an
extreme value, a new category and a rare label. The domain the run used (recorded in the prepared meta) and
the label names must be identical for D and D', every sample must lie inside the declared domain, and no
file of the run or of its output may hold the record's extreme value or its new category. Ryan's method
(which takes an unnoised public share of the training data) is refused on own data.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from dpvae.errors import ConfigError
from dpvae.paths import ledger_file
from dpvae.privacy.accounting import pure_epsilon
from dpvae.privacy.ledger import Ledger
from dpvae.runs import recomputed_ledger
from dpvae.synth import Request, synth

DECLARATION = {
    "positive": "yes",  # the label set is {not yes, yes}: a rare label is "not yes"
    "columns": {
        "age": {"bounds": [0, 120]},
        "income": {"bounds": [0, 200_000]},
        "colour": {"categories": ["red", "green", "blue", "other"], "other": "other"},
    },
}
EXTREME = {"age": 45, "income": 7_777_777.7, "colour": "purple", "label": "HIV+"}
TINY = {
    "privbayes": {},
    "p3gm": {"epochs": 2, "batch_size": 50, "pretrain_steps": 20, "em_iters": 3, "hidden": 32},
    "dp-gm": {"epochs": 2, "batch_size": 50, "kmeans_iters": 3, "hidden": 32},
    "dp-vae": {"epochs": 2, "batch_size": 50, "hidden": 32},
}


def _table(n: int = 300) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {
            "age": rng.integers(18, 90, n),
            "income": rng.uniform(12_000, 81_000, n).round(1),
            "colour": rng.choice(["red", "green", "blue"], n),
            "label": rng.choice(["yes", "no"], n),
        }
    )


def _synth(tmp_path: Path, name: str, frame: pd.DataFrame, method: str, declaration: dict) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    frame.to_csv(folder / "data.csv", index=False)
    (folder / "declare.yaml").write_text(yaml.safe_dump(declaration))
    request = Request(
        method=method, data=str(folder / "data.csv"), epsilon=10.0, delta=1e-5, params=TINY.get(method, {}),
        out=folder / "out" / "synthetic.csv", n=200, root=folder / "data", declare=folder / "declare.yaml",
        headline="paper", device="cpu",
    )  # fmt: skip
    return synth(request).samples


def _used_domain(out: Path) -> tuple:
    (meta,) = (out.parents[1] / "data" / "prepared").glob("*/meta.json")
    recorded = json.loads(meta.read_text())
    return recorded["domain"], recorded["columns"], recorded["label_names"]


@pytest.mark.parametrize("method", sorted(TINY))
def test_one_record_never_shapes_the_domain_or_shows_in_a_release(tmp_path, method):
    d = _synth(tmp_path, "d", _table(), method, DECLARATION)
    d2 = _synth(tmp_path, "d2", pd.concat([_table(), pd.DataFrame([EXTREME])], ignore_index=True), method, DECLARATION)
    assert _used_domain(d) == _used_domain(d2)
    for out in (d, d2):
        samples = pd.read_csv(out)
        assert samples["age"].between(0, 120).all() and samples["income"].between(0, 200_000).all()
        assert set(samples["colour"]) <= {"red", "green", "blue", "other"}
        assert set(samples["label"]) <= {"not yes", "yes"}
        digest = hashlib.sha256((out.parents[1] / "data.csv").read_bytes()).hexdigest().encode()
        released = [p for p in out.parent.rglob("*") if p.is_file()]  # the samples, the ledger, the run directory
        for path in released:
            text = path.read_bytes()
            assert b"purple" not in text and b"HIV+" not in text and b"7777777" not in text, path
            assert digest[:8] not in text, path  # the private file's hash would fingerprint it


def test_ryans_method_is_refused_on_own_data(tmp_path):
    with pytest.raises(ConfigError, match="ryan"):
        _synth(tmp_path, "d", _table(), "ryan", DECLARATION)


def test_a_domain_estimate_is_paid_from_the_target_and_recomputed_bit_for_bit(tmp_path):
    declaration = {"positive": "yes", "domain": "estimate", "domain_epsilon": 1.0}
    declaration["columns"] = {"colour": DECLARATION["columns"]["colour"]}
    frame = pd.concat([_table(3000)] * 2, ignore_index=True)  # bins of a few thousand records pass the threshold
    request = dict(method="privbayes", epsilon=3.0, delta=1e-5, params={}, n=50, device="cpu", headline="paper")
    (tmp_path / "declare.yaml").write_text(yaml.safe_dump(declaration))
    frame.to_csv(tmp_path / "data.csv", index=False)
    out = synth(
        Request(**request, data=str(tmp_path / "data.csv"), out=tmp_path / "s.csv", root=tmp_path / "data",
                declare=tmp_path / "declare.yaml")
    ).samples  # fmt: skip
    run = out.with_name(out.name + ".run")
    ledger = Ledger.read(ledger_file(run))
    assert pure_epsilon(ledger.paper.preprocessing) == pytest.approx(1.0)  # d / scale, add/remove-one
    assert pure_epsilon(ledger.sound.preprocessing) == pytest.approx(2.0)  # replace-one moves two bins per column
    assert ledger.epsilon <= 3.0 and ledger.paper.epsilon - 1.0 == pytest.approx(2.0, rel=1e-6)
    written, again = recomputed_ledger(run)
    assert written == again


def test_synth_needs_a_domain_or_an_explicit_not_dp(tmp_path):
    _table().to_csv(tmp_path / "data.csv", index=False)
    base = dict(method="privbayes", data=str(tmp_path / "data.csv"), epsilon=1.0, delta=1e-5, params={}, n=20)
    base |= dict(out=tmp_path / "o" / "s.csv", root=tmp_path / "data", device="cpu", headline="paper")
    with pytest.raises(ConfigError, match=r"--data .*needs the data's public domain: --declare FILE"):
        synth(Request(**base))
    (tmp_path / "from_data.yaml").write_text(yaml.safe_dump({"domain": "from_data", "positive": "yes"}))
    with pytest.raises(ConfigError, match="not DP.*--allow-not-dp"):
        synth(Request(**base, declare=tmp_path / "from_data.yaml"))
    (tmp_path / "estimate.yaml").write_text(yaml.safe_dump({**DECLARATION, "domain": "estimate", "domain_epsilon": 1}))
    with pytest.raises(ConfigError, match="--epsilon 1.0: leaves nothing after the domain estimate"):
        synth(Request(**base, declare=tmp_path / "estimate.yaml"))
    assert not (tmp_path / "o").exists() and not (tmp_path / "data").exists()  # refused before any work
    out = synth(Request(**base, allow_not_dp=True)).samples
    ledger = Ledger.read(ledger_file(out.with_name(out.name + ".run")))
    assert ledger.not_dp is not None and "domain: from_data" in ledger.not_dp and ledger.sound is None
