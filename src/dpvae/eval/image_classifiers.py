"""DP²-VAE's utility metric: LR / MLP / CNN trained on synthetic images, accuracy on the real test split.

Protocol (docs/papers.md §4.3, A-D6 [choice]s): LR = scikit-learn `LogisticRegression()` with its defaults on
flattened pixels; MLP and CNN (`dpvae.models.classifiers`) with Adam's defaults, batch 512, 10 % of the
synthetic set held out for early stopping (patience 10 epochs, at most 300, best validation weights kept)
as in DP-Sinkhorn's code. "5 runs" are read as 5 classifier trainings (seeds) on one synthetic set, and
their mean (and standard deviation) is reported.

Device: the MLP and CNN train on the run's device. Their initial weights (built on the CPU after
`torch.manual_seed(seed)`), the validation split and every epoch's batch order come from CPU streams in the
same order on every device, so the MLP on CUDA follows the CPU's training up to float rounding; the CNN's
dropout masks come from the device's own generator (seeded alike), so on CUDA it is the same protocol with
other masks: its accuracy agrees with the CPU's statistically, not to rounding. LR (scikit-learn) runs on the CPU.

Resuming: each fit depends on nothing but its own seed, so a killed job resumes after its finished fits. Each fit's
accuracy goes into `<run>/metrics/.image_classifiers.fits.json` (`paths.metric_fits_file`, written atomically)
under a key of what decides every fit (options, the synthetic records' sha256, the test split's size, the classes,
the device, the seeds); a rerun skips the fits stored under its key (a file of another key is ignored and replaced)
and returns the same rows; the file is removed once every fit is done.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

from dpvae.data.declared import Facts
from dpvae.eval.base import EvalContext, Rows
from dpvae.eval.registry import register_metric
from dpvae.files import write_json
from dpvae.params import MetricOptions, param
from dpvae.paths import metric_fits_file
from dpvae.progress import Progress
from dpvae.provenance import sha256_json

Classifier = Literal["lr", "mlp", "cnn"]
NAME = "image_classifiers"
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ImageClassifierOptions(MetricOptions):
    repeats: int = param(5, "classifier trainings averaged per run", minimum=1)
    batch_size: int = param(512, "classifier batch size", minimum=1)
    max_epochs: int = param(300, "maximum classifier epochs", minimum=1)
    patience: int = param(10, "early-stopping patience on the synthetic validation split", minimum=1)
    val_fraction: float = param(
        0.1, "share of the synthetic set held out for early stopping", exclusive_minimum=0, maximum=0.9
    )
    classifiers: list[Classifier] = param(["lr", "mlp", "cnn"], "classifiers to train")
    max_test: int | None = param(None, "evaluate on the first n real test images (null = all)", minimum=1)


def _torch_accuracy(
    kind: str,
    x: np.ndarray,
    y: np.ndarray,
    test_x: np.ndarray,
    test_y: np.ndarray,
    classes: int,
    options: ImageClassifierOptions,
    seed: int,
    device: str = "cpu",
) -> float:
    """Train one MLP/CNN on `device` with early stopping on a seeded validation split; accuracy on
    (test_x, test_y). Random streams: see the module docstring."""
    import torch
    from torch.nn import functional as F

    from dpvae.models import classifiers

    generator = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = getattr(classifiers, kind)(tuple(x.shape[1:]), classes).to(device)
    optimizer = torch.optim.Adam(model.parameters())
    order = torch.randperm(len(y), generator=generator)
    n_val = max(1, int(round(options.val_fraction * len(y))))
    val, train = order[:n_val].to(device), order[n_val:]
    xt, yt = torch.from_numpy(x).to(device), torch.from_numpy(y).to(device)

    def accuracy(inputs: torch.Tensor, labels: torch.Tensor) -> float:
        model.eval()
        with torch.no_grad():
            hits = sum(
                int((model(inputs[s : s + 2048]).argmax(1) == labels[s : s + 2048]).sum())
                for s in range(0, len(labels), 2048)
            )
        return hits / len(labels)

    best, best_state, waited = -1.0, copy.deepcopy(model.state_dict()), 0
    progress = Progress(f"{kind} classifier (at most; early stopping)", options.max_epochs, "epochs")
    for _ in range(options.max_epochs):
        model.train()
        for part in train[torch.randperm(len(train), generator=generator)].to(device).split(options.batch_size):
            optimizer.zero_grad()
            F.cross_entropy(model(xt[part]), yt[part]).backward()
            optimizer.step()
        progress.advance()
        score = accuracy(xt[val], yt[val])
        if score > best:
            best, best_state, waited = score, copy.deepcopy(model.state_dict()), 0
        else:
            waited += 1
            if waited >= options.patience:
                break
    model.load_state_dict(best_state)
    return accuracy(torch.from_numpy(test_x).to(device), torch.from_numpy(test_y).to(device))


def _lr_accuracy(x: np.ndarray, y: np.ndarray, test_x: np.ndarray, test_y: np.ndarray, seed: int) -> float:
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    if len(np.unique(y)) < 2:
        return float(np.mean(test_y == y[0]))  # one class only: LR cannot be fitted, it predicts that class
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # defaults (max_iter=100), as the paper states
        model = LogisticRegression(random_state=seed).fit(x.reshape(len(x), -1), y)
    return float(model.score(test_x.reshape(len(test_x), -1), test_y))


@dataclass
class FinishedFits:
    """The resume file: each finished fit's accuracy by fit name ('lr', 'mlp/0', ...), under the key of what
    decides the fits."""

    path: Path
    key: str
    scores: dict[str, float] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path, key: str) -> FinishedFits:
        """The fits stored at `path` under `key`; none if the file is missing, unreadable or of another key."""
        fits = cls(path, key)
        if not path.is_file():
            return fits
        try:
            saved = json.loads(path.read_text())
            scores = {str(name): float(score) for name, score in saved["fits"].items()} if saved["key"] == key else {}
        except (OSError, ValueError, TypeError, KeyError, AttributeError) as error:
            log.warning("ignoring unreadable %s (%s); fitting every classifier", path, error)
            return fits
        if not scores:
            log.info("ignoring %s: written for other options, samples or device", path)
        else:
            log.info("resuming after %d finished fits (%s) from %s", len(scores), ", ".join(scores), path)
        fits.scores = scores
        return fits

    def score(self, name: str, fit: Callable[[], float]) -> float:
        """The stored accuracy of fit `name`, else `fit()`'s, stored at once (a file of another key is replaced)."""
        if name not in self.scores:
            self.scores[name] = float(fit())
            write_json(self.path, {"key": self.key, "fits": self.scores})
        return self.scores[name]

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def _fits_key(ctx: EvalContext, x: np.ndarray, y: np.ndarray, n_test: int, classes: int, seeds: dict[str, int]) -> str:
    """sha256 of what decides every fit: the options, the synthetic records, the test split's size, the classes,
    the device and each fit's seed."""
    records = hashlib.sha256()
    for array in (x, y):
        records.update(f"{array.dtype.str}{array.shape}".encode())
        records.update(np.ascontiguousarray(array).data)
    return sha256_json(
        {
            "options": ctx.options.to_dict(),
            "samples_sha256": records.hexdigest(),
            "n_test": n_test,
            "classes": classes,
            "device": ctx.run.device,
            "seeds": seeds,
        }
    )


