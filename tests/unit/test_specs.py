"""The JSON contracts between rules and jobs (`dpvae.specs`, `dpvae.render.spec`): every spec the rules build for the
shipped configurations, and any spec hypothesis builds, comes back from `from_json(to_json())` equal and as the
same JSON text (the spec files and the hashes stamped from them stay byte-identical); a spec missing a key is one
line naming the key and the file."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_config_types import experiments, names, variants

from dpvae.config import load
from dpvae.errors import ConfigError, DataError
from dpvae.files import json_text
from dpvae.items import ITEMS
from dpvae.paths import REPO_ROOT
from dpvae.render.setting import Setting
from dpvae.render.spec import ItemSpec, render_config
from dpvae.specs import AggregateSpec, AnalysisContext, ExperimentSpec, RunFiles
from dpvae.stages import analyze
from dpvae.workflow import Rules

SPECS = (AggregateSpec, ExperimentSpec, AnalysisContext, ItemSpec)


def _round_trips(spec) -> None:
    text = json_text(spec.to_json())
    again = type(spec).from_json(json.loads(text))
    assert again == spec
    assert json_text(again.to_json()) == text


def _rules_specs(rules: Rules):
    """Every spec the rules write for one configuration (an item the configuration cannot show: skipped)."""
    for key, runs in rules._runs.items():
        experiment, dataset = key.split("/", 1)
        for variant in dict.fromkeys(r.variant for r in runs):
            yield rules.aggregate_spec(experiment, dataset, variant)
    for name, experiment in rules.config.experiments.items():
        yield rules.experiment_spec(name) if experiment.trains else rules.analysis_context(name)
    for key in ITEMS:
        try:
            yield rules.item_spec(*key.split("/"))
        except ConfigError:
            continue


@pytest.mark.parametrize("scale", ["smoke", "paper"])
def test_every_spec_the_rules_write_round_trips(scale):
    files = [REPO_ROOT / "config.yaml"] + ([REPO_ROOT / "tests" / "config" / "smoke.yaml"] if scale == "smoke" else [])
    specs = list(_rules_specs(Rules(load(files), REPO_ROOT)))
    assert {type(s) for s in specs} == set(SPECS)
    for spec in specs:
        _round_trips(spec)


paths = st.lists(names.map(lambda n: f"results/{n}.csv"), max_size=3).map(tuple)
aggregates = experiments.flatmap(lambda e: st.builds(AggregateSpec, st.just(e.name), names, names, st.just(e), paths))
experiment_specs = st.builds(
    ExperimentSpec,
    names,
    names | st.just(""),
    st.sampled_from(["smoke", "paper"]),
    st.sampled_from([1e-5, 1e-6]),
    paths,
    st.lists(st.builds(RunFiles, names, paths), max_size=3).map(tuple),
    st.lists(names, max_size=2).map(tuple),
    st.lists(names, max_size=2).map(tuple),
)
named_variants = st.lists(variants, max_size=3).map(lambda vs: {v.name: v for v in vs})
contexts = st.builds(AnalysisContext, experiments, named_variants, names, st.sampled_from([1e-5, 1e-6]))
settings = st.builds(
    Setting,
    names,
    st.lists(names, max_size=2).map(tuple),
    st.lists(st.sampled_from([0.1, 2.0]), max_size=2).map(tuple),
    st.frozensets(names, max_size=2),
    st.lists(st.sampled_from([1.0, 5.0]), max_size=2).map(tuple),
)
item_specs = st.builds(
    ItemSpec,
    names,
    st.sampled_from(["smoke", "paper"]),
    st.dictionaries(names, paths, max_size=2),
    paths,
    st.builds(
        render_config,
        st.lists(experiments, max_size=2).map(lambda es: {e.name: e for e in es}),
        named_variants,
        st.sampled_from([1e-5, 1e-6]),
        st.sampled_from(["smoke", "paper"]),
    ),
    st.dictionaries(names, settings, max_size=2),
)


@given(st.one_of(aggregates, experiment_specs, contexts, item_specs))
def test_any_spec_round_trips(spec):
    _round_trips(spec)


@pytest.mark.parametrize("kind", SPECS, ids=lambda k: k.__name__)
def test_a_spec_missing_a_key_is_one_line_naming_it(kind):
    with pytest.raises(DataError, match=r"^results/x\.json: no key '\w+' \(rebuild the spec"):
        kind.from_json({}, "results/x.json")


def test_an_analysis_context_for_another_experiment_is_refused(tmp_path):
    context = AnalysisContext(load([REPO_ROOT / "config.yaml"]).experiments["p3gm_composition"]).to_json()
    with pytest.raises(DataError, match="holds experiment 'p3gm_composition', not 'other'"):
        analyze("other", context, tmp_path / "out.csv")
