"""The today item's renderer: AUROC / AUPRC (the mean of the four classifiers) and 2-way TVD per method against ε,
the mean over seeds with its 95 % t-interval, the figure labelled as the project's comparison and its CSV."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from pypdf import PdfReader
from scipy import stats

from dpvae.analyses.tidy import tidy
from dpvae.items import get_item
from dpvae.render.base import RenderContext
from dpvae.render.today import today_adult

SEEDS = {1.0: 3, 10.0: 1}  # target ε -> seeds run: an interval where there are three, none for one


def tidy_rows(rng: np.random.Generator) -> pd.DataFrame:
    rows = []
    for variant in ("mst", "p3gm"):
        for epsilon, seeds in SEEDS.items():
            for seed in range(seeds):
                base = {"experiment": "today_adult", "dataset": "adult", "variant": variant, "method": variant}
                base |= {"epsilon": epsilon, "seed": seed}
                for metric in ("auroc", "auprc"):
                    for classifier in ("lr", "ab", "gbm", "xgb", "mean4"):
                        rows.append({**base, "metric": metric, "classifier": classifier, "value": rng.uniform()})
                for metric in ("tvd2", "tvd2_notebook", "epsilon_spent", "epsilon_spent_sound"):
                    rows.append({**base, "metric": metric, "value": rng.uniform()})
    return tidy(rows)


def render(tmp_path, table: pd.DataFrame) -> pd.DataFrame:
    config = {
        "experiments": {"today_adult": {"datasets": ["adult"], "variants": ["mst", "p3gm"]}},
        "delta": 1e-5,
        "variants": {},
    }
    prefix = tmp_path / "adult"
    today_adult(RenderContext(get_item("today/adult"), str(prefix), {"today_adult": table}, [], config))
    assert (tmp_path / "adult.pdf").is_file() and (tmp_path / "adult.png").is_file()
    return pd.read_csv(tmp_path / "adult.csv", keep_default_na=False, na_values=[""])


def test_each_point_is_the_mean_over_seeds_with_its_t_interval(tmp_path) -> None:
    table = tidy_rows(np.random.default_rng(7))
    written = render(tmp_path, table)
    drawn = {("auroc", "mean4"), ("auprc", "mean4"), ("tvd2", ""), ("epsilon_spent", ""), ("epsilon_spent_sound", "")}
    assert set(zip(written["metric"], written["classifier"].fillna(""))) == drawn
    assert len(written) == len(drawn) * 2 * len(SEEDS)  # per metric, variant and ε
    for point in written.itertuples():
        where = (table["metric"] == point.metric) & (table["variant"] == point.variant)
        where &= table["epsilon"].astype(float) == point.epsilon
        if isinstance(point.classifier, str):
            where &= table["classifier"] == point.classifier
        values = table.loc[where, "value"].astype(float)
        assert point.n == len(values) == SEEDS[point.epsilon]
        assert point.mean == pytest.approx(values.mean(), rel=1e-5)
        if point.n == 1:
            assert math.isnan(point.ci_low) and math.isnan(point.ci_high)
            continue
        low, high = stats.t.interval(0.95, len(values) - 1, loc=values.mean(), scale=stats.sem(values))
        assert (point.ci_low, point.ci_high) == pytest.approx((low, high), rel=1e-5)


def test_the_page_says_it_is_the_projects_comparison_not_a_reproduction(tmp_path) -> None:
    render(tmp_path, tidy_rows(np.random.default_rng(0)))
    text = " ".join(" ".join(page.extract_text().split()) for page in PdfReader(tmp_path / "adult.pdf").pages)
    assert "not a reproduction" in text and "MST (McKenna et al. 2021)" in text and "P3GM" in text


def test_an_empty_build_still_renders_a_page(tmp_path) -> None:
    written = render(tmp_path, tidy([]))
    assert written.empty


def test_the_recorded_table_is_the_mean_over_seeds_with_its_t_interval() -> None:
    """docs/mst-aim.md's table from recorded rows: AUROC (mean4, ">50K" positive; the ≤50K rows ignored) as mean
    [t-interval] over three seeds, the mean alone for one seed, the 2-way TVD's mean, '-' where nothing is recorded."""
    from dpvae.render.today import recorded_markdown

    rows = []
    for variant, seeds in (("p3gm", {1.0: 3, 10.0: 1}), ("aim", {1.0: 1})):
        for epsilon, n in seeds.items():
            for seed in range(n):
                base = {"item": "adult", "method": variant, "epsilon": epsilon, "seed": seed}
                rows += [
                    {**base, "metric": "auroc", "classifier": "mean4", "setting": "", "value": 0.5 + 0.1 * seed},
                    {**base, "metric": "auroc", "classifier": "mean4", "setting": "positive=le50K", "value": 9.0},
                    {**base, "metric": "auroc", "classifier": "lr", "setting": "", "value": 8.0},
                    {**base, "metric": "tvd2", "classifier": "", "setting": "", "value": 0.2 + 0.1 * seed},
                ]
    lines = recorded_markdown(pd.DataFrame(rows)).splitlines()
    assert lines[0] == "| method | seeds | AUROC ε 1 | ε 10 | 2-way TVD ε 1 | ε 10 |"
    half = stats.t.ppf(0.975, 2) * 0.1 / math.sqrt(3)
    assert lines[2] == "| AIM (McKenna et al. 2022) | 1 | 0.500 | - | 0.200 | - |"
    assert (
        lines[3]
        == f"| P3GM (code: N(0, I) prior) | 1-3 | 0.600 [{0.6 - half:.3f}, {0.6 + half:.3f}] | 0.500 | 0.300 | 0.200 |"
    )
