"""The run spec (`dpvae.runspec.RunSpec`): its JSON is the dict builder's byte for byte, it round-trips, refuses
unknown keys, cannot be changed in place, and no spec is built outside `runs.py` and `runspec.py`."""

from __future__ import annotations

import ast
import copy
import dataclasses
import json
import pickle
from pathlib import Path

import pytest

from dpvae.config import load_config
from dpvae.errors import ConfigError
from dpvae.paths import REPO_ROOT
from dpvae.runs import Run, run_spec, stage1_of
from dpvae.runspec import Audit, RunSpec
from dpvae.workflow import Rules

RECORDED = Path(__file__).with_name("recorded_run_specs.txt")
#: the modules that build run specs: the type (and `RunSpec.standalone`) and the configuration's builder
BUILDERS = ("src/dpvae/runspec.py", "src/dpvae/runs.py")
#: keys only a run spec has together: a dict literal with "run_id" and one of these is a spec built by hand
SPEC_KEYS = {"data_root", "params", "run", "epsilon", "dataset"}


def recorded() -> dict[str, str]:
    """'<config> <run id>' -> the spec's JSON as the dict builder wrote it."""
    lines = [line for line in RECORDED.read_text().splitlines() if line and not line.startswith("#")]
    return dict(line.split("\t", 1) for line in lines)


@pytest.fixture(scope="module")
def configs() -> dict[str, dict]:
    files = [REPO_ROOT / "config.yaml", REPO_ROOT / "tests" / "config" / "smoke.yaml"]
    privae = {"audit": {"canaries": 8, "confidence": 0.9}, "calibrate": "sound"}
    return {
        "smoke": load_config(files),
        "audited": load_config(files, {"precision": "bf16", "variants": {"privae": privae}}),
    }


def _run(run_id: str) -> Run:
    dataset, variant, eps, seed = run_id.split("/")
    return Run(dataset, variant, eps.removeprefix("eps"), int(seed.removeprefix("seed")))


@pytest.mark.parametrize("label", sorted(recorded()))
def test_the_json_is_the_dict_builders_byte_for_byte(configs, label):
    name, rest = label.split(" ", 1)
    stage1 = rest.startswith("stage1 of ")
    spec = run_spec(configs[name], _run(rest.removeprefix("stage1 of ")))
    spec = stage1_of(spec) if stage1 else spec
    assert spec.to_json() == recorded()[label]
    again = RunSpec.from_json(spec.to_json())
    assert again == spec and again.to_json() == spec.to_json()


def test_every_smoke_run_round_trips_with_its_optional_keys_absent_when_unset(configs):
    plan = Rules(configs["audited"])
    runs = sorted(plan.all_runs())
    assert len(runs) > 40
    seen = set()
    for run in runs:
        text = plan.spec_json(run.dataset, run.variant, run.eps, run.seed)
        spec = RunSpec.from_json(text)
        assert spec.to_json() == text and json.loads(text) == spec.to_dict()
        keys = set(json.loads(text))
        seen |= keys
        for optional in ("audit", "calibrate", "precision", "stage1"):
            assert (optional in keys) == (getattr(spec, optional) is not None), (run.id, optional)
    for path, spec in plan._stage1.items():
        assert RunSpec.from_json(spec.to_json()) == spec and spec.is_stage1 and spec.run == path
        assert not {"variant", "private", "epsilon", "delta"} & set(json.loads(spec.to_json()))
    assert {"audit", "calibrate", "precision", "stage1"} <= seen


def test_unknown_or_missing_keys_are_refused_in_one_line_naming_the_key(configs):
    text = run_spec(configs["smoke"], Run("mnist", "real", "inf", 0)).to_json()
    values = json.loads(text)
    with pytest.raises(ConfigError, match=r"^run spec: unknown key 'epsilon_rel_tol' \(a run spec has: run_id,"):
        RunSpec.from_json(json.dumps({**values, "epsilon_rel_tol": 0.0}))
    del values["delta"]
    with pytest.raises(ConfigError, match=r"^train.json: missing key 'delta'$"):
        RunSpec.from_dict(values, "train.json")
    with pytest.raises(ConfigError, match=r"^run spec: audit: unknown key 'canary'"):
        RunSpec.from_json(json.dumps({**json.loads(text), "audit": {"canary": 3}}))