def classifier_sizes(options: ImageClassifierOptions, facts: Facts, n_synthetic: int) -> list[tuple[str, str]]:
    """The CNN needs [C, H, W] images; a batch fits in the synthetic set; a classifier needs two classes."""
    problems = []
    if "cnn" in options.classifiers and facts.kind != "image":
        problems.append(("classifiers", "the CNN takes [C, H, W] images; leave 'cnn' out for [d] records"))
    if options.batch_size > n_synthetic:
        problems.append(("batch_size", f"batches of {options.batch_size} but a run draws {n_synthetic} records"))
    if facts.classes < 2:
        problems.append(("", "the data has one label class; a classifier needs two"))
    return problems


@register_metric(
    NAME,
    needs=("samples", "data"),
    options=ImageClassifierOptions,
    check=classifier_sizes,
    gpu=True,
    runtime=240,
    description="DP2-VAE's LR / MLP / CNN trained on synthetic images, accuracy on real test images",
)
def image_classifiers(ctx: EvalContext) -> Rows:
    x = np.ascontiguousarray(ctx.samples["x"], dtype=np.float32)
    y = np.ascontiguousarray(ctx.samples["y"], dtype=np.int64)
    test = ctx.data.test
    test_x, test_y = test.x[: ctx.options.max_test], test.y[: ctx.options.max_test]
    classes = int(max(y.max(), ctx.data.train.y.max(), test.y.max())) + 1
    fit_names = [
        (kind, ["lr"] if kind == "lr" else [f"{kind}/{repeat}" for repeat in range(ctx.options.repeats)])
        for kind in ctx.options.classifiers
    ]  # LR is deterministic (lbfgs): one fit stands for every repeat
    seeds = {name: ctx.run.seed_for(f"{NAME}/{name}") for _, names in fit_names for name in names}
    key = _fits_key(ctx, x, y, len(test_y), classes, seeds)
    fits = FinishedFits.load(metric_fits_file(ctx.out_dir, NAME), key)

    def fit(kind: str, seed: int) -> float:
        if kind == "lr":
            return _lr_accuracy(x, y, test_x, test_y, seed)
        return _torch_accuracy(kind, x, y, test_x, test_y, classes, ctx.options, seed, ctx.run.device)

    rows = []
    for kind, names in fit_names:
        scores = [fits.score(name, functools.partial(fit, kind, seeds[name])) for name in names]
        rows += [
            {"metric": "accuracy", "classifier": kind, "value": float(np.mean(scores))},
            {"metric": "accuracy_std", "classifier": kind, "value": float(np.std(scores))},
        ]
    fits.remove()  # every fit is done: the metric's JSON is the record
    # the protocol actually run (the item states it): synthetic training images, real test images
    o = ctx.options
    return rows + [
        {"metric": f"classifier_{name}", "value": float(value)}
        for name, value in (
            ("n_train", len(y)),
            ("n_test", len(test_y)),
            ("repeats", o.repeats),
            ("max_epochs", o.max_epochs),
            ("patience", o.patience),
        )
    ]
