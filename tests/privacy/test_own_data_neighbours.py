"""Your own data, end to end: one record never shapes what a private `dpvae synth` run uses, writes or releases.

For every private method that takes a table, D is a small declared table (a training file and a test file), D'
replaces one training record by one with an extreme value, a new category and an undeclared label, and D_test
puts that record in the test file instead. Run with the same `--seed-file` (so that the secret noise is the same
in all three) and `--keep-work`, every file the run writes -- the release bundle and the private workspace -- must
be byte-identical for D and D' except the ledgered outputs (the samples, the files the method's mechanisms
release), the data's own copies (its raw files, the prepared arrays, their checksums and the keyed identity) and
the data holder's quality report (statistics of the private data, kept in the workspace, never released); for D
and D_test nothing may differ at all beyond the data's copies and the report, the samples included. No run aborts on the
record or names it anywhere. Ryan's method (which takes an unnoised public share of the data) is refused.
"""

from __future__ import annotations

import fnmatch
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from dpvae import randomness
from dpvae.errors import ConfigError
from dpvae.methods.registry import METHODS
from dpvae.paths import ledger_file
from dpvae.privacy.accounting import pure_epsilon
from dpvae.privacy.ledger import Ledger
from dpvae.release import REPORT
from dpvae.runs import recomputed_ledger
from dpvae.synth import Request, synth

DECLARATION = {
    "positive": "yes",  # the label set is {not yes, yes}: a rare label is "not yes"
    "columns": {
        "age": {"bounds": [0, 120]},
        "income": {"bounds": [0, 200_000]},
        "colour": {"categories": ["red", "green", "blue"]},  # no `other`: its first category is the catch-all
    },
}
EXTREME = {"age": 45, "income": 7_777_777.7, "colour": "purple", "label": "HIV+"}
TINY = {
    "privbayes": {},
    "mst": {"iterations": 50},
    "aim": {"rounds": 10, "round_iterations": 10, "iterations": 50},
    "p3gm": {"epochs": 2, "batch_size": 50, "pretrain_steps": 20, "em_iters": 3, "hidden": 32},
    "dp-gm": {"epochs": 2, "batch_size": 50, "kmeans_iters": 3, "hidden": 32},
    "dp-vae": {"epochs": 2, "batch_size": 50, "hidden": 32},
}
#: what may differ between neighbours: the data's own copies (relative to the workspace) and their keyed identity
DATA_COPIES = ("data/raw/*", "data/prepared/*/train.npz", "data/prepared/*/test.npz", "data/.dataset-key")
#: the ledgered outputs beside the method's `released` model files: the samples (in the workspace and released)
SAMPLES = ("run/samples.npz",)
#: the data holder's quality report: statistics of the private data for its holder, in the workspace, never released
REPORTS = (REPORT,)


def _table(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "age": rng.integers(18, 90, n),
            "income": rng.uniform(12_000, 81_000, n).round(1),
            "colour": rng.choice(["red", "green", "blue"], n),
            "label": rng.choice(["yes", "no"], n),
        }
    )


def _with_extreme(frame: pd.DataFrame) -> pd.DataFrame:
    changed = frame.astype(object).copy()
    changed.iloc[0] = [EXTREME[c] for c in frame.columns]
    return changed


def _synth(tmp_path: Path, name: str, train: pd.DataFrame, test: pd.DataFrame, method: str, **more) -> Path:
    """Release in tmp_path/run, then move it to tmp_path/name: every variant ran at the same paths."""
    folder = tmp_path / "run"
    folder.mkdir()
    train.to_csv(folder / "data.csv", index=False)
    test.to_csv(folder / "test.csv", index=False)
    (folder / "declare.yaml").write_text(yaml.safe_dump({**DECLARATION, "test_path": "test.csv"}))
    (tmp_path / "seed").write_bytes(b"the same secret for D, D' and D_test")
    request = Request(
        method=method, data=str(folder / "data.csv"), epsilon=10.0, delta=1e-5, params=TINY.get(method, {}),
        out=folder / "out" / "synthetic.csv", n=200, declare=folder / "declare.yaml", headline="paper",
        device="cpu", seed_file=tmp_path / "seed", keep_work=True, **more,
    )  # fmt: skip
    try:
        out = synth(request).samples
    finally:
        randomness.forget()
    folder.rename(tmp_path / name)
    return tmp_path / name / out.relative_to(folder)


def _files(out: Path, method: str) -> dict[str, bytes]:
    """Every file of the release and its workspace (relative to the output folder) but the data's own copies and
    the ledgered outputs, with the keyed identity, the data's checksums and wall times replaced by placeholders."""
    work = out.with_name(out.name + ".work")
    (meta_path,) = (work / "data" / "prepared").glob("*/meta.json")
    meta = json.loads(meta_path.read_text())
    keyed = {meta_path.parent.name: "<dataset id>", meta["identity"]["hmac_sha256"]: "<keyed identity>"}
    keyed |= {digest: "<checksum of a prepared split>" for digest in meta["files_sha256"].values()}
    keyed[json.loads((work / "run" / "train.json").read_text())["spec_sha256"]] = "<hash of the keyed spec>"
    released = [f"run/model/{pattern}" for pattern in METHODS.get(method).released]
    found = {}
    for path in sorted(p for p in out.parent.rglob("*") if p.is_file()):
        inner = str(path.relative_to(work)) if path.is_relative_to(work) else ""
        if any(fnmatch.fnmatch(inner, p) for p in (*DATA_COPIES, *SAMPLES, *REPORTS, *released)) or path == out:
            continue
        text = re.sub(rb'"seconds": [0-9.]+', b'"seconds": <wall time>', path.read_bytes())
        for value, placeholder in keyed.items():
            text = text.replace(value.encode(), placeholder.encode())
        found[str(path.relative_to(out.parent)).replace(meta_path.parent.name, "<dataset id>")] = text
    return found


