"""DP²-VAE's image classifiers: accuracies in [0, 1] and the protocol actually run reported beside them; a killed
job resumes after its finished fits."""

from __future__ import annotations

import json
import zlib
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from dpvae.eval import image_classifiers as classifiers
from dpvae.eval.base import EvalContext
from dpvae.eval.image_classifiers import ImageClassifierOptions, image_classifiers
from dpvae.paths import metric_fits_file


def test_rows_report_accuracies_and_the_protocol_run(tmp_path):
    rng = np.random.default_rng(0)
    y = np.arange(60) % 3
    x = (rng.random((60, 1, 28, 28)) * 0.2 + y[:, None, None, None] / 3).astype(np.float32)  # separable by mean
    test = SimpleNamespace(x=x[:30], y=y[:30])
    run = SimpleNamespace(
        data=SimpleNamespace(train=SimpleNamespace(y=y), test=test), seed_for=lambda name: 0, device="cpu"
    )
    options = ImageClassifierOptions(repeats=2, max_epochs=2, patience=1, max_test=20, classifiers=["lr", "mlp"])
    ctx = EvalContext(run, options, tmp_path)  # (its resume file lives there while it runs)
    ctx.__dict__["samples"] = {"x": x, "y": y}
    rows = {(r["metric"], r.get("classifier")): r["value"] for r in image_classifiers(ctx)}
    assert rows[("accuracy", "lr")] == 1.0  # the classes differ in mean brightness
    assert 0 <= rows[("accuracy", "mlp")] <= 1 and rows[("accuracy_std", "mlp")] >= 0
    assert {k: rows[(f"classifier_{k}", None)] for k in ("n_train", "n_test", "repeats", "max_epochs", "patience")} == {
        "n_train": 60,
        "n_test": 20,
        "repeats": 2,
        "max_epochs": 2,
        "patience": 1,
    }


# -- resuming after finished fits (a job killed at a device call's budget reruns only the missing fits) -----------

RESUME_OPTIONS = ImageClassifierOptions(repeats=3, batch_size=32, max_epochs=3, patience=2, max_test=50)


def _resume_context(out_dir: Path, options: ImageClassifierOptions = RESUME_OPTIONS, shift: float = 0.0) -> EvalContext:
    """200 tiny 1×8×8 images of 3 classes (`shift` brightens the synthetic ones: other samples), a seed per fit."""
    rng = np.random.default_rng(1)
    y = np.arange(200) % 3
    real = (rng.random((200, 1, 8, 8)) * 0.6 + y[:, None, None, None] / 5).astype(np.float32)
    x = real + np.float32(shift)
    run = SimpleNamespace(
        data=SimpleNamespace(train=SimpleNamespace(y=y), test=SimpleNamespace(x=real[:100], y=y[:100])),
        seed_for=lambda name: zlib.crc32(name.encode()),
        device="cpu",
    )
    ctx = EvalContext(run, options, out_dir)
    ctx.__dict__["samples"] = {"x": x, "y": y}
    return ctx


@pytest.fixture
def one_thread():
    """Tiny fits on one thread (two threads on a shared 2-core machine take 50 times longer)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


class Killed(Exception):
    """What a killed job's last fit does here."""


class Fits:
    """Counts the fits trained (`_torch_accuracy` and `_lr_accuracy` calls); the `fail_at`-th MLP/CNN fit raises,
    as a job killed there."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, fail_at: int | None = None) -> None:
        self.torch = self.lr = 0
        torch_fit, lr_fit = classifiers._torch_accuracy, classifiers._lr_accuracy

        def torch_accuracy(*args, **kwargs):
            self.torch += 1
            if self.torch == fail_at:
                raise Killed
            return torch_fit(*args, **kwargs)

        def lr_accuracy(*args, **kwargs):
            self.lr += 1
            return lr_fit(*args, **kwargs)

        monkeypatch.setattr(classifiers, "_torch_accuracy", torch_accuracy)
        monkeypatch.setattr(classifiers, "_lr_accuracy", lr_accuracy)


def _killed_after_two_fits(ctx: EvalContext, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run the job until its 3rd MLP/CNN fit raises; the resume file it leaves."""
    Fits(monkeypatch, fail_at=3)
    with pytest.raises(Killed):
        image_classifiers(ctx)
    resume = metric_fits_file(ctx.out_dir, "image_classifiers")
    assert sorted(json.loads(resume.read_text())["fits"]) == ["lr", "mlp/0", "mlp/1"]
    return resume


@pytest.mark.usefixtures("one_thread")
def test_a_killed_job_reruns_only_its_missing_fits_and_returns_the_same_rows(tmp_path, monkeypatch):
    whole = Fits(monkeypatch)
    expected = image_classifiers(_resume_context(tmp_path / "whole"))
    assert (whole.lr, whole.torch) == (1, 6)
    assert len({r["value"] for r in expected if r["metric"] == "accuracy_std"}) > 1  # the fits differ
    _killed_after_two_fits(_resume_context(tmp_path / "killed"), monkeypatch)
    rerun = Fits(monkeypatch)
    rows = image_classifiers(_resume_context(tmp_path / "killed"))
    assert (rerun.lr, rerun.torch) == (0, 4), "the rerun trains the missing fits only"
    assert json.dumps(rows) == json.dumps(expected)


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize(
    "other",
    [{"options": replace(RESUME_OPTIONS, max_epochs=2)}, {"shift": 0.05}],
    ids=["other-options", "other-samples"],
)
def test_a_resume_file_of_other_options_or_samples_is_not_used(tmp_path, monkeypatch, other):
    _killed_after_two_fits(_resume_context(tmp_path / "killed", **other), monkeypatch)
    rerun = Fits(monkeypatch)
    rows = image_classifiers(_resume_context(tmp_path / "killed"))
    assert (rerun.lr, rerun.torch) == (1, 6), "every fit is trained anew"
    Fits(monkeypatch)
    assert json.dumps(rows) == json.dumps(image_classifiers(_resume_context(tmp_path / "fresh")))


@pytest.mark.usefixtures("one_thread")
def test_a_completed_job_leaves_no_resume_file(tmp_path, monkeypatch):
    resume = _killed_after_two_fits(_resume_context(tmp_path), monkeypatch)
    Fits(monkeypatch)
    image_classifiers(_resume_context(tmp_path))
    assert not resume.exists() and list(tmp_path.iterdir()) == []  # no temporary either
