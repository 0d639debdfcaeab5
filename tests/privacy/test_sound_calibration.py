"""A run calibrated to the sound bound (variant `calibrate: sound`, `dpvae synth --calibrate-sound`): the train
stage lowers the method's own target until the release's sound ε meets the run's target, the ledger's headline
is the sound accounting, and recomputing the ledger from the spec gives the same bytes."""

from __future__ import annotations

import pytest

from dpvae import stages
from dpvae.privacy.ledger import Ledger
from dpvae.runs import recomputed_ledger
from support.toy_runs import toy_spec, write_toy_dataset


@pytest.mark.parametrize("calibrate", [None, "sound"])
def test_a_sound_calibrated_run_meets_its_target_with_the_sound_bound(tmp_path, calibrate):
    root = write_toy_dataset(tmp_path / "data")
    spec = toy_spec(root, tmp_path, method="privbayes")
    spec["params"] = {}
    if calibrate:
        spec["calibrate"] = calibrate
    stages.train(spec)
    ledger = Ledger.read(tmp_path / "run" / "privacy.json")
    if calibrate is None:  # the paper's accounting meets the target; the sound one (replace-one) is 1.5 times it
        assert ledger.headline == "paper" and ledger.sound.epsilon == pytest.approx(1.5, rel=1e-6)
    else:
        assert ledger.headline == "sound" and 1 - 1e-5 <= ledger.sound.epsilon <= 1 == ledger.target_epsilon
        assert ledger.paper.epsilon == pytest.approx(2 / 3, rel=1e-5)
    written, again = recomputed_ledger(tmp_path / "run")
    assert written == again
