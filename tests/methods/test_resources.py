"""A training job's resources follow from what its data is (record size), never from the dataset's name: a
renamed copy of MNIST's registry entry gets MNIST's resources under every P3GM-paper method."""

from __future__ import annotations

import copy
from dataclasses import replace

from dpvae.config import validate_config
from dpvae.data.declared import Facts
from dpvae.data.registry import DATASETS
from dpvae.methods.base import LARGE_RECORD, large_records
from dpvae.runs import is_private
from dpvae.workflow import Rules

VARIANTS = ["p3gm", "p3gm-efficiency", "dp-vae", "dp-gm", "ryan", "privbayes", "vae-mlp", "real"]


def _rules(paper_config: dict, datasets: list[str]) -> Rules:
    config = copy.deepcopy(paper_config)
    config["experiments"]["resources"] = {
        "description": "every P3GM-paper method on each dataset",
        "datasets": datasets,
        "variants": VARIANTS,
        "epsilons": [1],
        "seeds": 1,
        "metrics": [],
    }
    return Rules(validate_config(config))


def test_a_renamed_copy_of_mnist_gets_mnists_resources(paper_config, monkeypatch):
    monkeypatch.setitem(DATASETS, "digits-784", replace(DATASETS["mnist-p3gm"], dataset_id="digits-784"))
    rules = _rules(paper_config, ["mnist-p3gm", "digits-784", "isolet"])

    def resources(dataset: str, variant: str):
        return rules.train_resources(dataset, variant, "1" if is_private(rules.config, variant) else "inf", 0)

    for variant in VARIANTS:
        assert resources("digits-784", variant) == resources("mnist-p3gm", variant), variant
    heavier = {v for v in VARIANTS if resources("mnist-p3gm", v) != resources("isolet", v)}
    assert heavier == {"p3gm-efficiency", "dp-vae", "dp-gm", "ryan"}  # ISOLET's 617 columns stay below the line


def test_large_records_are_a_record_size_and_unknown_facts_are_not_large():
    assert large_records(Facts((1, 28, 28), 10, 10, 10)) and large_records(Facts((LARGE_RECORD,), 10, 10, 2))
    assert not large_records(Facts((617,), 7000, 800, 26)) and not large_records(None)
