"""The run table: expansion, parameter precedence, sweeps and shared runs."""

from __future__ import annotations

import copy

from dpvae.config import validate_config
from dpvae.runs import Run, experiment_runs, resolve_params, resolved_sources, run_spec, split_variant, variant_ids


def test_privae_sparsity_expands_to_every_method_epsilon_and_seed(paper_config):
    runs = experiment_runs(paper_config, "privae_sparsity")
    private = [r for r in runs if r.eps != "inf"]
    assert len(private) == 7 * 7 * 10  # (4 private variants + 3 with the sound kappa) x 7 epsilons x 10 seeds
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


def test_a_p3gm_run_on_mnist_or_own_data_at_a_credit_epsilon_takes_no_credit_value(paper_config):
    """Credit's Fig. 4 settings (per_setting, dataset credit) apply to Credit alone: P3GM on MNIST or on a user's
    own dataset at epsilon 0.5 resolves as at epsilon 1, every value from params or per_dataset."""
    config = copy.deepcopy(paper_config)
    config["experiments"]["mnist_at_half"] = {
        "description": "P3GM on MNIST at epsilon 0.5",
        "datasets": ["mnist-p3gm"],
        "variants": ["p3gm"],
        "epsilons": [0.5],
        "seeds": 1,
        "metrics": [],
    }
    config = validate_config(config)
    (credit,) = [s["params"] for s in config["variants"]["p3gm"]["per_setting"] if s["epsilon"] == "0.5"]
    mnist = run_spec(config, Run("mnist-p3gm", "p3gm", "0.5", 0)).params
    assert dict(mnist) == resolve_params(config, "p3gm", "mnist-p3gm", "1")
    assert (mnist["sigma_sgd"], mnist["epochs"], mnist["sigma_em"], mnist["em_iters"]) == (1.4, 4, 100.0, 20)
    for dataset in ("mnist-p3gm", "my-own-data"):
        sources = resolved_sources(config, "p3gm", dataset, "0.5")
        assert all("per_setting" not in source for _, source in sources.values()), dataset
        assert all(k not in sources or sources[k][0] != v for k, v in credit.items()), dataset
    own = resolve_params(config, "p3gm", "my-own-data", "0.5")
    assert own == resolve_params(config, "p3gm", "my-own-data", "1") == dict(config["variants"]["p3gm"]["params"])
    at_credit = resolved_sources(config, "p3gm", "credit", "0.5")
    assert {k: at_credit[k][0] for k in credit} == credit
    assert at_credit["sigma_em"][1] == "variants.p3gm.per_setting[1] (dataset credit, epsilon 0.5)"


def test_an_every_dataset_setting_applies_everywhere_and_a_dataset_one_wins(paper_config):
    """GS-WGAN's iters: auto at epsilon 1 names dataset "*"; an entry for one dataset overrides it there."""
    assert resolve_params(paper_config, "gs-wgan", "mnist", "1")["iters"] == "auto"
    assert resolve_params(paper_config, "gs-wgan", "my-own-images", "1")["iters"] == "auto"
    assert resolve_params(paper_config, "gs-wgan", "mnist", "10")["iters"] == 20000
    config = copy.deepcopy(paper_config)
    config["variants"]["gs-wgan"]["per_setting"].append({"dataset": "mnist", "epsilon": "1", "params": {"iters": 7}})
    assert resolve_params(config, "gs-wgan", "mnist", "1")["iters"] == 7
    assert resolve_params(config, "gs-wgan", "fashion-mnist", "1")["iters"] == "auto"


def test_sweep_variants_are_derived_ids(paper_config):
    exp = paper_config["experiments"]["p3gm_allocation"]
    ids = variant_ids(exp)
    assert ids[0] == "p3gm-allocation@ratio=0" and len(ids) == 8
    assert split_variant(ids[2]) == ("p3gm-allocation", ("ratio", "0.18"))
    spec = run_spec(paper_config, Run("credit", ids[2], "1", 0))
    assert (spec.params["sigma_pca"], spec.params["sigma_sgd"]) == (15.0, 2.0)


def test_runs_are_shared_between_experiments(paper_config):
    table6 = set(experiment_runs(paper_config, "p3gm_tabular", "credit"))
    fig4 = set(experiment_runs(paper_config, "p3gm_credit_eps", "credit"))
    shared = Run("credit", "p3gm", "1", 0)
    assert shared in table6 and shared in fig4


