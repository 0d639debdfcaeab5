"""DP²-VAE's utility metric: LR / MLP / CNN trained on synthetic images, accuracy on the real test split.

Protocol (docs/papers.md §4.3, A-D6 [choice]s): LR = scikit-learn `LogisticRegression()` with its defaults on
flattened pixels; MLP and CNN (`dpvae.models.classifiers`) with Adam's defaults, batch 512, 10 % of the
synthetic set held out for early stopping (patience 10 epochs, at most 300, best validation weights kept)
as in DP-Sinkhorn's code. "5 runs" are read as 5 classifier trainings (seeds) on one synthetic set, and
their mean (and standard deviation) is reported.

Fits together: on a GPU a classifier's `repeats` fits (MLP or CNN) train in one vectorised loop (`torch.func`:
their weights stacked, one `vmap`ped forward and backward a step, one Adam over the stack, which is R separate
Adams since its update is elementwise), so one step's operator calls serve every fit. On the CPU they train one at
a time (a group of one: the same loop without `vmap`), since there R stacked fits cost more than R fits alone (the
CNN's grouped convolutions: 2.4x a fit's time per fit, benchmarks/README.md) and each fit stops at its own epoch.
Each fit keeps its own: initial weights (built on the CPU after `torch.manual_seed(seed)`), a CPU
`torch.Generator(seed)` for its validation split and every epoch's batch order (the draws a fit trained alone makes,
in its order), early stopping on its own split and its best weights, which give its test accuracy. The cost
together: every fit steps until the last one stops (or `max_epochs`), a stopped fit's score and best weights
frozen, so the loop runs the slowest fit's epochs (R times its FLOPs; on a host-bound GPU a step of R fits takes
about one fit's).

Random streams: the MLP draws nothing else, so on every device each of its fits follows the serial CPU training of
its seed up to float rounding (tested). The CNN's dropout masks come from one stream per group of fits: the
device's generator seeded, once the weights are built, by a hash of the group's seeds (deterministic per run and
device); a group of R fits draws other masks than a fit trained alone, so its accuracies agree with such fits
statistically, not to rounding. LR (scikit-learn) runs on the CPU.

Resuming: the unit of work is one group of fits (LR's one fit; on a GPU the MLP's or CNN's R together, on the CPU
each fit alone), depending on nothing but their seeds, so a killed job resumes after its finished groups. Their
accuracies go into `<run>/metrics/.image_classifiers.fits.json` (`paths.metric_fits_file`, written atomically)
under a key of what decides every fit (options, the synthetic records' sha256, the test split's size, the classes,
the device, the seeds, `TRAINING`: a file of another training never mixes in); a rerun skips the groups stored
under its key (a file of another key is ignored and replaced) and returns the same rows; the file is removed once
every fit is done.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

from dpvae.data.declared import Facts
from dpvae.eval.base import EvalContext, Rows
from dpvae.eval.registry import register_metric
from dpvae.files import write_json
from dpvae.params import MetricOptions, param
from dpvae.paths import metric_fits_file
from dpvae.progress import Progress
from dpvae.provenance import sha256_json

if TYPE_CHECKING:
    import torch

Classifier = Literal["lr", "mlp", "cnn"]
NAME = "image_classifiers"
#: how the fits train, in the resume file's key (the serial fits' files had none)
TRAINING = "a classifier's repeats in one torch.func.vmap loop on a GPU, one at a time on the CPU; HalfDropout"
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


#: each fit's share of right answers, given the fits' stacked weights, inputs [R, n, ...] and labels [R, n]
Scorer = Callable[[dict[str, "torch.Tensor"], "torch.Tensor", "torch.Tensor"], list[float]]


def _torch_accuracies(
    kind: str,
    x: np.ndarray,
    y: np.ndarray,
    test_x: np.ndarray,
    test_y: np.ndarray,
    classes: int,
    options: ImageClassifierOptions,
    seeds: list[int],
    device: str = "cpu",
) -> list[float]:
    """Train one MLP/CNN per seed, all together on `device` (`_fit_together`); each fit's accuracy on
    (test_x, test_y) with its best weights."""
    import torch

    accuracies, best = _fit_together(kind, x, y, classes, options, seeds, device)
    tx, ty = torch.from_numpy(test_x).to(device), torch.from_numpy(test_y).to(device)
    return accuracies(best, tx.expand(len(seeds), *tx.shape), ty.expand(len(seeds), *ty.shape))


def _fit_together(
    kind: str,
    x: np.ndarray,
    y: np.ndarray,
    classes: int,
    options: ImageClassifierOptions,
    seeds: list[int],
    device: str,
) -> tuple[Scorer, dict[str, torch.Tensor]]:
    """One MLP/CNN per seed trained in one vectorised loop, each with early stopping on its own seeded validation
    split: their scorer and best weights stacked [R, ...]. Random streams and cost: see the module docstring."""
    import torch
    from torch.func import functional_call, stack_module_state, vmap
    from torch.nn import functional as F

    from dpvae.models import classifiers

    generators, models = [], []
    for seed in seeds:
        generators.append(torch.Generator().manual_seed(seed))
        torch.manual_seed(seed)
        models.append(getattr(classifiers, kind)(tuple(x.shape[1:]), classes).to(device))
    torch.manual_seed(int(sha256_json(seeds)[:8], 16))  # the dropout masks' one stream
    params, buffers = stack_module_state(models)
    weights = {**params, **buffers}
    base = models[0].to("meta")  # the architecture only: every fit's weights come with a call
    if len(seeds) == 1:  # a group of one (the CPU): the loop without vmap's batching rules

        def net(state: dict[str, torch.Tensor], inputs: torch.Tensor) -> torch.Tensor:
            return functional_call(base, {name: value[0] for name, value in state.items()}, (inputs[0],))[None]
    else:
        net = vmap(lambda state, inputs: functional_call(base, state, (inputs,)), randomness="different")
    optimizer = torch.optim.Adam(params.values())
    orders = [torch.randperm(len(y), generator=generator) for generator in generators]
    n_val = max(1, int(round(options.val_fraction * len(y))))
    val, train = torch.stack([order[:n_val] for order in orders]).to(device), [order[n_val:] for order in orders]
    xt, yt = torch.from_numpy(x).to(device), torch.from_numpy(y).to(device)

    def accuracies(state: dict[str, torch.Tensor], inputs: torch.Tensor, labels: torch.Tensor) -> list[float]:
        """Each fit's share of right answers; inputs [R, n, ...], labels [R, n]."""
        base.eval()
        with torch.no_grad():
            hits = sum(
                (net(state, inputs[:, s : s + 2048]).argmax(-1) == labels[:, s : s + 2048]).sum(1)
                for s in range(0, labels.shape[1], 2048)
            )
        return [h / labels.shape[1] for h in hits.tolist()]

    best, waited = [-1.0] * len(seeds), [0] * len(seeds)  # each fit's best validation score, epochs since it
    best_state = {name: value.detach().clone() for name, value in weights.items()}
    progress = Progress(f"{len(seeds)} {kind} classifiers (at most; early stopping)", options.max_epochs, "epochs")
    for _ in range(options.max_epochs):
        base.train()
        batches = torch.stack([part[torch.randperm(len(part), generator=g)] for part, g in zip(train, generators)])
        for part in batches.to(device).split(options.batch_size, dim=1):
            optimizer.zero_grad()
            logits = net(weights, xt[part])  # [R, B, classes]
            # each fit's mean loss, summed: each fit's gradient is its own loss's
            (F.cross_entropy(logits.flatten(0, 1), yt[part].flatten(), reduction="sum") / part.shape[1]).backward()
            optimizer.step()
        progress.advance()
        improved = [False] * len(seeds)
        for fit, score in enumerate(accuracies(weights, xt[val], yt[val])):
            if waited[fit] >= options.patience:
                continue  # stopped: its score and best weights stay
            if score > best[fit]:
                best[fit], waited[fit], improved[fit] = score, 0, True
            else:
                waited[fit] += 1
        if any(improved):
            mask = torch.tensor(improved, device=device)
            for name, value in best_state.items():
                value[mask] = weights[name].detach()[mask]
        if min(waited) >= options.patience:
            break
    return accuracies, best_state


