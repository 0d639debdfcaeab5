"""Configuration validation: the shipped configs are valid; bad input fails naming the key."""

from __future__ import annotations

import copy

import pytest
import yaml

from dpvae.config import ConfigError, format_eps, load_config, validate_config
from dpvae.paths import CAMPAIGN_OVERLAY, CAMPAIGNS, OVERLAYS, REPO_ROOT, campaign_overlay

PAPER_CONFIG = REPO_ROOT / "config.yaml"
SMOKE_CONFIG = REPO_ROOT / "tests" / "config" / "smoke.yaml"
#: the index of an entry appended to p3gm's per_setting list (after config.yaml's own)
APPENDED = len(yaml.safe_load(PAPER_CONFIG.read_text())["variants"]["p3gm"]["per_setting"])


def _raw(path=PAPER_CONFIG) -> dict:
    return yaml.safe_load(path.read_text())


def _error(config: dict) -> str:
    with pytest.raises(ConfigError) as excinfo:
        validate_config(config)
    return str(excinfo.value)


def test_paper_and_smoke_configs_are_valid(paper_config, smoke_config):
    assert paper_config["scale"] == "paper" and smoke_config["scale"] == "smoke"
    assert set(paper_config["experiments"]) == set(smoke_config["experiments"])


def test_smoke_overlay_adds_no_experiment_or_variant():
    """smoke.yaml only shrinks values of config.yaml: it names no variant or experiment of its own
    (the schema already rejects unknown keys inside them)."""
    smoke, paper = _raw(SMOKE_CONFIG), _raw(PAPER_CONFIG)
    for section in ("variants", "experiments"):
        assert set(smoke.get(section, {})) <= set(paper[section]), section
    assert set(smoke) <= set(paper) | {"evaluation"}


def test_campaign_overlays_are_in_their_folder_and_valid():
    """Campaign overlays live in workflow/campaigns/overlays/, each valid on config.yaml; the scripts that run
    campaigns sit beside that folder. The one YAML file beside them is the GPU queue's entry list, which
    gpu_queue.py reads from its own folder: data of that script, not an overlay."""
    assert sorted(p.name for p in (REPO_ROOT / CAMPAIGNS).glob("*.y*ml")) == ["gpu-queue.yaml"]
    overlays = sorted((REPO_ROOT / OVERLAYS).iterdir())
    assert overlays and [p.suffix for p in overlays] == [".yaml"] * len(overlays)
    for overlay in overlays:
        load_config([PAPER_CONFIG, overlay])


def test_a_recorded_overlay_path_maps_to_where_the_overlay_lives_now():
    """Rows recorded before the overlays moved name them directly under workflow/campaigns/: read where they live
    now; every overlay a recorded row names is found."""
    assert campaign_overlay("workflow/campaigns/p3gm-cpu.yaml") == "workflow/campaigns/overlays/p3gm-cpu.yaml"
    assert campaign_overlay("workflow/campaigns/overlays/p3gm-cpu.yaml") == "workflow/campaigns/overlays/p3gm-cpu.yaml"
    for other in (
        "config.yaml",
        "tests/config/smoke.yaml",
        "workflow/campaigns/lvae-queue.sh",
        "x/workflow/campaigns/a.yaml",
    ):
        assert campaign_overlay(other) == other
    rows = [p.read_text() for p in sorted((REPO_ROOT / "reproductions").rglob("*.csv"))]
    recorded = {path for text in rows for path in CAMPAIGN_OVERLAY.findall(text)}
    assert recorded and [p for p in sorted(recorded) if not (REPO_ROOT / campaign_overlay(p)).is_file()] == []