@pytest.mark.parametrize("method", sorted(TINY))
def test_one_record_never_shapes_what_a_run_writes(tmp_path, method):
    train, test = _table(300, 0), _table(60, 1)
    d = _synth(tmp_path, "d", train, test, method)
    d2 = _synth(tmp_path, "d2", _with_extreme(train), test, method)
    dt = _synth(tmp_path, "dt", train, _with_extreme(test), method)
    written = _files(d, method)
    assert written.keys() == _files(d2, method).keys() == _files(dt, method).keys()
    assert {name for name, text in _files(d2, method).items() if text != written[name]} == set()
    assert _files(dt, method) == written and dt.read_bytes() == d.read_bytes()  # a test record shapes nothing
    for out in (d, d2):
        samples = pd.read_csv(out)
        assert samples["age"].between(0, 120).all() and samples["income"].between(0, 200_000).all()
        assert set(samples["colour"]) <= {"red", "green", "blue", "other"}
        assert set(samples["label"]) <= {"not yes", "yes"}
        for path in (p for p in out.parent.rglob("*") if p.is_file() and "raw" not in p.parts):
            text = path.read_bytes()
            assert b"purple" not in text and b"HIV+" not in text and b"7777777" not in text, path


def test_the_walk_catches_a_planted_leak(tmp_path, monkeypatch):
    """The comparison fails on a run that writes an un-noised statistic of the data into the workspace."""
    import dpvae.data.store as store

    write = store.write_prepared

    def leaky(out_dir, train, test, meta):
        return write(out_dir, train, test, {**meta, "x_max": train.x.max(axis=0).tolist()})  # per column

    monkeypatch.setattr(store, "write_prepared", leaky)
    monkeypatch.setattr("dpvae.data.registry.write_prepared", leaky)
    train, test = _table(300, 0), _table(60, 1)
    train.loc[0, "income"] = 199_999.0  # inside the bounds: only its scaled maximum shows it
    d = _synth(tmp_path, "d", train.assign(income=train["income"].clip(upper=81_000)), test, "privbayes")
    d2 = _synth(tmp_path, "d2", train, test, "privbayes")
    differ = {name for name, text in _files(d2, "privbayes").items() if text != _files(d, "privbayes")[name]}
    assert any(name.endswith("meta.json") for name in differ)


def test_ryans_method_is_refused_on_own_data(tmp_path):
    with pytest.raises(ConfigError, match="ryan"):
        _synth(tmp_path, "d", _table(300, 0), _table(60, 1), "ryan")


def test_a_domain_estimate_is_paid_from_the_target_and_recomputed_bit_for_bit(tmp_path):
    declaration = {"positive": "yes", "domain": "estimate", "domain_epsilon": 1.0}
    declaration["columns"] = {"colour": DECLARATION["columns"]["colour"]}
    frame = pd.concat([_table(3000, 0)] * 2, ignore_index=True)  # bins of a few thousand records pass the threshold
    request = dict(method="privbayes", epsilon=3.0, delta=1e-5, params={}, n=50, device="cpu", headline="paper")
    (tmp_path / "declare.yaml").write_text(yaml.safe_dump(declaration))
    frame.to_csv(tmp_path / "data.csv", index=False)
    out = synth(
        Request(**request, data=str(tmp_path / "data.csv"), out=tmp_path / "s.csv", keep_work=True,
                declare=tmp_path / "declare.yaml")
    ).samples  # fmt: skip
    run = out.with_name(out.name + ".work") / "run"
    ledger = Ledger.read(ledger_file(run))
    assert pure_epsilon(ledger.paper.preprocessing) == pytest.approx(1.0)  # d / scale, add/remove-one
    assert pure_epsilon(ledger.sound.preprocessing) == pytest.approx(2.0)  # replace-one moves two bins per column
    assert ledger.epsilon <= 3.0 and ledger.paper.epsilon - 1.0 == pytest.approx(2.0, rel=1e-6)
    written, again = recomputed_ledger(run)
    assert written == again


def test_synth_needs_a_domain_or_an_explicit_not_dp(tmp_path):
    _table(300, 0).to_csv(tmp_path / "data.csv", index=False)
    base = dict(method="privbayes", data=str(tmp_path / "data.csv"), epsilon=1.0, delta=1e-5, params={}, n=20)
    base |= dict(out=tmp_path / "o" / "s.csv", device="cpu", headline="paper")
    with pytest.raises(ConfigError, match=r"--data .*needs the data's public domain: --declare FILE"):
        synth(Request(**base))
    (tmp_path / "from_data.yaml").write_text(yaml.safe_dump({"domain": "from_data", "positive": "yes"}))
    with pytest.raises(ConfigError, match="not DP.*--allow-not-dp"):
        synth(Request(**base, declare=tmp_path / "from_data.yaml"))
    (tmp_path / "estimate.yaml").write_text(yaml.safe_dump({**DECLARATION, "domain": "estimate", "domain_epsilon": 1}))
    with pytest.raises(ConfigError, match="--epsilon 1.0: leaves nothing after the domain estimate"):
        synth(Request(**base, declare=tmp_path / "estimate.yaml"))
    assert not (tmp_path / "o").exists()  # refused before any work
    out = synth(Request(**base, allow_not_dp=True)).samples
    ledger = Ledger.read(out.with_name("s.privacy.json"))
    assert ledger.not_dp is not None and "domain: from_data" in ledger.not_dp and ledger.sound is None
    work = out.with_name(out.name + ".work")  # after the release the private workspace holds the report only
    assert [p.name for p in work.iterdir()] == ["report.html"] and work.stat().st_mode & 0o077 == 0
