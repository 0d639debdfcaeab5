"""The helpers every renderer shares: seed summaries, the mean ± sd cell, stand-ins and run paths."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from dpvae.paths import run_dir, run_dir_parts
from dpvae.render.common import dataset_label, is_real_data, mean_sd, run_of
from dpvae.runs import Run
from dpvae.seeds import SeedStats, seed_summary


def test_one_seed_has_no_sd_and_shows_none():
    one = SeedStats.of([0.5])
    assert one.n == 1 and math.isnan(one.sd)
    assert mean_sd(one) == "0.5000 (n=1)"
    assert mean_sd(SeedStats.of([0.5, 0.7])) == "0.6000 ± 0.1414 (n=2)"
    assert mean_sd(SeedStats.of([0.5, 0.7]), 2, with_n=False) == "0.60 ± 0.14"
    assert mean_sd(SeedStats.of([]), missing="n/a") == "n/a"


def test_seed_summary_groups_with_ddof_1_and_nan_sd_for_one_seed():
    frame = pd.DataFrame({"variant": ["a", "a", "b"], "value": [1.0, 3.0, 2.0]})
    summary = seed_summary(frame, ["variant"]).set_index("variant")
    assert summary.loc["a", "mean"] == 2.0 and summary.loc["a", "sd"] == pytest.approx(math.sqrt(2))
    assert summary.loc["b", "n"] == 1 and math.isnan(summary.loc["b", "sd"])


def test_run_of_inverts_run_dir():
    run = Run("credit-standin", "p3gm@ratio=0.1", "1", 3)
    path = f"/somewhere/{run.path('smoke')}/metrics/auroc.json"
    assert run_dir_parts(path) == ("smoke", run.id) and run_dir("smoke", run.id) == run.path("smoke")
    assert run_of(path) == run
    with pytest.raises(ValueError):
        run_of("results/smoke/tables/x.csv")


def test_stand_ins_are_labelled_with_their_real_dataset():
    assert dataset_label("credit-standin") == "Kaggle Credit (stand-in data)"
    assert dataset_label("mnist-p3gm") == "MNIST"
    assert dataset_label("celeba32-standin", {"celeba": "CelebA"}) == "CelebA (stand-in data)"


def test_real_data_is_told_by_the_configured_method_not_the_name():
    config = {"variants": {"original": {"method": "real"}, "real": {"method": "p3gm"}, "sweep": {"method": "real"}}}
    assert is_real_data(config, "original") and is_real_data(config, "sweep@n=10")
    assert not is_real_data(config, "real")  # a variant named so that runs a generator