def test_defaults_are_filled_in():
    config = validate_config(_raw())
    assert "privacy" not in config  # no budget tolerance: epsilon <= target exactly
    assert config["evaluation"]["n_samples"] is None
    assert config["experiments"]["p3gm_table3"]["seeds"] == 1


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda c: c.update(colour="red"), "config key 'colour': unknown key"),
        (
            lambda c: c["variants"]["p3gm"]["params"].update(epochz=3),
            "config key 'variants.p3gm.params.epochz': not a parameter of method 'p3gm'",
        ),
        (
            lambda c: c["variants"]["p3gm"]["params"].update(lr="fast"),
            "'variants.p3gm.params.lr': 'fast' is not of type float",
        ),
        (lambda c: c["experiments"]["p3gm_tabular"].update(epsilons=[0]), "'experiments.p3gm_tabular.epsilons[0]'"),
        (lambda c: c["experiments"]["p3gm_tabular"].update(epsilons=[-1.0]), "'experiments.p3gm_tabular.epsilons[0]'"),
        (lambda c: c.update(delta=1.0), "config key 'delta'"),
        (lambda c: c.update(delta=0), "config key 'delta'"),
        (
            lambda c: c["experiments"]["p3gm_tabular"]["datasets"].append("mnistt"),
            "'experiments.p3gm_tabular.datasets[4]': unknown dataset_id 'mnistt'",
        ),
        (
            lambda c: c["experiments"]["p3gm_tabular"]["variants"].append("p3gmm"),
            "'experiments.p3gm_tabular.variants[5]': unknown variant 'p3gmm'",
        ),
        (lambda c: c["variants"]["p3gm"].update(method="p4gm"), "'variants.p3gm.method': unknown method 'p4gm'"),
        (lambda c: c["experiments"]["p3gm_tabular"].update(metrics=["auroc"]), "unknown metric 'auroc'"),
        (
            lambda c: c["experiments"]["p3gm_tabular"].update(epsilons=[]),
            "'experiments.p3gm_tabular.epsilons': variant",
        ),
        (lambda c: c["experiments"]["p3gm_table3"].update(analysis="stats"), "unknown analysis 'stats'"),
        (
            lambda c: c["variants"]["p3gm"]["per_setting"].append(
                {"dataset": "credit", "epsilon": "one", "params": {}}
            ),
            f"config key 'variants.p3gm.per_setting[{APPENDED}].epsilon': 'one' is not an epsilon",
        ),
        (
            lambda c: c["variants"]["p3gm"]["per_setting"].append(
                {"dataset": "mnist-p3gm", "epsilon": 0.5, "params": {"epochs": 2}}
            ),
            f"config key 'variants.p3gm.per_setting[{APPENDED}]': no experiment runs variant 'p3gm' on dataset "
            "mnist-p3gm at epsilon 0.5",
        ),
        (
            lambda c: c["variants"]["p3gm"]["per_setting"].append({"dataset": "credit", "epsilon": 0.5, "params": {}}),
            f"config key 'variants.p3gm.per_setting[{APPENDED}]': a second entry for dataset credit at epsilon 0.5 "
            "([1])",
        ),
        (
            lambda c: c["variants"]["p3gm"]["per_setting"].append({"dataset": "credlt", "epsilon": 1, "params": {}}),
            f"config key 'variants.p3gm.per_setting[{APPENDED}].dataset'",
        ),
        (
            lambda c: c["variants"]["p3gm"].update(per_epsilon={"0.5": {"epochs": 2}}),
            "config key 'variants.p3gm.per_epsilon': unknown key",
        ),
        (
            lambda c: c["variants"]["privae"]["params"].update(discriminators=1000),
            "config key 'variants.privae.params.discriminators': not a parameter of method 'privae'",
        ),
        (
            lambda c: c["variants"]["p3gm"]["per_dataset"]["adult"].update(sigma_sgd="lots"),
            "config key 'variants.p3gm.per_dataset.adult.sigma_sgd': 'lots' is not of type float | 'auto'",
        ),
        (
            lambda c: c["experiments"]["p3gm_pca_dim"]["sweep"]["points"]["2"].update(pca_components=0),
            "config key 'experiments.p3gm_pca_dim.sweep.points.2.pca_components': 0 is less than the minimum 1",
        ),
        (
            lambda c: c["evaluation"].update(fid={"n_sampels": 10}),
            "config key 'evaluation.fid.n_sampels': not a parameter of metric 'fid'",
        ),
        (
            lambda c: c["evaluation"].update(fdi={}),
            "config key 'evaluation.fdi': unknown metric 'fdi'; did you mean 'fid'?",
        ),
        (
            lambda c: c["experiments"]["p3gm_tabular"].update(paper="p4gm"),
            "config key 'experiments.p3gm_tabular.paper': unknown paper 'p4gm'",
        ),
        (
            lambda c: c["variants"]["real"].update(published_as={"p4gm": "original"}),
            "config key 'variants.real.published_as.p4gm': unknown paper 'p4gm'",
        ),
        (
            lambda c: c["variants"]["real"].update(published_as={"p3gm": "Original"}),
            "'variants.real.published_as.p3gm'",
        ),
        (
            lambda c: c["experiments"]["p3gm_tabular"].update(seeds=[3, 3]),
            "config key 'experiments.p3gm_tabular.seeds'",
        ),
        (
            lambda c: c["experiments"]["p3gm_tabular"].update(seeds=0),
            "config key 'experiments.p3gm_tabular.seeds'",
        ),
        (
            lambda c: c["experiments"]["p3gm_tabular"]["paper_setting"].update(epsilons=[]),
            "config key 'experiments.p3gm_tabular.paper_setting.epsilons'",
        ),
        (
            lambda c: c["experiments"]["p3gm_tabular"]["paper_setting"].update(grid=[1]),
            "config key 'experiments.p3gm_tabular.paper_setting.grid'",
        ),
        (
            lambda c: c["experiments"]["p3gm_images"]["paper_setting"].update(datasets=["mnist-p3gm"]),
            "config key 'experiments.p3gm_images.paper_setting.datasets[0]': 'mnist-p3gm' is our id; the paper "
            "setting names the papers' dataset 'mnist'",
        ),
        (
            lambda c: c["experiments"]["p3gm_table3"].update(paper_setting={"datasets": ["adult"], "epsilons": [1]}),
            "config key 'experiments.p3gm_table3.paper_setting': only a paper's experiment with runs",
        ),
        (
            lambda c: c["variants"]["pgm"].update(calibrate="sound"),
            "config key 'variants.pgm.calibrate': variant 'pgm' is not private; it has no noise to tune",
        ),
    ],
)
def test_bad_config_names_the_offending_key(mutate, expected):
    config = _raw()
    mutate(config)
    assert expected in _error(config)


