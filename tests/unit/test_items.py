"""The item inventory: all 34 figures and tables of the papers (plus the project's own items: the audit and the
"today" comparison), their experiments, and derived status."""

from __future__ import annotations

from dpvae.items import ITEMS, PAPERS, items_with_id
from dpvae.status import done_items, missing_parts

EXPECTED = (
    ["privae/table1", "privae/fig1", "privae/fig2", "lvae/fig1", "lvae/fig2", "lvae/fig3"]
    + [f"p3gm/table{i}" for i in range(1, 9)]
    + [f"p3gm/fig{i}" for i in range(1, 10)]
    + ["dp2vae/table1", "dp2vae/table2"]
    + [f"dp2vae/fig{i}" for i in range(1, 10)]
)


def test_all_34_items_are_known():
    papers = sorted(key for key, item in ITEMS.items() if item.paper in PAPERS)
    assert papers == sorted(EXPECTED) and len(papers) == 34
    assert sorted(set(ITEMS) - set(papers)) == ["audit/dpsgd", "today/adult"]  # the project's own items (no paper)


def test_every_item_experiment_exists_in_both_configs(paper_config, smoke_config):
    for config in (paper_config, smoke_config):
        for item in ITEMS.values():
            for name in item.experiments:
                assert name in config["experiments"], (item.key, name)
                assert config["experiments"][name]["paper"] == item.paper


def test_status_is_derived_from_registries(paper_config, monkeypatch):
    from dpvae import status

    assert {i.key for i in done_items(paper_config)} == set(ITEMS)  # every renderer and analysis exists
    monkeypatch.delitem(status.RENDERERS._entries, "dp2vae/table1")  # as if its renderer were missing
    assert "renderer dp2vae/table1" in missing_parts(ITEMS["dp2vae/table1"], paper_config)
    assert "dp2vae/table1" not in {i.key for i in done_items(paper_config)}


def test_items_with_id_gathers_across_papers():
    assert {i.key for i in items_with_id("table2")} == {"p3gm/table2", "dp2vae/table2"}
    assert len(items_with_id("fig1")) == 4


def test_status_page_is_current(paper_config):
    """docs/status.md's status block equals `python -m dpvae status` (update it with --update)."""
    from dpvae.paths import REPO_ROOT
    from dpvae.status import with_status

    page = (REPO_ROOT / "docs" / "status.md").read_text()
    assert page == with_status(page, paper_config), "run: python -m dpvae status --update docs/status.md"


def test_today_table_is_current(paper_config):
    """docs/mst-aim.md's today block equals the table of reproductions/today.csv (update it with `status --update
    docs/mst-aim.md`), and a planted number there is caught."""
    from dpvae.paths import REPO_ROOT
    from dpvae.status import TODAY_BEGIN, with_status

    page = (REPO_ROOT / "docs" / "mst-aim.md").read_text()
    assert TODAY_BEGIN in page
    assert page == with_status(page, paper_config), "run: python -m dpvae status --update docs/mst-aim.md"
    block = page.split(TODAY_BEGIN, 1)[1]
    planted = page.replace(
        block, block.replace("| MST (McKenna et al. 2021) | 5 | 0.", "| MST (McKenna et al. 2021) | 5 | 1.", 1)
    )
    assert planted != page and with_status(planted, paper_config) == page


def test_readmes_headline_is_current(paper_config):
    """README.md's headline block equals the scorecard's headline (update it with `status --update README.md`), and
    a planted miscount there is caught."""
    from dpvae.paths import REPO_ROOT
    from dpvae.status import HEADLINE_BEGIN, with_status

    readme = (REPO_ROOT / "README.md").read_text()
    assert HEADLINE_BEGIN in readme
    assert readme == with_status(readme, paper_config), "run: python -m dpvae status --update README.md"
    planted = readme.replace(" within tolerance / ", "1 within tolerance / ", 1)
    assert planted != readme and with_status(planted, paper_config) == readme


def test_roles_name_each_experiment_of_an_item_once():
    """An item of several experiments that its renderer tells apart names a role per experiment (items.py)."""
    import pytest

    from dpvae.items import Item

    fig2 = ITEMS["dp2vae/fig2"]
    assert fig2.experiment_for("gs-wgan") == "dp2vae_gswgan_eps1" and fig2.experiment_for("main") == "dp2vae_eps1"
    with pytest.raises(ValueError, match="dp2vae/fig2 has no experiment in role 'attack'; its roles: main, gs-wgan"):
        fig2.experiment_for("attack")
    for item in ITEMS.values():
        assert not item.roles or len(set(item.roles)) == len(item.experiments), item.key
    with pytest.raises(ValueError, match="not one distinct role per experiment"):
        Item("p3gm", "fig10", "figure", "two experiments, one role", ("p3gm_tabular", "p3gm_images"), roles=("a",))