def test_spec_of_private_and_nonprivate_runs(paper_config):
    private = run_spec(paper_config, Run("fashion-mnist-32", "privae-mmd", "10", 3))
    assert private.private and private.epsilon == 10.0 and private.delta == 1e-5
    assert private.run == "results/paper/runs/fashion-mnist-32/privae-mmd/eps10/seed3"
    assert private.run_id == "fashion-mnist-32/privae-mmd/eps10/seed3" and private.scale == "paper"
    public = run_spec(paper_config, Run("fashion-mnist-32", "vae-mmd", "inf", 0))
    assert not public.private and public.epsilon is None
    pgm = run_spec(paper_config, Run("credit", "pgm", "inf", 0))
    assert pgm.method == "p3gm" and not pgm.private


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


def test_dp2vae_stage1_key_is_exactly_what_stage1_reads(paper_config):
    """Runs differing only in epsilon or stage-2 settings share one stage-1 directory; every stage-1
    parameter, the dataset and the seed give another; runs without pre-training have none."""
    import copy

    base = run_spec(paper_config, Run("mnist", "dp2vae", "10", 0))
    assert base.stage1.startswith("results/paper/stage1/mnist/dp2vae/") and base.stage1.endswith("/seed0")
    for eps in ("1", "0.2"):
        assert run_spec(paper_config, Run("mnist", "dp2vae", eps, 0)).stage1 == base.stage1
    for point in paper_config["experiments"]["dp2vae_lr"]["sweep"]["points"]:
        assert run_spec(paper_config, Run("mnist", f"dp2vae@lr={point}", "10", 0)).stage1 == base.stage1
    fmnist = run_spec(paper_config, Run("fashion-mnist", "dp2vae", "10", 0)).stage1
    assert fmnist == base.stage1.replace("/mnist/", "/fashion-mnist/")
    assert run_spec(paper_config, Run("mnist", "dp2vae", "10", 1)).stage1 == base.stage1[:-1] + "1"
    assert run_spec(paper_config, Run("mnist", "dp2vae-nopretrain", "10", 0)).stage1 is None

    def stage1_with(**params) -> str | None:
        config = copy.deepcopy(paper_config)
        config["variants"]["dp2vae"]["params"].update(params)
        return run_spec(config, Run("mnist", "dp2vae", "10", 0)).stage1

    for unread in ({"iters": 5}, {"lr": 0.01}, {"noise_multiplier": 0.7}, {"pretrain_lr": 1e-4, "clip": 1}):
        assert stage1_with(**unread) == base.stage1, unread
    for read in (
        {"subsets": 500},
        {"pretrain_iters": 10},
        {"pretrain_lr": 1e-3},
        {"batch_size": 16},
        {"clip": 0.5},
        {"latent_dim": 4},
        {"hidden_channels": [64, 32]},
        {"decoder_norm": "none"},
        {"loss": "mse"},
        {"chunk": 10},
        {"max_train": 1000},
    ):
        assert stage1_with(**read) not in (None, base.stage1), read
    assert stage1_with(pretrain_iters=0) is None and stage1_with(pretrain=False) is None


def test_dp2vae_items_plan_one_stage1_per_dataset_and_seed(paper_config):
    """The DP2-VAE items at paper scale: one stage-1 job per (dataset, seed), loaded by every epsilon, every
    learning rate of Fig. 9 and Fig. 5's pre-training arm; Fig. 5's other arm loads none."""
    from dpvae.paths import REPO_ROOT
    from dpvae.workflow import Rules

    plan = Rules(paper_config, REPO_ROOT)
    experiments = [
        n for n, e in paper_config["experiments"].items() if e.get("paper") == "dp2vae" and "analysis" not in e
    ]
    runs = {
        r
        for n in experiments
        for d in paper_config["experiments"][n]["datasets"]
        for r in plan.runs(n, d)
        if paper_config["variants"][r.base_variant]["method"] == "dp2vae"
    }
    users = {path: set(used) & runs for path, used in plan.stage1_users().items() if set(used) & runs}
    for path, used in users.items():  # results/paper/stage1/<dataset>/dp2vae/<key>/seed0
        assert {r.dataset for r in used} == {path.split("/")[3]} and path.endswith("/seed0")
    assert sorted(p.split("/")[3] for p in users) == ["celeba32", "fashion-mnist", "mnist"]
    (mnist,) = [used for path, used in users.items() if "/mnist/" in path]
    assert {(r.variant, r.eps) for r in mnist} == (
        {("dp2vae", e) for e in ("10", "1", "0.2")}
        | {(f"dp2vae@lr={p}", "10") for p in paper_config["experiments"]["dp2vae_lr"]["sweep"]["points"]}
    )
    assert all(r.variant != "dp2vae-nopretrain" for used in users.values() for r in used)
    assert len(runs) == 15 and sum(len(u) for u in users.values()) == 14
    spec = plan.stage1_spec("mnist", "dp2vae", next(p for p in users if "/mnist/" in p).split("/")[-2], 0)
    assert spec.params["pretrain_iters"] == 50 and spec.params["subsets"] == 1000 and "lr" not in spec.params


