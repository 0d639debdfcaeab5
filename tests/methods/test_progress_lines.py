"""A private run's log says how far it is and the ε spent so far, and prints no other number: no loss trace.

Tiny private runs of a few methods (P3GM, DP-VAE, DP-GM and PrivBayes on the toy table; PriVAE on the pinwheel
from the mirror) with a progress line at every step (`DPVAE_PROGRESS_SECONDS=0`): their logs (stdout, stderr and
the `dpvae` loggers, as a job's log holds them) have progress lines carrying ε, and `data_numbers` finds no line
with a number outside a progress line or a known public line (tests/unit/test_progress.py plants a loss and sees
the checker fail).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import pytest

from dpvae import stages
from support.progress_logs import data_numbers
from support.toy_runs import toy_spec, write_toy_dataset

TOY = {
    "p3gm": {"epochs": 1, "pretrain_steps": 3},
    "dp-vae": {"epochs": 1},
    "dp-gm": {"epochs": 1, "clusters": 2},
    "privbayes": None,  # its defaults
}


#: PriVAE's MLP VAE with term-wise DP-SGD on the 2-d pinwheel (tests/methods/test_privae.py's, one epoch)
PINWHEEL = {
    "engine": "termwise", "optimizer": "sgd", "lr": 0.01, "batch_size": 20, "groups": 1, "mc_samples": 4, "epochs": 1,
    "latent_dim": 2, "prior": "mog", "beta": 0.0, "divergence": "kl_pq", "alpha": 1.0, "clip_sample": 0.05,
    "clip_batch": 0.0005, "kappa": "paper",
}  # fmt: skip


def job_log(caplog, capfd) -> str:
    """What a job's log would hold: its output and the messages of the dpvae loggers."""
    out, err = capfd.readouterr()
    return "\n".join([out, err, *(record.getMessage() for record in caplog.records)])


def check_log(log: str, method: str) -> None:
    lines = [line for line in log.splitlines() if line.startswith("progress ")]
    private = [line for line in lines if ", eps paper " in line and " target 1" in line]
    assert private, f"{method}: no progress line with ε in its log:\n{log}"
    assert data_numbers(log) == [], f"{method}: numbers outside the progress lines"


@pytest.fixture()
def logged(caplog, monkeypatch):
    monkeypatch.setenv("DPVAE_PROGRESS_SECONDS", "0")
    caplog.set_level(logging.INFO, logger="dpvae")


@pytest.mark.parametrize("method", list(TOY))
def test_a_tiny_private_run_logs_progress_with_epsilon_and_no_loss(method, logged, caplog, capfd, tmp_path):
    spec = toy_spec(write_toy_dataset(tmp_path / "data"), tmp_path, method)
    spec = replace(spec, params={} if TOY[method] is None else {**spec.params, **TOY[method]})
    capfd.readouterr()
    stages.train(spec)
    check_log(job_log(caplog, capfd), method)


def test_a_tiny_privae_run_logs_progress_with_epsilon_and_no_loss(
    logged, caplog, capfd, tmp_path, prepared_from_mirror
):
    spec = toy_spec(prepared_from_mirror("pinwheel").parents[1], tmp_path, "privae")
    spec = replace(spec, dataset="pinwheel", params={**PINWHEEL, "max_train": 100})  # 5 steps
    capfd.readouterr()
    stages.train(spec)
    check_log(job_log(caplog, capfd), "privae")


def test_progress_lines_change_no_output_byte(caplog, monkeypatch, tmp_path):
    """A P3GM run (encoding, pre-training, DP-SGD, sampling) with a line at every step and with lines at the loops'
    ends only: the same model, ledger and samples."""
    data, outputs = write_toy_dataset(tmp_path / "data"), []
    caplog.set_level(logging.INFO, logger="dpvae")
    for seconds in ("0", "1e9"):
        monkeypatch.setenv("DPVAE_PROGRESS_SECONDS", seconds)
        caplog.clear()
        spec = toy_spec(data, tmp_path / seconds, "p3gm")
        spec = replace(spec, params={**spec.params, **TOY["p3gm"]})
        stages.train(spec)
        stages.sample(spec.run, 50)
        run = Path(spec.run)
        kept = [p for p in sorted(run.rglob("*")) if p.is_file() and p.name != "train.json"]  # its path, seconds
        outputs.append({p.relative_to(run): p.read_bytes() for p in kept})
        lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("progress ")]
        assert len(lines) > 10 if seconds == "0" else len(lines) == 4  # at the end of each loop only
    assert {"privacy.json", "samples.npz", "model.pt"} <= {p.name for p in outputs[0]}
    assert outputs[0] == outputs[1]
