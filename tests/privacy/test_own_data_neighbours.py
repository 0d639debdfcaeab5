"""Your own data, end to end: one record never shapes what a private `dpvae synth` run uses, writes or releases.

For every private method that takes a declared table or declared image arrays (`support.own_releases.CASES`, and
float images with DP-MERF), D is a small declared dataset (a training file and a test file), D' replaces one training
record by an extreme one (a table's: a value beyond its bounds, a new category and an undeclared label; an image's:
every pixel white, or NaN, infinite and beyond 1 for float images, and an undeclared class), and D_test puts that
record in the test file instead. Run with the same `--seed-file` (so that
the secret noise is the same in all three) and `--keep-work`, every file the run writes -- the release bundle and
the private workspace -- must be byte-identical for D and D' except the ledgered outputs (the samples, the files
the method's mechanisms release), the data's own copies (its raw files, the prepared arrays, their checksums and
the keyed identity) and the data holder's quality report (statistics of the private data, kept in the workspace,
never released); for D and D_test nothing may differ at all beyond the data's copies and the report, the samples
included. No run aborts on the record or names it anywhere, and the data holder's notes (`domain.Notes`: what was
clipped or mapped, which the record changes) reach `synth`'s caller only, in no file. Ryan's method (which takes an
unnoised public share of the data) is refused.
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

from dpvae.errors import ConfigError
from dpvae.methods.registry import METHODS
from dpvae.paths import ledger_file
from dpvae.privacy.accounting import pure_epsilon
from dpvae.privacy.ledger import Ledger
from dpvae.release import REPORT, default_workspace
from dpvae.runs import recomputed_ledger
from dpvae.synth import Request, synth
from support.own_releases import CASES, FLOAT_IMAGE_CASE, TABLE_DECLARATION, Case, Records, release

#: what may differ between neighbours: the data's own copies (relative to the workspace) and their keyed identity
DATA_COPIES = ("data/raw/*", "data/prepared/*/train.npz", "data/prepared/*/test.npz", "data/.dataset-key")
#: the ledgered outputs beside the method's `released` model files: the samples (in the workspace and released)
SAMPLES = ("run/samples.npz",)
#: the data holder's quality report: statistics of the private data for its holder, in the workspace, never released
REPORTS = (REPORT,)


def _synth(tmp_path: Path, name: str, case: Case, train: Records, test: Records, **more) -> tuple[Path, str]:
    """Release in tmp_path/run, then move it to tmp_path/name: every variant ran at the same paths; the samples and
    the data holder's notes. The quality report (a classifier per release for images: seconds each) is written for
    tables only."""
    folder = tmp_path / "run"
    (tmp_path / "seed").write_bytes(b"the same secret for D, D' and D_test")
    more = {"quality_report": case.kind == "table", **more}
    done = release(case, folder, train, test, n=200, seed_file=tmp_path / "seed", keep_work=True, **more)
    folder.rename(tmp_path / name)
    return tmp_path / name / done.samples.relative_to(folder), done.private_notes


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


def _check_samples(case: Case, out: Path) -> None:
    """The samples lie in the declared domain; no file but the raw copies names the extreme table record."""
    if case.kind == "image":
        with np.load(out) as arrays:
            x, side = arrays["x"], case.side
            assert x.dtype == (np.float32 if case.float_pixels else np.uint8) and x.shape[1:] == (side, side)
            assert np.isfinite(x).all() and x.min() >= 0 and x.max() <= (1 if case.float_pixels else 255)
            assert set(arrays["y"].tolist()) <= {0, 1, 2}
        return
    samples = pd.read_csv(out)
    assert samples["age"].between(0, 120).all() and samples["income"].between(0, 200_000).all()
    assert set(samples["colour"]) <= {"red", "green", "blue", "other"}
    assert set(samples["label"]) <= {"not yes", "yes"}
    for path in (p for p in out.parent.rglob("*") if p.is_file() and "raw" not in p.parts):
        text = path.read_bytes()
        assert b"purple" not in text and b"HIV+" not in text and b"7777777" not in text, path


def test_every_private_method_has_a_case():
    """Every private method `synth` can release a declared table or image arrays with is walked, on each kind it
    takes (here and by the replay adversary); Ryan's, which needs public data, is refused (below)."""
    private = [m for m in METHODS.values() if m.private and m.needs_public_data is None]
    assert set(CASES) == {f"{m.name}-{kind}" for m in private for kind in m.kinds}


def _check_notes_in_no_file(folder: Path, notes: str) -> None:
    """No file of a release, its workspace or its data holds a line of the data holder's notes (heading included)."""
    lines = [line.strip().encode() for line in notes.splitlines()]
    for path in (p for p in folder.rglob("*") if p.is_file()):
        text = path.read_bytes()
        assert not [line for line in lines if line in text], path


WALKED = {**CASES, FLOAT_IMAGE_CASE.id: FLOAT_IMAGE_CASE}