def test_listed_seeds_add_runs_beside_recorded_ones(paper_config):
    """`seeds: [3, 4]` plans exactly those seeds (seeds 0-2 recorded earlier are not run again); `seeds: 2` = 0, 1."""
    exp = paper_config["experiments"]["p3gm_tabular"]
    listed = experiment_runs({**paper_config, "experiments": {"t": {**exp, "seeds": [4, 3]}}}, "t", "adult")
    counted = experiment_runs({**paper_config, "experiments": {"t": {**exp, "seeds": 2}}}, "t", "adult")
    assert sorted({r.seed for r in listed}) == [3, 4] and sorted({r.seed for r in counted}) == [0, 1]
    assert len(listed) == len(counted) and {r.variant for r in listed} == {r.variant for r in counted}


def test_methods_resolve_prints_each_value_and_its_source(capsys):
    """`python -m dpvae methods p3gm --resolve mnist-p3gm 0.5`: MNIST's values from params and per_dataset, none
    from Credit's entry; on Credit the entry is named."""
    from dpvae.cli import main

    assert main(["methods", "p3gm", "--resolve", "mnist-p3gm", "0.5"]) == 0
    rows = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines()[1:] if line.strip()}
    assert rows["sigma_sgd"][1:] == ["1.4", "variants.p3gm.per_dataset.mnist-p3gm"]
    assert rows["max_train"][1:] == ["None", "default", "of", "method", "p3gm"]
    assert not any("per_setting" in " ".join(row) for row in rows.values())
    assert main(["methods", "p3gm", "--resolve", "credit", "0.5"]) == 0
    assert "sigma_sgd            2.2           variants.p3gm.per_setting[1] (dataset credit, epsilon 0.5)" in (
        capsys.readouterr().out
    )


def test_privae_on_a_declared_table_takes_the_tables_defaults_below_what_the_variant_states(
    paper_config, tmp_path, monkeypatch
):
    """Issue 64: a dataset declared under `datasets:` gives a method the defaults its kind of data needs
    (`Method.data_defaults`, the same as `synth`'s) as the lowest layer: a user's PriVAE variant that states only its
    epochs trains on a table with the MLP VAE's prior and latent size and a batch of a quarter of the training
    records; what a variant states wins (the pinwheel variant's batch); a paper dataset gets no such layer."""
    monkeypatch.chdir(tmp_path)
    rows = ["a,b,label"] + [f"{i % 7},{i % 5},{'yes' if i % 3 else 'no'}" for i in range(200)]
    (tmp_path / "t.csv").write_text("\n".join(rows) + "\n")
    config = copy.deepcopy(paper_config)
    config["datasets"] = {"mine": {"path": "t.csv", "label": "label", "labels": ["no", "yes"],
                                   "columns": {"a": {"bounds": [0, 7]}, "b": {"bounds": [0, 5]}}}}  # fmt: skip
    config["variants"]["my-privae"] = {"method": "privae", "params": {"epochs": 1}}
    config = validate_config(config)
    mine = resolved_sources(config, "my-privae", "mine", "1")
    assert {k: mine[k][0] for k in ("prior", "latent_dim")} == {"prior": "mog", "latent_dim": 2}
    assert mine["prior"][1] == "the kind of data of 'mine' (Method.data_defaults)"
    assert mine["epochs"] == (1, "variants.my-privae.params")
    batch = run_spec(config, Run("mine", "my-privae", "1", 0)).params["batch_size"]
    assert 150 <= 4 * batch <= 200  # a quarter of the training split (its test fraction held out)
    pinwheel = resolve_params(config, "privae-pinwheel", "mine", "1")
    assert pinwheel["batch_size"] == config["variants"]["privae-pinwheel"]["params"]["batch_size"]
    assert not any(
        "data_defaults" in source for _, source in resolved_sources(config, "my-privae", "mnist", "1").values()
    )
