"""DP²-VAE's image classifiers: accuracies in [0, 1] and the protocol actually run reported beside them; a
classifier's fits trained together (or alone, as on the CPU) equal its fits trained one after another
(`_serial_fit`, the code before they were vectorised); a killed job resumes after its finished fits."""

from __future__ import annotations

import copy
import json
import zlib
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from torch.nn import functional as F

from dpvae.eval import image_classifiers as classifiers
from dpvae.eval.base import EvalContext
from dpvae.eval.image_classifiers import ImageClassifierOptions, image_classifiers
from dpvae.models import classifiers as networks
from dpvae.paths import metric_fits_file
from support.tolerances import assert_planted_fails


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


# -- the fits of a classifier trained together are its fits trained one after another --------------------------


def _serial_fit(
    kind: str, x: np.ndarray, y: np.ndarray, test: tuple[np.ndarray, np.ndarray], options, seed: int
) -> tuple[float, dict[str, torch.Tensor], list[float]]:
    """One fit alone, as the metric trained each before its fits were vectorised: its test accuracy, best weights
    and validation score after each epoch run."""
    generator = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = getattr(networks, kind)(tuple(x.shape[1:]), 3)
    optimizer = torch.optim.Adam(model.parameters())
    order = torch.randperm(len(y), generator=generator)
    n_val = max(1, int(round(options.val_fraction * len(y))))
    val, train = order[:n_val], order[n_val:]
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)

    def accuracy(inputs: torch.Tensor, labels: torch.Tensor) -> float:
        model.eval()
        with torch.no_grad():
            return int((model(inputs).argmax(1) == labels).sum()) / len(labels)

    best, best_state, waited, scores = -1.0, copy.deepcopy(model.state_dict()), 0, []
    for _ in range(options.max_epochs):
        model.train()
        for part in train[torch.randperm(len(train), generator=generator)].split(options.batch_size):
            optimizer.zero_grad()
            F.cross_entropy(model(xt[part]), yt[part]).backward()
            optimizer.step()
        scores.append(accuracy(xt[val], yt[val]))
        if scores[-1] > best:
            best, best_state, waited = scores[-1], copy.deepcopy(model.state_dict()), 0
        else:
            waited += 1
            if waited >= options.patience:
                break
    model.load_state_dict(best_state)
    return accuracy(torch.from_numpy(test[0]), torch.from_numpy(test[1])), best_state, scores


