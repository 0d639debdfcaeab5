"""The typed configuration (`dpvae.config.Config`): the validated mapping of every shipped configuration comes back
from `to_json` key for key and in order (so the specs the rules write from it stay byte-identical), typed values
round-trip, and they are frozen."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from dpvae.config import Config, Experiment, PerSetting, Sweep, Variant, load, load_config, metric_options
from dpvae.eval.registry import METRICS

REPO = Path(__file__).resolve().parents[2]
OVERLAYS = sorted((REPO / "workflow" / "campaigns" / "overlays").glob("*.yaml"))
CONFIGS = [
    [REPO / "config.yaml"],
    [REPO / "config.yaml", REPO / "tests" / "config" / "smoke.yaml"],
    *([REPO / "config.yaml", overlay] for overlay in OVERLAYS),
]


@pytest.mark.parametrize("files", CONFIGS, ids=lambda files: files[-1].stem)
def test_every_shipped_configuration_round_trips_byte_for_byte(files):
    validated = load_config(files)
    config = Config.from_json(validated)
    assert json.dumps(config.to_json()) == json.dumps(validated)
    assert Config.from_json(config.to_json()) == config


def test_typed_values_are_frozen():
    config = load([REPO / "config.yaml"])
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.scale = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        config.variants["p3gm"].params["epochs"] = 1  # type: ignore[index]
    with pytest.raises(TypeError):
        config.experiments["p3gm_tabular"] = None  # type: ignore[index]
    assert isinstance(config.variants["p3gm"].per_setting[0], PerSetting)
    assert config.variants["p3gm"].name == "p3gm" and "name" not in config.variants["p3gm"].to_json()


def test_metric_options_default_in_their_type():
    config = load([REPO / "config.yaml"])
    assert metric_options(config, "fid").reference == "test"  # the type's default: config.yaml states no fid options
    smoke = load([REPO / "config.yaml", REPO / "tests/config/smoke.yaml"])
    assert metric_options(smoke, "fid").n_samples == smoke.evaluation.configured("fid")["n_samples"]


@pytest.mark.parametrize(
    "config_file",
    [REPO / "config.yaml", *sorted((REPO / "tests" / "config").glob("*.yaml")), *OVERLAYS],
    ids=lambda path: path.name,
)
def test_a_metric_default_is_stated_in_one_place(config_file):
    """config.yaml and its overlays state only options that differ from the metric's type (its one default)."""
    stated = (yaml.safe_load(config_file.read_text()) or {}).get("evaluation") or {}
    restated = [
        f"{metric}.{key}: {value!r}"
        for metric, options in stated.items()
        if isinstance(options, dict) and metric in METRICS
        for key, value in options.items()
        if getattr(METRICS.get(metric).Options(), key, object()) == value
    ]
    assert not restated, f"{config_file} restates defaults of the metrics' options types: {restated}"


names = st.from_regex(r"[a-z][a-z0-9_-]{0,6}", fullmatch=True)
scalars = st.one_of(st.integers(-5, 10**6), st.floats(allow_nan=False, allow_infinity=False), names, st.booleans())
params = st.dictionaries(names, scalars, max_size=4)
settings = st.builds(PerSetting, dataset=names, epsilon=st.sampled_from(["0.1", "1", "5"]), params=params)
variants = st.builds(
    Variant,
    name=names,
    method=names,
    private=st.none() | st.booleans(),
    params=params,
    calibrate=st.none() | st.sampled_from(["paper", "sound"]),
    per_dataset=st.dictionaries(names, params, max_size=2),
    per_setting=st.lists(settings, max_size=3).map(tuple),
)
sweeps = st.builds(
    Sweep,
    name=names,
    points=st.dictionaries(st.sampled_from(["1", "2", "10"]), params, min_size=1),
    only=st.none() | st.just(("1",)),
)
experiments = st.builds(
    Experiment,
    name=names,
    paper=st.none() | st.sampled_from(["p3gm", "privae"]),
    description=names,
    datasets=st.lists(names, max_size=3).map(tuple),
    variants=st.lists(names, max_size=3).map(tuple),
    epsilons=st.lists(st.sampled_from([0.1, 1, 5.0]), max_size=3).map(tuple),
    seeds=st.integers(1, 5) | st.lists(st.integers(0, 9), min_size=1, max_size=3).map(tuple),
    metrics=st.lists(names, max_size=2).map(tuple),
    sweep=st.none() | sweeps,
)


@given(variants)
def test_a_variant_round_trips(variant):
    again = Variant.from_json(json.loads(json.dumps(variant.to_json())), name=variant.name)
    assert again == variant
    assert again.to_json() == variant.to_json()


@given(experiments)
def test_an_experiment_round_trips(experiment):
    again = Experiment.from_json(json.loads(json.dumps(experiment.to_json())), name=experiment.name)
    assert again == experiment
    assert again.to_json() == experiment.to_json()
