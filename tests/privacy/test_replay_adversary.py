"""The textbook adversary against a `dpvae synth` release (issue 62): it knows the code, the configuration and every
record but one, holds the release bundle (`release.RELEASED`), and replays the run on each candidate dataset -- D
(the other records plus the true one) and D' (plus another) -- with every seed it can find: the old default 0 and
any key material in the bundle. A candidate whose replayed samples equal the released ones byte for byte is
consistent with the release; the adversary tells D from D' when exactly the true one is.

A default release (secret randomness) of every private method on a declared table and on declared image arrays
(`support.own_releases.CASES`) must leave it with no consistent candidate. The same adversary wins against a
replication-style run (`--seed 0`: its seed is known) and against a planted bug that writes the secret key into the
ledger, which shows the test can fail.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dpvae import randomness
from dpvae.privacy.ledger import Ledger
from dpvae.release import bundle
from support.own_releases import CASES, Case, Records, release

PLANTED_KEY = "planted_key"


def _candidates(case: Case) -> dict[str, Records]:
    """D and D': the same known records plus one of two targets."""
    known = case.records(case.sizes[0] - 1, 0)
    return {name: case.with_first(known, target) for name, target in zip(("D", "D'"), case.targets)}


def _release(folder: Path, case: Case, data: Records, seed: int | None = None) -> Path:
    # the quality report reads the drawn samples and is never released
    return release(case, folder, data, seed=seed, quality_report=False).samples


def _adversary(tmp_path: Path, released: Path, case: Case) -> set[str]:
    """The candidates consistent with the release, replayed with each seed found (the default 0, a key in a file)."""
    keys = []
    for path in bundle(released):
        if path.is_file() and path.suffix == ".json":
            keys += [value for key, value in json.loads(path.read_text()).items() if key == PLANTED_KEY]
    consistent = set()
    for name, data in _candidates(case).items():
        tries = [("seed0", 0, None)] + [(f"key{i}", None, key) for i, key in enumerate(keys)]
        for label, seed, key in tries:
            randomness.forget()
            if key is not None:
                randomness._KEY = bytes.fromhex(key)  # the adversary knows the code: it sets the key it found
            replayed = _release(tmp_path / "replay" / f"{name}-{label}", case, data, seed)
            if replayed.read_bytes() == released.read_bytes():
                consistent.add(name)
    return consistent


@pytest.fixture(autouse=True)
def _fresh_key():
    randomness.forget()
    yield
    randomness.forget()


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_a_default_release_holds_against_the_replay_adversary(tmp_path, case):
    released = _release(tmp_path / "release", case, _candidates(case)["D"])
    ledger = json.loads(bundle(released)[1].read_text())
    assert ledger["randomness"] == randomness.SECRET_NOTE and ledger["not_dp"] is None
    assert _adversary(tmp_path, released, case) == set()


@pytest.mark.parametrize("case_id", ["privbayes-table", "dp-vae-table", "dp-merf-image"])
def test_the_adversary_wins_on_a_known_seed_and_on_a_planted_key(tmp_path, case_id, monkeypatch):
    """The test can fail: with `--seed 0` (replication-style) the adversary picks D; so it does when a planted bug
    writes the secret key into the ledger of a default release: its replay reproduces the release, which
    `test_a_default_release_holds_against_the_replay_adversary` refuses. Under the planted key the adversary may
    also find D′ consistent: the key is fresh each run, so whether the target record changes a released bit is
    chance (DP-VAE's Poisson batches skip it in all of its few steps with a fair probability; PrivBayes' exact
    integer counts can absorb it) -- it is the seed-0 case, fixed once, that must pick D alone."""
    case = CASES[case_id]
    known = _release(tmp_path / "known", case, _candidates(case)["D"], seed=0)
    assert json.loads(bundle(known)[1].read_text())["not_dp"].startswith("seed given")
    assert _adversary(tmp_path / "a", known, case) == {"D"}

    to_dict = Ledger.to_dict

    def leaky(self):
        return {**to_dict(self), PLANTED_KEY: randomness._key().hex()}

    monkeypatch.setattr(Ledger, "to_dict", leaky)
    monkeypatch.setattr(Ledger, "from_dict", classmethod(lambda cls, data: _read_without(cls, data)))
    planted = _release(tmp_path / "planted", case, _candidates(case)["D"])
    consistent = _adversary(tmp_path / "b", planted, case)
    assert "D" in consistent


_from_dict = Ledger.from_dict


def _read_without(cls, data):
    return _from_dict({k: v for k, v in data.items() if k != PLANTED_KEY})