def test_the_spec_is_frozen_and_variants_are_derived_with_replace(configs):
    spec = run_spec(configs["smoke"], Run("adult", "privbayes", "1", 0))
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.epsilon = 2.0  # type: ignore[misc]
    with pytest.raises(TypeError, match="frozen"):
        spec.params["degree"] = 3  # type: ignore[index]
    raw = {"degree": 3}
    derived = dataclasses.replace(spec, params=raw, epsilon=2.0)
    raw["degree"] = 4  # the spec holds its own copy
    assert derived.params == {"degree": 3} and derived.epsilon == 2.0 and spec.epsilon == 1.0
    assert pickle.loads(pickle.dumps(derived)) == derived == copy.deepcopy(derived)


def test_a_standalone_spec_names_its_variant_and_privacy_from_its_method_and_target():
    spec = RunSpec.standalone("synth/x/privbayes", "out.run", dataset="x", method="privbayes", epsilon=1.0, delta=1e-5)
    assert (spec.variant, spec.private, spec.scale, spec.device) == ("privbayes", True, "", "auto")
    audited = dataclasses.replace(spec, audit=Audit(10))
    assert json.loads(audited.to_json())["audit"] == {"canaries": 10} and audited.audit.level == 0.95
    assert not RunSpec.standalone("t", "run").private


# -- no run spec is built by hand ------------------------------------------------------------------------------


def _keys(node: ast.AST) -> set[str]:
    if isinstance(node, ast.Dict):
        return {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
        return {k.arg for k in node.keywords if k.arg}
    return set()


def _called(node: ast.AST) -> str:
    func = node.func if isinstance(node, ast.Call) else None
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def hand_built_specs(path: Path, text: str | None = None) -> list[str]:
    """'<path>:<line>: <why>' for each run spec `path` builds by hand: a dict literal (or `dict(...)`) with
    "run_id" and another key only a spec has, or a direct `RunSpec(...)` call (the builders use it)."""
    tree = ast.parse(path.read_text() if text is None else text, str(path))
    found = []
    for node in ast.walk(tree):
        keys = _keys(node)
        if "run_id" in keys and keys & SPEC_KEYS:
            found.append(
                f"{path}:{node.lineno}: a dict with the run spec's keys {sorted(keys & (SPEC_KEYS | {'run_id'}))}"
            )
        if isinstance(node, ast.Call) and _called(node) == "RunSpec":
            found.append(
                f"{path}:{node.lineno}: RunSpec(...) outside runs.py (use runs.run_spec or RunSpec.standalone)"
            )
    return found


def test_no_run_spec_is_built_outside_the_builders():
    files = [p for top in ("src", "benchmarks", "tests") for p in sorted((REPO_ROOT / top).rglob("*.py"))]
    assert len(files) > 100
    found = [
        line for path in files if str(path.relative_to(REPO_ROOT)) not in BUILDERS for line in hand_built_specs(path)
    ]
    assert found == []


def test_the_walk_finds_a_planted_spec(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text(
        "from dpvae.runspec import RunSpec\n"
        "spec = {'run_id': 'a/b/eps1/seed0', 'data_root': 'data', 'seed': 0}\n"
        "other = dict(run_id='x', params={})\n"
        "typed = RunSpec(run_id='x', run='r', dataset='d', method='m', params={}, data_root='data')\n"
        "fine = {'run_id': 'x', 'seconds': 1}\n"
    )
    found = hand_built_specs(planted)
    assert [line.split(":")[1] for line in found] == ["2", "3", "4"], found