def test_batch_larger_than_training_set_is_rejected():
    config = _raw()
    config["variants"]["p3gm"]["per_dataset"]["adult"]["batch_size"] = 10**6
    assert "batch_size 1000000 is larger than" in _error(config)
    config = _raw()
    config["variants"]["p3gm"]["params"]["max_train"] = 50  # smaller than credit's batch of 100
    assert "'variants.p3gm' (experiment" in _error(config)


def test_every_error_is_reported_at_once():
    config = _raw()
    config.update(colour="red", delta=2)
    message = _error(config)
    assert "'colour'" in message and "'delta'" in message


def test_epsilon_keys_are_normalised():
    config = _raw()
    config["variants"]["p3gm"]["per_setting"][1]["epsilon"] = 0.5
    validated = validate_config(copy.deepcopy(config))
    assert validated["variants"]["p3gm"]["per_setting"][1]["epsilon"] == "0.5"
    assert [format_eps(x) for x in (1, 1.0, 0.1, 10, 0.2, float("inf"))] == ["1", "1", "0.1", "10", "0.2", "inf"]


def test_missing_config_file_is_named(tmp_path):
    with pytest.raises(ConfigError, match="nope.yaml"):
        load_config([tmp_path / "nope.yaml"])


def test_every_private_variant_may_be_calibrated_to_the_sound_bound(monkeypatch):
    """Every private method plans its ledger, so `calibrate: sound` is accepted on every private variant; a method
    without a planned ledger is refused, naming the key."""
    from dpvae.methods.base import Method
    from dpvae.methods.p3gm import P3GM
    from dpvae.methods.registry import METHODS

    config = _raw()
    private = [
        name
        for name, variant in config["variants"].items()
        if variant.get("private", METHODS.get(variant["method"]).private)
    ]
    assert {"p3gm", "dp-vae", "dp-gm", "privae-mmd"} <= set(private)
    for name in private:
        config["variants"][name]["calibrate"] = "sound"
    validate_config(config)
    monkeypatch.setattr(P3GM, "planned_ledger", Method.planned_ledger)
    assert "config key 'variants.p3gm.calibrate': method 'p3gm''s ledger is known only after training" in _error(config)