def _faint_images(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """n 1×8×8 images of 3 classes that differ faintly in brightness: the MLP learns them in part, so its
    validation accuracy rises and falls and fits stop at different epochs."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 3
    return (rng.random((n, 1, 8, 8)) + 0.03 * y[:, None, None, None]).astype(np.float32), y


FAINT = (*_faint_images(300, 2), _faint_images(90, 3))  # synthetic images, labels, (test images, labels)
#: fits trained together (vmap, float32) against one after another: a few hundred steps of Adam, too long for a
#: useful rounding bound; measured bit-equal on this 2-core CPU (one thread, as the tests run; seeds as written
#: and shifted by one; benchmarks/measured/cpu-2026-12-01/tolerances.log), so this tolerance only absorbs
#: another CPU's kernels reordering a sum (a few float32 ulps per step); two seeds' fits lie > 100 of it apart
RTOL, ATOL = 1e-5, 1e-6


def _fits_equal_serial_fits(options: ImageClassifierOptions, seeds: list[int]) -> list[list[float]]:
    """The MLP's fits of `seeds` trained together against each trained alone: the same test accuracies, best
    weights equal up to float rounding (RTOL, ATOL); each serial fit's validation scores. Fits of two seeds
    mixed up (the planted difference) lie far outside the tolerance."""
    x, y, test = FAINT
    got = classifiers._torch_accuracies("mlp", x, y, *test, 3, options, seeds)
    _, best = classifiers._fit_together("mlp", x, y, 3, options, seeds, "cpu")
    scores, states = [], []
    for fit, seed in enumerate(seeds):
        accuracy, state, fit_scores = _serial_fit("mlp", x, y, test, options, seed)
        assert got[fit] == accuracy, f"fit {fit} (seed {seed})"
        for name, value in state.items():
            torch.testing.assert_close(best[name][fit], value, rtol=RTOL, atol=ATOL, msg=f"fit {fit}: {name}")
        scores.append(fit_scores)
        states.append(state)
    if len(seeds) > 1:
        assert_planted_fails({name: best[name][0] for name in states[1]}, states[1], RTOL, ATOL)
    return scores


@pytest.mark.usefixtures("one_thread")
def test_mlp_fits_trained_together_equal_each_fit_trained_alone():
    """Batches of 16 of 270 training images (the last one partial), 3 epochs with no early stop."""
    options = ImageClassifierOptions(batch_size=16, max_epochs=3, patience=4)
    assert [len(scores) for scores in _fits_equal_serial_fits(options, [11, 12, 13])] == [3, 3, 3]


@pytest.mark.usefixtures("one_thread")
def test_a_fit_alone_as_on_the_cpu_equals_it_trained_serially():
    """A group of one (the CPU's: the loop without vmap) follows the serial fit too."""
    options = ImageClassifierOptions(batch_size=16, max_epochs=3, patience=4)
    assert [len(scores) for scores in _fits_equal_serial_fits(options, [12])] == [3]


def test_fits_train_together_on_cuda_and_alone_on_the_cpu():
    names = ["cnn/0", "cnn/1", "cnn/2"]
    assert classifiers.fit_groups(names, "cuda") == classifiers.fit_groups(names, "cuda:1") == [names]
    assert classifiers.fit_groups(names, "cpu") == [["cnn/0"], ["cnn/1"], ["cnn/2"]]


@pytest.mark.usefixtures("one_thread")
def test_each_fit_stops_early_on_its_own_validation_split():
    """Patience 2, two fits: seed 4's stops at epoch 3 and would beat its best validation score had it trained on,
    seed 0's stops at epoch 7, its best weights those of an epoch after the first fit stopped. Together both step
    to epoch 7; the first keeps its own best weights and score."""
    options = ImageClassifierOptions(batch_size=16, max_epochs=12, patience=2)
    early, late = _fits_equal_serial_fits(options, [4, 0])
    assert len(early) + options.patience <= len(late) < options.max_epochs, (len(early), len(late))
    trained_on = _serial_fit("mlp", *FAINT, replace(options, patience=options.max_epochs), 4)[2]
    assert max(trained_on[len(early) : len(late)]) > max(early), "the early fit would have found better weights"


# -- resuming after finished classifiers (a job killed at a device call's budget reruns only the missing ones) -----

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
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


class Killed(Exception):
    """What a killed job's last fit does here."""


class Fits:
    """Counts the trainings (`_torch_accuracies` calls, one a group of fits: on the CPU one fit, and `_lr_accuracy`
    calls); the `fail_at`-th MLP/CNN training raises, as a job killed there."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, fail_at: int | None = None) -> None:
        self.torch = self.lr = 0
        torch_fit, lr_fit = classifiers._torch_accuracies, classifiers._lr_accuracy

        def torch_accuracy(*args, **kwargs):
            self.torch += 1
            if self.torch == fail_at:
                raise Killed
            return torch_fit(*args, **kwargs)

        def lr_accuracy(*args, **kwargs):
            self.lr += 1
            return lr_fit(*args, **kwargs)

        monkeypatch.setattr(classifiers, "_torch_accuracies", torch_accuracy)
        monkeypatch.setattr(classifiers, "_lr_accuracy", lr_accuracy)


def _killed_in_the_cnn(ctx: EvalContext, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run the job until its second CNN fit raises; the resume file it leaves (LR's score, the MLP's 3 fits and
    the CNN's first, each alone as on the CPU)."""
    Fits(monkeypatch, fail_at=5)
    with pytest.raises(Killed):
        image_classifiers(ctx)
    resume = metric_fits_file(ctx.out_dir, "image_classifiers")
    fits = json.loads(resume.read_text())["fits"]
    assert list(fits) == ["lr", "mlp/0", "mlp/1", "mlp/2", "cnn/0"] and {len(f) for f in fits.values()} == {1}
    return resume


@pytest.mark.usefixtures("one_thread")
def test_a_killed_job_reruns_only_its_missing_fits_and_returns_the_same_rows(tmp_path, monkeypatch):
    whole = Fits(monkeypatch)
    expected = image_classifiers(_resume_context(tmp_path / "whole"))
    assert (whole.lr, whole.torch) == (1, 6)
    assert len({r["value"] for r in expected if r["metric"] == "accuracy_std"}) > 1  # the fits differ
    _killed_in_the_cnn(_resume_context(tmp_path / "killed"), monkeypatch)
    rerun = Fits(monkeypatch)
    rows = image_classifiers(_resume_context(tmp_path / "killed"))
    assert (rerun.lr, rerun.torch) == (0, 2), "the rerun trains the CNN's last 2 fits only"
    assert json.dumps(rows) == json.dumps(expected)


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize(
    "other",
    [{"options": replace(RESUME_OPTIONS, max_epochs=2)}, {"shift": 0.05}, {"training": "serial"}],
    ids=["other-options", "other-samples", "other-training"],
)
def test_a_resume_file_of_other_options_samples_or_training_is_not_used(tmp_path, monkeypatch, other):
    """Other training: a file of fits trained another way (the serial fits' files) never mixes in."""
    with monkeypatch.context() as killed:
        killed.setattr(classifiers, "TRAINING", other.pop("training", classifiers.TRAINING))
        _killed_in_the_cnn(_resume_context(tmp_path / "killed", **other), killed)
    rerun = Fits(monkeypatch)
    rows = image_classifiers(_resume_context(tmp_path / "killed"))
    assert (rerun.lr, rerun.torch) == (1, 6), "every fit is trained anew"
    Fits(monkeypatch)
    assert json.dumps(rows) == json.dumps(image_classifiers(_resume_context(tmp_path / "fresh")))


@pytest.mark.usefixtures("one_thread")
def test_a_completed_job_leaves_no_resume_file(tmp_path, monkeypatch):
    resume = _killed_in_the_cnn(_resume_context(tmp_path), monkeypatch)
    Fits(monkeypatch)
    image_classifiers(_resume_context(tmp_path))
    assert not resume.exists() and list(tmp_path.iterdir()) == []  # no temporary either


def test_image_lr_fits_each_reading_on_the_same_images_with_its_max_iter(tmp_path, monkeypatch):
    """`image_lr` (the DP-MERF LR study): one row per reading, scikit-learn's default max_iter (100) for `lr` and
    DP-MERF's benchmark code's 5000 for `lr-dp-merf`, each fitted on the run's images with one seed."""
    from dpvae.eval import image_classifiers as classifiers

    rng = np.random.default_rng(0)
    y = np.arange(60) % 3
    x = (rng.random((60, 1, 28, 28)) * 0.2 + y[:, None, None, None] / 3).astype(np.float32)
    run = SimpleNamespace(data=SimpleNamespace(test=SimpleNamespace(x=x[:30], y=y[:30])), seed_for=lambda name: 7)
    ctx = EvalContext(run, classifiers.ImageLROptions(), tmp_path)
    ctx.__dict__["samples"] = {"x": x, "y": y}
    rows = classifiers.image_lr(ctx)
    assert [(r["metric"], r["classifier"], r["value"]) for r in rows] == [
        ("accuracy", "lr", 1.0),
        ("accuracy", "lr-dp-merf", 1.0),
    ]  # the classes differ in mean brightness
    calls = []
    fit = classifiers._lr_accuracy
    monkeypatch.setattr(classifiers, "_lr_accuracy", lambda *a: calls.append((a[0] is not None, a[4], a[5])) or fit(*a))
    classifiers.image_lr(ctx)
    assert calls == [(True, 7, 100), (True, 7, 5000)]
