"""Defaults that scale with N (issue 64): P3GM's decoder pre-training steps follow their stated rule, and every
configured replication run keeps the steps it had (the code's 3,000 where it leaves them to the default)."""

from __future__ import annotations

import math

import pytest

from dpvae.config import facts_of
from dpvae.config_types import Config
from dpvae.methods.p3gm import P3GMParams
from dpvae.methods.p3gm.pretraining import PRETRAIN_PASSES, PRETRAIN_STEPS, pretrain_steps
from dpvae.methods.registry import METHODS
from dpvae.paths import REPO_ROOT
from dpvae.runs import experiment_runs, run_spec
from dpvae.schema import read_config

#: the configurations of recorded and replication runs: config.yaml, the smoke scale and every campaign overlay
CONFIGS = {
    "config.yaml": [],
    "smoke": ["tests/config/smoke.yaml"],
    **{f"overlay {p.stem}": [str(p)] for p in sorted((REPO_ROOT / "workflow/campaigns/overlays").glob("*.yaml"))},
}
#: the reference code's pre-training steps, what `pretrain_steps` was by default before it scaled with N
CODE_STEPS = 3000


def test_pretraining_steps_scale_with_n_up_to_the_codes():
    auto = P3GMParams()
    assert auto.pretrain_steps == "auto" and PRETRAIN_STEPS == CODE_STEPS
    assert pretrain_steps(auto, 200) == 200  # ceil(100 passes x 200 / 100)
    assert pretrain_steps(auto, 39_074) == CODE_STEPS  # Adult's size: the code's count
    assert pretrain_steps(P3GMParams(pretrain_batch_size=50), 200) == 400
    assert pretrain_steps(auto, 1) == math.ceil(PRETRAIN_PASSES / auto.pretrain_batch_size)
    for given in (0, 20, 5000):  # a configured count is taken as it is
        assert pretrain_steps(P3GMParams(pretrain_steps=given), 200) == given


def test_the_help_states_the_rule_and_why_n_may_shape_it():
    (doc,) = [f["doc"] for f in P3GMParams.describe() if f["name"] == "pretrain_steps"]
    assert f"min({PRETRAIN_STEPS}" in doc and f"{PRETRAIN_PASSES} N" in doc and "bounded DP" in doc


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_every_configured_p3gm_run_keeps_its_pretraining_steps(name):
    """At its dataset's documented training size (after `max_train`), each P3GM run pre-trains as many steps as it
    configures, or the code's 3,000 where it leaves them to the default (one seed: the steps do not depend on it)."""
    raw = read_config([REPO_ROOT / "config.yaml", *(REPO_ROOT / f for f in CONFIGS[name])])
    config = Config.from_json(raw)
    checked = 0
    for experiment in config.trained():
        for run in experiment_runs(config, experiment):
            if run.seed != min(config.experiments[experiment].seed_list()):
                continue
            spec = run_spec(config, run)
            if spec.method != "p3gm":
                continue
            params = METHODS.get("p3gm").Params.parse(spec.params)
            facts = facts_of(raw, run.dataset)
            assert facts is not None, f"{name}: no documented size of {run.dataset}"
            n = min(facts.n_train, params.max_train or facts.n_train)
            expected = spec.params.get("pretrain_steps", CODE_STEPS)
            assert pretrain_steps(params, n) == expected, f"{name}: run {run.id} at N = {n}"
            checked += 1
    assert checked or name.startswith("overlay")  # config.yaml and the smoke scale have P3GM runs
