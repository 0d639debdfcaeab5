"""The `precision` setting: validated, in a run's spec only where it changes the run, recorded in train.json,
applied by the training loops (bf16 autocast on the CPU here) and never touching the privacy ledger."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from dpvae import stages
from dpvae.config import ConfigError, load_config
from dpvae.models import precision
from dpvae.paths import REPO_ROOT, ledger_file, model_path, train_record
from dpvae.runs import experiment_runs, run_spec
from support.toy_runs import toy_spec, write_toy_dataset


def test_an_unknown_precision_is_refused_in_one_line_naming_the_key():
    with pytest.raises(ConfigError) as refused:
        load_config([REPO_ROOT / "config.yaml"], {"precision": "fp16"})
    problems = str(refused.value).splitlines()[1:]
    assert len(problems) == 1 and "'precision'" in problems[0] and "fp16" in problems[0]


def test_fp32_leaves_specs_as_they_were_and_other_precisions_mark_the_runs_they_change(paper_config):
    runs = {
        experiment_runs(paper_config, name)[0]
        for name, exp in paper_config["experiments"].items()
        if "analysis" not in exp
    }
    without_key = {k: v for k, v in paper_config.items() if k != "precision"}  # a config from before the key
    assert paper_config["precision"] == "fp32"
    assert all(run_spec(paper_config, run) == run_spec(without_key, run) for run in runs)
    bf16 = {**paper_config, "precision": "bf16"}
    methods = {run: paper_config["variants"][run.base_variant]["method"] for run in runs}
    marked = {methods[run] for run in runs if run_spec(bf16, run).precision == "bf16"}
    assert {"privae", "p3gm", "lvae"} <= marked and "dp2vae" not in marked and "gs-wgan" not in marked


def test_the_contexts_set_and_restore_what_they_promise():
    flags = lambda: (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)  # noqa: E731
    before = flags()
    with precision.training("tf32"):
        assert flags() == (True, True)
        with precision.private("tf32"):
            assert flags() == (False, False)
        assert flags() == (True, True)
    assert flags() == before
    with precision.forward("bf16", "cpu"):
        assert torch.is_autocast_enabled("cpu") and torch.get_autocast_dtype("cpu") == torch.bfloat16
    with precision.forward("bf16", "cpu", per_example=True), precision.private("fp32"):
        assert not torch.is_autocast_enabled("cpu") and flags() == (False, False)  # no TF32 in a private step
    assert flags() == before
    with pytest.raises(ValueError, match="precision"):
        precision.training("fp16")


def _train(root: Path, tmp_path: Path, method: str, private: bool, name: str, **extra) -> Path:
    noise = {"sigma_sgd": 4.0} if private else {}  # no calibration: seconds
    spec = replace(toy_spec(root, tmp_path / name, method=method, private=private, **noise), **extra)
    stages.train(spec)
    return Path(spec.run)


@pytest.mark.parametrize(("method", "private"), [("dp-vae", True), ("vae-mlp", False)])
def test_a_bf16_run_trains_records_its_precision_and_keeps_the_ledger(tmp_path, method, private):
    """DP-SGD (the engine's forward stays fp32: it refuses bf16 layer outputs) and a non-private run
    (autocast applies: the model moves away from the fp32 one)."""
    root = write_toy_dataset(tmp_path / "data")
    fp32 = _train(root, tmp_path, method, private, "fp32")
    bf16 = _train(root, tmp_path, method, private, "bf16", precision="bf16")
    assert json.loads(train_record(fp32).read_text())["precision"] == "fp32"
    assert json.loads(train_record(bf16).read_text())["precision"] == "bf16"
    assert ledger_file(fp32).read_bytes() == ledger_file(bf16).read_bytes()
    weights = [torch.load(model_path(run) / "model.pt", weights_only=True) for run in (fp32, bf16)]
    assert all(torch.isfinite(w).all() for model in weights for w in model.values())
    same = all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])
    assert same == private  # the private forward is fp32 at either setting
