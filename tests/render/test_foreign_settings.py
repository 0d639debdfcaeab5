"""Renderers never mislabel (issue 29, item 4): every paper item rendered on a dataset its paper did not use and a
three-point epsilon grid either keeps epsilon and the dataset as axes (no pooled epsilons, no paper title or
published number for foreign data, "not the paper's setting" on the page) or is refused with one line, once,
while planning (the render job reads the outcome from the item's spec). Synthetic tidy tables: each renderer
runs in well under a second."""

from __future__ import annotations

import itertools
import math

import pandas as pd
import pytest

from dpvae.analyses.tidy import tidy
from dpvae.config import load_config
from dpvae.errors import ConfigError
from dpvae.items import ITEMS, PAPERS, get_item
from dpvae.paths import REPO_ROOT
from dpvae.render.base import RenderContext, load_renderers
from dpvae.render.setting import checked_settings, experiment_setting
from dpvae.schema import read_config
from dpvae.workflow import Rules
from support.render_context import spec_variants

GRID = [0.5, 1.0, 2.0]
FOREIGN = "breast-cancer"  # a user's dataset id: no paper used it


def tabular_rows(dataset: str, experiment: str, variants: list[str], epsilons=GRID, seeds=(0, 1)) -> list[dict]:
    """AUROC / AUPRC / TVD rows whose value grows with epsilon (pooling would show a mean of all three)."""
    out = []
    for variant, eps, seed in itertools.product(variants, epsilons, seeds):
        private = variant != "real"
        if not private and eps != epsilons[0]:
            continue
        base = {"experiment": experiment, "dataset": dataset, "variant": variant, "method": variant, "seed": seed}
        base["epsilon"] = eps if private else None
        value = 0.5 + 0.1 * eps + 0.001 * seed
        for metric in ("auroc", "auprc", "auprc_flipped"):
            out.append({**base, "metric": metric, "classifier": "mean4", "value": value})
        out += [{**base, "metric": m, "value": value / 10} for m in ("tvd2_clipped", "tvd2_notebook")]
        out += [{**base, "metric": m, "value": 0.3} for m in ("tvd2_public_clipped", "tvd2_public_notebook")]
        if private:
            out.append({**base, "metric": "epsilon_spent", "value": eps})
            out.append({**base, "metric": "epsilon_spent_sound", "value": 1.5 * eps})
    return out


PAPER_EXPERIMENTS = read_config([REPO_ROOT / "config.yaml"])["experiments"]


def context(key: str, experiments: dict, tables: dict, tmp_path) -> RenderContext:
    """The item's render context as the render job builds it: its Settings checked as planning checks them."""
    experiments = {n: {"paper_setting": PAPER_EXPERIMENTS[n]["paper_setting"], **e} for n, e in experiments.items()}
    return RenderContext(
        get_item(key),
        str(tmp_path / key.replace("/", "-")),
        {k: tidy(v) for k, v in tables.items()},
        [],
        {"experiments": experiments, "delta": 1e-5, "scale": "smoke", "variants": spec_variants(experiments)},
        planned(key, experiments),
    )


def planned(key: str, experiments: dict) -> dict:
    return checked_settings(key, experiments, load_renderers().get(key).handles)


def foreign(key: str) -> dict:
    """The item's experiments on a foreign dataset with a three-point epsilon grid (and the paper's setting)."""
    return {
        n: {**PAPER_EXPERIMENTS[n], "datasets": [FOREIGN], "epsilons": GRID, "variants": ["p3gm"]}
        for n in get_item(key).experiments
    }


TRAINED_ITEMS = sorted(
    k for k, i in ITEMS.items() if any("paper_setting" in PAPER_EXPERIMENTS.get(e, {}) for e in i.experiments)
)
HANDLED = {"p3gm/table6", "p3gm/table8", "p3gm/fig4", "dp2vae/table1"}


def test_every_trained_experiment_has_a_paper_setting(paper_config):
    """Every paper's experiment with runs states its paper's setting, and the shipped configuration is in it."""
    for name, exp in paper_config["experiments"].items():
        if "analysis" not in exp and exp.get("paper") in PAPERS:  # not the project's own items (audit, today)
            assert "paper_setting" in exp, name
            assert experiment_setting(name, exp).is_paper, name


