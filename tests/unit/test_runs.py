"""The run table: expansion, parameter precedence, sweeps and shared runs."""

from __future__ import annotations

from dpvae.runs import Run, experiment_runs, resolve_params, run_spec, split_variant, variant_ids


def test_privae_sparsity_expands_to_every_method_epsilon_and_seed(paper_config):
    runs = experiment_runs(paper_config, "privae_sparsity")
    private = [r for r in runs if r.eps != "inf"]
    assert len(private) == 7 * 7 * 10       # (4 private variants + 3 with the sound kappa) x 7 epsilons x 10 seeds
    assert {r.variant for r in runs if r.eps == "inf"} == {"vae-mmd", "vae-sparse"}
    assert len(runs) == len(set(runs)) == 7 * 7 * 10 + 2 * 10


def test_parameters_resolve_variant_dataset_epsilon_then_sweep(paper_config):
    base = resolve_params(paper_config, "p3gm", "credit", "1")
    assert (base["sigma_sgd"], base["epochs"], base["batch_size"], base["sigma_pca"]) == (2.1, 15, 100, 10.0)
    low = resolve_params(paper_config, "p3gm", "credit", "0.1")
    assert (low["sigma_pca"], low["epochs"], low["batch_size"]) == (35.0, 0, 100)
    assert resolve_params(paper_config, "p3gm", "adult", "1")["sigma_pca"] == 5.0
    sweep = paper_config["experiments"]["p3gm_pca_dim"]["sweep"]
    point = resolve_params(paper_config, "p3gm-pca-sweep", "mnist-p3gm", "1", sweep, "30")
    assert (point["pca_components"], point["sigma_sgd"], point["epochs"]) == (30, 1.4, 4)


def test_sweep_variants_are_derived_ids(paper_config):
    exp = paper_config["experiments"]["p3gm_allocation"]
    ids = variant_ids(exp)
    assert ids[0] == "p3gm-allocation@ratio=0" and len(ids) == 8
    assert split_variant(ids[2]) == ("p3gm-allocation", ("ratio", "0.18"))
    spec = run_spec(paper_config, Run("credit", ids[2], "1", 0))
    assert (spec["params"]["sigma_pca"], spec["params"]["sigma_sgd"]) == (15.0, 2.0)


def test_runs_are_shared_between_experiments(paper_config):
    table6 = set(experiment_runs(paper_config, "p3gm_tabular", "credit"))
    fig4 = set(experiment_runs(paper_config, "p3gm_credit_eps", "credit"))
    shared = Run("credit", "p3gm", "1", 0)
    assert shared in table6 and shared in fig4


def test_spec_of_private_and_nonprivate_runs(paper_config):
    private = run_spec(paper_config, Run("fashion-mnist-32", "privae-mmd", "10", 3))
    assert private["private"] and private["epsilon"] == 10.0 and private["delta"] == 1e-5
    assert private["run"] == "results/paper/runs/fashion-mnist-32/privae-mmd/eps10/seed3"
    assert private["run_id"] == "fashion-mnist-32/privae-mmd/eps10/seed3" and private["scale"] == "paper"
    public = run_spec(paper_config, Run("fashion-mnist-32", "vae-mmd", "inf", 0))
    assert not public["private"] and public["epsilon"] is None
    pgm = run_spec(paper_config, Run("credit", "pgm", "inf", 0))
    assert pgm["method"] == "p3gm" and not pgm["private"]


def test_sweep_only_runs_the_named_points_and_refuses_unknown_ones(paper_config):
    import copy

    import pytest

    from dpvae.config import ConfigError, validate_config

    exp = {**paper_config["experiments"]["p3gm_allocation"]}
    exp["sweep"] = {**exp["sweep"], "only": ["0.1", "1"]}
    assert variant_ids(exp) == ["p3gm-allocation@ratio=0.1", "p3gm-allocation@ratio=1"]
    config = copy.deepcopy(paper_config)
    config["experiments"]["p3gm_allocation"]["sweep"]["only"] = ["0.5"]
    with pytest.raises(ConfigError, match=r"p3gm_allocation\.sweep\.only': '0\.5' is not a point"):
        validate_config(config)