def _lr_accuracy(
    x: np.ndarray, y: np.ndarray, test_x: np.ndarray, test_y: np.ndarray, seed: int, max_iter: int = 100
) -> float:
    """Accuracy on the test images of scikit-learn's `LogisticRegression` (lbfgs; `max_iter` 100 = its default)."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    if len(np.unique(y)) < 2:
        return float(np.mean(test_y == y[0]))  # one class only: LR cannot be fitted, it predicts that class
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # defaults (max_iter=100), as the paper states
        model = LogisticRegression(random_state=seed, max_iter=max_iter).fit(x.reshape(len(x), -1), y)
    return float(model.score(test_x.reshape(len(test_x), -1), test_y))


@dataclass
class FinishedFits:
    """The resume file: each finished group's accuracies (one a fit) by the group's fits' names ('lr', 'cnn/0', or
    'mlp/0,mlp/1,...' for fits trained together), under the key of what decides the fits."""

    path: Path
    key: str
    scores: dict[str, list[float]] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path, key: str) -> FinishedFits:
        """The fits stored at `path` under `key`; none if the file is missing, unreadable or of another key."""
        fits = cls(path, key)
        if not path.is_file():
            return fits
        try:
            saved = json.loads(path.read_text())
            scores = (
                {str(group): [float(score) for score in scores] for group, scores in saved["fits"].items()}
                if saved["key"] == key
                else {}
            )
        except (OSError, ValueError, TypeError, KeyError, AttributeError) as error:
            log.warning("ignoring unreadable %s (%s); fitting every classifier", path, error)
            return fits
        if not scores:
            log.info("ignoring %s: written for other options, samples, device or training", path)
        else:
            log.info("resuming after the finished fits %s from %s", ", ".join(scores), path)
        fits.scores = scores
        return fits

    def accuracies(self, group: list[str], fit: Callable[[], list[float]]) -> list[float]:
        """The stored accuracies of the fits `group` names, else `fit()`'s, stored at once (a file of another key
        is replaced)."""
        label = ",".join(group)
        if label not in self.scores:
            self.scores[label] = [float(score) for score in fit()]
            write_json(self.path, {"key": self.key, "fits": self.scores})
        return self.scores[label]

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def _fits_key(ctx: EvalContext, x: np.ndarray, y: np.ndarray, n_test: int, classes: int, seeds: dict[str, int]) -> str:
    """sha256 of what decides every fit: the options, the synthetic records, the test split's size, the classes,
    the device, each fit's seed and how the fits train."""
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
            "training": TRAINING,
        }
    )