def test_smoke_configuration_is_the_papers_setting(smoke_config):
    """Stand-ins count as the data they stand in for, and smoke grids are subsets of the paper's."""
    for name, exp in smoke_config["experiments"].items():
        assert experiment_setting(name, exp).is_paper, name


def test_a_setting_reaches_the_renderer_through_the_spec():
    """`Setting` travels in the item's spec as JSON and comes back equal."""
    from dpvae.render.setting import Setting

    setting = experiment_setting("p3gm_tabular", foreign("p3gm/table6")["p3gm_tabular"])
    assert not setting.is_paper and setting.paper_datasets == {"credit", "esr", "adult", "isolet"}
    assert Setting.from_json(setting.to_json()) == setting


@pytest.mark.parametrize("key", sorted(set(TRAINED_ITEMS) - HANDLED))
def test_items_that_cannot_show_it_refuse_with_one_line(key, tmp_path):
    with pytest.raises(ConfigError) as error:
        planned(key, foreign(key))
    message = str(error.value)
    assert "\n" not in message and key in message and "cannot show experiments." in message
    assert "figures/experiments/" in message


def test_an_epsilon_axis_renderer_still_refuses_foreign_data():
    """PriVAE Fig. 1 draws epsilon as its axis (any grid) but is titled Fashion-MNIST: foreign data is refused."""
    experiments = {"privae_sparsity": {**PAPER_EXPERIMENTS["privae_sparsity"], "epsilons": GRID}}
    assert planned("privae/fig1", experiments)["privae_sparsity"].foreign_epsilons == (0.5,)
    with pytest.raises(ConfigError, match="privae_sparsity.datasets breast-cancer"):
        planned("privae/fig1", foreign("privae/fig1"))


@pytest.mark.parametrize("dataset", ["adult", FOREIGN])
def test_p3gm_table6_and_table8_keep_epsilon_as_a_column(dataset, tmp_path):
    variants = ["privbayes", "p3gm", "real"]
    experiments = {"p3gm_tabular": {"datasets": [dataset], "epsilons": GRID, "variants": variants}}
    tables = {"p3gm_tabular": tabular_rows(dataset, "p3gm_tabular", variants)}
    renderers = load_renderers()
    renderers.get("p3gm/table6")(context("p3gm/table6", experiments, tables, tmp_path))
    out = pd.read_csv(tmp_path / "p3gm-table6.csv")
    p3gm = out[out["method"] == "P3GM"].set_index("epsilon")
    assert list(p3gm.index) == GRID  # one row per epsilon, none pooled
    for eps in GRID:
        assert (
            p3gm.loc[eps, "AUROC (ours)"].startswith(f"{0.5 + 0.1 * eps + 0.0005:.4f} ± ")
            and "(n=2)" in p3gm.loc[eps, "AUROC (ours)"]
        )
        assert p3gm.loc[eps, "epsilon spent"] == pytest.approx(eps)
    paper = p3gm.get("AUROC (paper)", pd.Series(math.nan, index=p3gm.index))
    if dataset == "adult":  # the paper's number only at its own epsilon
        assert paper.loc[1.0] == pytest.approx(0.8214) and paper.drop(1.0).isna().all()
    else:
        assert paper.isna().all()
    tex = (tmp_path / "p3gm-table6.tex").read_text()
    assert "NOT THE PAPER'S SETTING" in tex and "tabular data at (1, 1e-5)" not in tex
    assert "Kaggle Credit" not in set(out["dataset"])  # the paper's other datasets are not pulled in
    renderers.get("p3gm/table8")(context("p3gm/table8", experiments, tables, tmp_path))
    out8 = pd.read_csv(tmp_path / "p3gm-table8.csv")
    assert list(out8[out8["method"] == "P3GM"]["epsilon"]) == GRID