@pytest.mark.parametrize("case", list(WALKED.values()), ids=list(WALKED))
def test_one_record_never_shapes_what_a_run_writes(tmp_path, case):
    train, test = case.records(case.sizes[0], 0), case.records(case.sizes[1], 1)
    d, notes = _synth(tmp_path, "d", case, train, test)
    d2, notes2 = _synth(tmp_path, "d2", case, case.replaced(train, 0, case.extreme), test)
    dt, notes_t = _synth(tmp_path, "dt", case, train, case.replaced(test, 0, case.extreme))
    written = _files(d, case.method)
    assert written.keys() == _files(d2, case.method).keys() == _files(dt, case.method).keys()
    assert {name for name, text in _files(d2, case.method).items() if text != written[name]} == set()
    assert _files(dt, case.method) == written and dt.read_bytes() == d.read_bytes()  # a test record shapes nothing
    assert notes2 == notes_t != notes  # the notes count the extreme record, wherever it is: and reach no file
    for name, text in (("d", notes), ("d2", notes2), ("dt", notes_t)):
        _check_notes_in_no_file(tmp_path / name, text)
    for out in (d, d2):
        _check_samples(case, out)


@pytest.mark.parametrize("case_id", ["privbayes-table", "dp-gm-image"])
def test_the_walk_catches_a_planted_leak(tmp_path, monkeypatch, case_id):
    """The comparison fails on a run that writes an un-noised statistic of the data into the workspace."""
    import dpvae.data.store as store

    write = store.write_prepared

    def leaky(out_dir, train, test, meta):
        return write(out_dir, train, test, {**meta, "x_max": train.x.max(axis=0).tolist()})  # per column

    monkeypatch.setattr(store, "write_prepared", leaky)
    monkeypatch.setattr("dpvae.data.registry.write_prepared", leaky)
    case = CASES[case_id]
    train, test = case.records(case.sizes[0], 0), case.records(case.sizes[1], 1)
    if case.kind == "table":  # inside the bounds: only its scaled maximum shows it
        other = {**train.iloc[0].to_dict(), "income": 199_999.0}
    else:  # a white image: no typical one has a white pixel
        other = case.extreme
    d, _ = _synth(tmp_path, "d", case, train, test)
    d2, _ = _synth(tmp_path, "d2", case, case.replaced(train, 0, other), test)
    differ = {name for name, text in _files(d2, case.method).items() if text != _files(d, case.method)[name]}
    assert any(name.endswith("meta.json") for name in differ)


def test_ryans_method_is_refused_on_own_data(tmp_path):
    table = CASES["privbayes-table"]
    with pytest.raises(ConfigError, match="ryan"):
        _synth(tmp_path, "d", Case("ryan", "table", {}), table.records(200, 0), table.records(40, 1))


def test_a_domain_estimate_is_paid_from_the_target_and_recomputed_bit_for_bit(tmp_path):
    declaration = {"positive": "yes", "domain": "estimate", "domain_epsilon": 1.0}
    declaration["columns"] = {"colour": TABLE_DECLARATION["columns"]["colour"]}
    # bins of a few thousand records pass the threshold
    frame = pd.concat([CASES["privbayes-table"].records(3000, 0)] * 2, ignore_index=True)
    request = dict(method="privbayes", epsilon=3.0, delta=1e-5, params={}, n=50, device="cpu", headline="paper")
    (tmp_path / "declare.yaml").write_text(yaml.safe_dump(declaration))
    frame.to_csv(tmp_path / "data.csv", index=False)
    out = synth(
        Request(**request, data=str(tmp_path / "data.csv"), out=tmp_path / "s.csv", keep_work=True,
                declare=tmp_path / "declare.yaml")
    ).samples  # fmt: skip
    run = default_workspace(out) / "run"
    ledger = Ledger.read(ledger_file(run))
    assert pure_epsilon(ledger.paper.preprocessing) == pytest.approx(1.0)  # d / scale, add/remove-one
    assert pure_epsilon(ledger.sound.preprocessing) == pytest.approx(2.0)  # replace-one moves two bins per column
    assert ledger.epsilon <= 3.0 and ledger.paper.epsilon - 1.0 == pytest.approx(2.0, rel=1e-6)
    written, again = recomputed_ledger(run)
    assert written == again


def test_synth_needs_a_domain_or_an_explicit_not_dp(tmp_path):
    CASES["privbayes-table"].records(300, 0).to_csv(tmp_path / "data.csv", index=False)
    base = dict(method="privbayes", data=str(tmp_path / "data.csv"), epsilon=1.0, delta=1e-5, params={}, n=20)
    base |= dict(out=tmp_path / "o" / "s.csv", device="cpu", headline="paper")
    with pytest.raises(ConfigError, match=r"--data .*needs the data's public domain: --declare FILE"):
        synth(Request(**base))
    (tmp_path / "from_data.yaml").write_text(yaml.safe_dump({"domain": "from_data", "positive": "yes"}))
    with pytest.raises(ConfigError, match="not DP.*--allow-not-dp"):
        synth(Request(**base, declare=tmp_path / "from_data.yaml"))
    estimate = {**TABLE_DECLARATION, "domain": "estimate", "domain_epsilon": 1}
    (tmp_path / "estimate.yaml").write_text(yaml.safe_dump(estimate))
    with pytest.raises(ConfigError, match="--epsilon 1.0: leaves nothing after the domain estimate"):
        synth(Request(**base, declare=tmp_path / "estimate.yaml"))
    assert not (tmp_path / "o").exists()  # refused before any work
    out = synth(Request(**base, allow_not_dp=True)).samples
    ledger = Ledger.read(out.with_name("s.privacy.json"))
    assert ledger.not_dp is not None and "domain: from_data" in ledger.not_dp and ledger.sound is None
    work = default_workspace(out)  # after the release the private workspace holds the report only
    assert [p.name for p in work.iterdir()] == ["report.html"] and work.stat().st_mode & 0o077 == 0