def fit_groups(names: list[str], device: str) -> list[list[str]]:
    """A classifier's fits as they train: all in one loop on a GPU, each alone on the CPU (module docstring)."""
    return [names] if device.startswith("cuda") else [[name] for name in names]


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

    def fit(kind: str, group: list[str]) -> list[float]:
        if kind == "lr":
            return [_lr_accuracy(x, y, test_x, test_y, seeds["lr"])]
        fit_seeds = [seeds[name] for name in group]
        return _torch_accuracies(kind, x, y, test_x, test_y, classes, ctx.options, fit_seeds, ctx.run.device)

    rows = []
    for kind, names in fit_names:
        groups = fit_groups(names, ctx.run.device)
        scores = [score for group in groups for score in fits.accuracies(group, functools.partial(fit, kind, group))]
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


#: LR readings of `image_lr`: the tidy rows' classifier -> lbfgs's max_iter. "lr": scikit-learn's defaults, as
#: `image_classifiers` and the DP²-VAE paper ("default settings"); "lr-dp-merf": DP-MERF's benchmark code
#: (ParkLabML/DP-MERF code_balanced/synth_data_benchmark.py: lbfgs, max_iter=5000), fitted to convergence
LR_READINGS: dict[str, int] = {"lr": 100, "lr-dp-merf": 5000}
LRReading = Literal["lr", "lr-dp-merf"]


@dataclass(frozen=True)
class ImageLROptions(MetricOptions):
    readings: list[LRReading] = param(["lr", "lr-dp-merf"], "LR readings fitted (`LR_READINGS`)")


@register_metric(
    "image_lr",
    needs=("samples", "data"),
    options=ImageLROptions,
    runtime=120,
    description="LR on synthetic images under each reading of its settings (`LR_READINGS`), real test accuracy",
)
def image_lr(ctx: EvalContext) -> Rows:
    """One LR fit per reading on the same synthetic images, seeded as `image_classifiers`' LR."""
    x = np.ascontiguousarray(ctx.samples["x"], dtype=np.float32)
    y = np.ascontiguousarray(ctx.samples["y"], dtype=np.int64)
    seed = ctx.run.seed_for(f"{NAME}/lr")
    test = ctx.data.test
    return [
        {
            "metric": "accuracy",
            "classifier": reading,
            "value": _lr_accuracy(x, y, test.x, test.y, seed, LR_READINGS[reading]),
        }
        for reading in ctx.options.readings
    ]