def test_p3gm_fig4_on_other_data_drops_the_credit_title_and_curve(tmp_path, monkeypatch):
    import dpvae.render.p3gm.utility_curves as p3gm

    figures = []
    monkeypatch.setattr(p3gm, "save_figure", lambda fig, prefix: figures.append(fig))
    variants = ["p3gm", "privbayes"]
    experiments = {"p3gm_credit_eps": {"datasets": ["adult"], "epsilons": GRID, "variants": variants}}
    tables = {"p3gm_credit_eps": tabular_rows("adult", "p3gm_credit_eps", variants)}
    load_renderers().get("p3gm/fig4")(context("p3gm/fig4", experiments, tables, tmp_path))
    (fig,) = figures
    texts = [fig._suptitle.get_text(), *(t.get_text() for t in fig.texts)]
    assert not any("Kaggle Credit" in t for t in texts) and any("NOT THE PAPER'S SETTING" in t for t in texts)
    for ax in fig.axes:
        assert ax.get_title().startswith("Adult")
        labels = [line.get_label() for line in ax.get_lines()]
        assert not any("notebook" in label for label in labels), labels
        xs = sorted({x for line in ax.get_lines() for x in line.get_xdata()})
        assert xs == GRID  # epsilon is the axis: three points


def test_dp2vae_table1_reads_each_rows_epsilon_from_its_own_runs(tmp_path):
    rows = []
    for variant, eps in itertools.product(["dp2vae", "dp-merf"], GRID):
        base = {"experiment": "dp2vae_eps10", "dataset": "digits", "variant": variant, "method": variant}
        base |= {"epsilon": eps, "seed": 0}
        rows += [{**base, "metric": "fid", "value": 100 / eps}, {**base, "metric": "epsilon_spent", "value": eps}]
        rows.append({**base, "metric": "accuracy", "classifier": "cnn", "value": 0.3 * eps})
    base = {"experiment": "dp2vae_eps10", "dataset": "digits", "variant": "real", "method": "real", "seed": 0}
    rows.append({**base, "epsilon": None, "metric": "fid", "value": 1.0})
    experiments = {
        "dp2vae_eps10": {"datasets": ["digits"], "epsilons": GRID, "variants": ["dp2vae", "dp-merf", "real"]}
    }
    load_renderers().get("dp2vae/table1")(context("dp2vae/table1", experiments, {"dp2vae_eps10": rows}, tmp_path))
    out = pd.read_csv(tmp_path / "dp2vae-table1.csv", dtype={"epsilon": str})
    ours = out[out["source"] == "ours (smoke scale)"]
    private = ours[ours["method"] != "Real data"]
    assert sorted(private["epsilon"]) == sorted(["0.5", "1", "2"] * 2)  # never "inf", never pooled
    assert set(ours[ours["method"] == "Real data"]["epsilon"]) == {"inf"}
    merf = private[private["method"] == "DP-MERF"].set_index("epsilon")["digits FID"]
    assert merf.to_dict() == {"0.5": 200.0, "1": 100.0, "2": 50.0}
    assert "NOT THE PAPER'S SETTING" in (tmp_path / "dp2vae-table1.tex").read_text()


def test_planning_refuses_an_item_that_cannot_show_the_grid(tmp_path):
    """Before any job: an explicit target names what it cannot show; `all` and gathers leave it out."""
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text(
        "experiments:\n  p3gm_dimension: {epsilons: [0.5, 1, 2]}\n  p3gm_tabular: {epsilons: [0.5, 1, 2]}\n"
    )
    config = load_config([REPO_ROOT / "config.yaml", REPO_ROOT / "tests" / "config" / "smoke.yaml", overlay])
    plan = Rules(config, REPO_ROOT)
    with pytest.raises(ConfigError, match=r"p3gm/fig6 cannot show experiments.p3gm_dimension.epsilons 0.5, 2"):
        plan.check_targets(["figures/p3gm/fig6.pdf"], built_only=False)
    with pytest.raises(ConfigError, match=r"p3gm/fig6 cannot show"):
        plan.item_spec("p3gm", "fig6")
    plan.check_targets(["figures/p3gm/table6.pdf", "figures/experiments/p3gm_dimension.pdf"], built_only=False)
    settings = plan.item_spec("p3gm", "table6").settings  # the render job's Setting: the check's outcome
    assert settings["p3gm_tabular"].foreign_epsilons == (0.5, 2.0)
    assert "figures/p3gm/fig6.pdf" not in plan.default_targets()
    assert "figures/p3gm/table6.pdf" in plan.default_targets()
    assert any("cannot show" in p for p in plan.gather_pending("fig6")["p3gm/fig6"])
