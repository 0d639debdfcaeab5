"""Fréchet Inception Distance with torch-fidelity's InceptionV3 and the offline FID weights (docs/papers.md §4.3).

Protocol (written on every item that shows FID):
* extractor: torch-fidelity 0.4 `inception-v3-compat` (the TF `inception-2015-12-05` graph ported), pool3
  features (2048-d), weights `pt_inception-2015-12-05-fc-zeroed.pth` (sha256-checked; its fc layer is
  zeroed, which only the logits would see);
* images: values in [0, 1] -> uint8 round(255·x); grey images repeated to 3 channels; torch-fidelity resizes
  to 299×299 with its TF1-compatible bilinear resize (pytorch-fid, which the paper names, uses
  F.interpolate bilinear: a small difference);
* generated: the first `n_samples` of the run's samples (class-balanced prefixes, 60,000 at paper scale);
* real reference: the `reference` split (train by default, [choice] A-D7), all of it or `reference_n`
  images drawn with seed 0, its mean and covariance cached once per dataset by the `reference` rule;
* generated: their mean and covariance kept beside the reference (`generated/<key>.npz`, the key a sha256 of the
  images' bytes and of what decides their features), so that a run whose images another run already measured
  (the Real-data rows' seeds: the same training images) reads them instead of recomputing them;
* a killed feature pass resumes: its running sums are saved every `PARTIAL_SECONDS` beside the job's output
  (`paths.partial_file`) and read back by the next call of the same images and extractor (`statistics_key`);
* FID = ‖μ_r − μ_g‖² + Tr(Σ_r + Σ_g − 2(Σ_rΣ_g)^{1/2}) by torch-fidelity's `fid_statistics_to_metric`.

Device: the extractor runs on the run's device (the reference on the reference job's); the feature moments
accumulate in float64 in NumPy on the CPU (as they always have) and in torch on a GPU, one copy back at the
end; CUDA statistics equal the CPU's up to float rounding (evaluation runs in IEEE fp32, no TF32). On the CPU the
extractor runs channels-last, and compiled (`torch.compile`, frozen weights) from `COMPILE_MIN_IMAGES` images on:
about 1.5x and 2.2x the images per CPU second of the plain extractor, features equal to ~1e-6 relative
(benchmarks/fid_features.py; from 27 Nov 2026 on: FIDs recorded before differ in the digits that rounding moves).
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from dpvae.data.declared import Facts
from dpvae.errors import DataError
from dpvae.eval.base import EvalContext, Rows
from dpvae.eval.registry import register_metric
from dpvae.files import atomic_write
from dpvae.methods.checkpoint import interval_seconds
from dpvae.params import MetricOptions, param
from dpvae.paths import data_mirror, partial_file, raw_dir
from dpvae.progress import Progress
from dpvae.provenance import sha256_json

WEIGHTS_NAME = "pt_inception-2015-12-05-fc-zeroed.pth"
WEIGHTS_SHA256 = "b60f2de70e560e3d08f8dfb001f46f346e701c1eb50ea87d9cf90427f066b997"
WEIGHTS_ENV = "DPVAE_INCEPTION_WEIGHTS"
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FIDOptions(MetricOptions):
    n_samples: int = param(60000, "generated images used for FID (the first n of the run's samples)", minimum=2)
    batch_size: int = param(64, "Inception batch size", minimum=1)
    reference: Literal["train", "test"] = param(
        "test",
        "real reference images: the training or the test split ([choice] test, A-D7: the Real-data row is then train "
        "vs test, as DP2-VAE's 1.6 / 2.5 presumably are)",
    )
    reference_n: int | None = param(None, "real images in the reference statistics (null = the whole split)", minimum=2)


def weights_path(data_root: Path | None = None) -> Path:
    """The offline Inception weights: $DPVAE_INCEPTION_WEIGHTS, else <mirror>/inception/, else
    <data root>/raw/inception/ (sha256 checked once per process)."""
    candidates = [os.environ.get(WEIGHTS_ENV)]
    if mirror := data_mirror(None):
        candidates.append(str(Path(mirror) / "inception" / WEIGHTS_NAME))
    if data_root is not None:
        candidates.append(str(raw_dir(Path(data_root), "inception") / WEIGHTS_NAME))
    for candidate in filter(None, candidates):
        path = Path(candidate)
        if path.is_file():
            _check_sha256(path)
            return path
    raise DataError(
        f"FID needs the Inception weights {WEIGHTS_NAME} (sha256 {WEIGHTS_SHA256}): set "
        f"{WEIGHTS_ENV} or DPVAE_DATA_MIRROR (<mirror>/inception/), or place it in "
        f"{raw_dir('<data root>', 'inception')}/; looked at: {', '.join(filter(None, candidates)) or 'nothing'}"
    )


_CHECKED: set[Path] = set()


def _check_sha256(path: Path) -> None:
    if path in _CHECKED:
        return
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != WEIGHTS_SHA256:
        raise DataError(f"{path}: sha256 {digest.hexdigest()} differs from the expected {WEIGHTS_SHA256}")
    _CHECKED.add(path)


def to_uint8_rgb(x: np.ndarray) -> np.ndarray:
    """[N, C, H, W] floats in [0, 1] -> [N, 3, H, W] uint8 (grey repeated to RGB)."""
    if x.ndim != 4 or x.shape[1] not in (1, 3):
        raise ValueError(f"FID needs images [N, 1 or 3, H, W], got shape {x.shape}")
    images = np.clip(np.rint(x * 255.0), 0, 255).astype(np.uint8)
    return np.repeat(images, 3, axis=1) if images.shape[1] == 1 else images


#: on the CPU, FID features of at least this many images go through `torch.compile` (its one-off compilation,
#: one to three minutes on 2 cores, pays off only on large sets: paper scale's 10,000 and 60,000)
COMPILE_MIN_IMAGES = 10_000


def compiles(device: str, n_images: int, compile_min: int = COMPILE_MIN_IMAGES) -> bool:
    """Whether `statistics` of `n_images` on `device` run the compiled extractor (the CPU's, from `compile_min`)."""
    import torch

    return torch.device(device).type == "cpu" and n_images >= compile_min


def extractor(weights: Path, device: str = "cpu", compiled: bool = False):
    """torch-fidelity's InceptionV3 pool3 extractor on `device` as a callable images -> features [n, 2048]. On
    the CPU in channels-last layout (oneDNN's fast convolutions; features equal the default layout's to ~1e-6
    relative, tests/eval/test_fid_features.py), and with `compiled` through `torch.compile` with frozen
    weights (batch norms folded, operators fused; the same tolerance)."""
    import torch
    from torch_fidelity.feature_extractor_inceptionv3 import FeatureExtractorInceptionV3

    model = FeatureExtractorInceptionV3("inception-v3-compat", ["2048"], feature_extractor_weights_path=str(weights))
    model = model.eval().to(torch.device(device))
    if torch.device(device).type == "cpu":
        model = model.to(memory_format=torch.channels_last)
        if compiled:
            model = torch.compile(model, options={"freezing": True})

    def features(images):
        with torch.no_grad():
            return model(images)[0]

    return features


def statistics_key(x: np.ndarray, batch_size: int, device: str, compiled: bool) -> str:
    """sha256 of what decides `statistics` of `x`: their bytes, the batch size, the weights' sha256, the device's
    kind, whether compiled, the torch version."""
    import torch

    images = hashlib.sha256(np.ascontiguousarray(x).data).hexdigest()
    return sha256_json(
        {
            "images": [images, x.dtype.str, list(x.shape)],
            "batch_size": batch_size,
            "weights": WEIGHTS_SHA256,
            "device": torch.device(device).type,
            "compiled": compiled,
            "torch": torch.__version__,
        }
    )


#: seconds between two saves of `statistics`' running sums (`DPVAE_CHECKPOINT_EVERY_SECONDS` overrides it)
PARTIAL_SECONDS = 120.0


@dataclass
class RunningMoments:
    """The float64 sums `statistics` accumulates, after the first `done` images; `save`d to and `load`ed from a
    partial file (keyed by `statistics_key`) so that a killed job goes on at the batch it stopped before."""

    total: np.ndarray
    outer: np.ndarray
    done: int = 0

    @classmethod
    def load(cls, path: Path | None, key: str) -> RunningMoments:
        moments = cls(np.zeros(2048), np.zeros((2048, 2048)))
        if path is None or not path.is_file():
            return moments
        try:
            with np.load(path) as saved:
                if str(saved["key"]) != key:
                    log.info("ignoring %s: the sums of other images or of another extractor", path)
                    return moments
                moments = cls(saved["total"], saved["outer"], int(saved["done"]))
        except (OSError, ValueError, KeyError) as error:
            log.warning("ignoring unreadable %s (%s); measuring every image", path, error)
            return moments
        log.info("resuming FID features after %d images from %s", moments.done, path)
        return moments

    def save(self, path: Path, key: str) -> None:
        arrays = {"key": np.asarray(key), "total": self.total, "outer": self.outer, "done": np.asarray(self.done)}
        atomic_write(path, lambda tmp: np.savez(tmp, **arrays))


def statistics(
    x: np.ndarray,
    batch_size: int,
    weights: Path,
    device: str = "cpu",
    compile_min: int = COMPILE_MIN_IMAGES,
    partial: Path | None = None,
) -> dict[str, np.ndarray]:
    """Mean [2048] and covariance [2048, 2048] (float64) of pool3 features, accumulated batch by batch on
    `device` (see the module docstring); on the CPU compiled from `compile_min` images on, every batch then
    padded to `batch_size` (one compiled shape; the padding's features are dropped). With `partial`, the running
    sums are saved there every `PARTIAL_SECONDS` and a call that finds them (same key) goes on after their images:
    the same bytes as one uninterrupted call; the file is removed at the end."""
    import torch

    device = torch.device(device)
    on_cpu = device.type == "cpu"  # NumPy's float64 sums there: the CPU's statistics stay bit for bit
    compiled = compiles(str(device), len(x), compile_min)
    key = statistics_key(x, batch_size, str(device), compiled) if partial else ""
    moments = RunningMoments.load(partial, key)
    features_of = extractor(weights, str(device), compiled)
    total, outer = moments.total, moments.outer
    if not on_cpu:
        total, outer = torch.from_numpy(total).to(device), torch.from_numpy(outer).to(device)
    progress = Progress("fid features", len(x), "images")
    progress.start_at(moments.done)
    every, saved = interval_seconds(PARTIAL_SECONDS), time.monotonic()
    for start in range(moments.done, len(x), batch_size):
        batch = to_uint8_rgb(x[start : start + batch_size])
        n_batch = len(batch)
        if compiled and n_batch < batch_size:
            batch = np.concatenate([batch, np.zeros((batch_size - n_batch, *batch.shape[1:]), np.uint8)])
        features = features_of(torch.from_numpy(batch).to(device))[:n_batch]
        f = features.double().numpy() if on_cpu else features.double()
        total += f.sum(0)
        outer += f.T @ f
        progress.advance(n_batch)
        if partial and start + n_batch < len(x) and time.monotonic() - saved >= every:
            host = (total, outer) if on_cpu else (total.cpu().numpy(), outer.cpu().numpy())
            RunningMoments(*host, done=start + n_batch).save(partial, key)
            saved = time.monotonic()
    if not on_cpu:
        total, outer = total.cpu().numpy(), outer.cpu().numpy()
    n = len(x)
    mu = total / n
    sigma = (outer - n * np.outer(mu, mu)) / (n - 1)
    if partial:
        partial.unlink(missing_ok=True)
    return {"mu": mu, "sigma": sigma, "n": np.asarray(n)}


def memoised_statistics(
    x: np.ndarray, batch_size: int, weights: Path, device: str, memo: Path | None, partial: Path | None = None
) -> dict[str, np.ndarray]:
    """`statistics` of `x`, read from `memo/<key>.npz` when the same images were measured the same way before
    (`statistics_key`), else computed (resuming from `partial`) and written there (atomically); `memo` None:
    computed."""
    if memo is None:
        return statistics(x, batch_size, weights, device, partial=partial)
    path = memo / f"{statistics_key(x, batch_size, device, compiles(device, len(x)))}.npz"
    if path.is_file():
        with np.load(path) as kept:
            return dict(kept)
    stats = statistics(x, batch_size, weights, device, partial=partial)
    atomic_write(path, lambda tmp: np.savez(tmp, **stats))
    return stats


def build_reference(
    prepared_dir: Path, options: FIDOptions, device: str = "cpu", partial: Path | None = None
) -> dict[str, np.ndarray]:
    """Real-image statistics of one dataset's `reference` split (the cached input of every FID job), resuming
    from `partial`."""
    from dpvae.data.store import load_prepared

    split = getattr(load_prepared(prepared_dir), options.reference)
    x = split.x
    if options.reference_n and options.reference_n < len(x):
        x = x[np.sort(np.random.default_rng(0).choice(len(x), options.reference_n, replace=False))]
    stats = statistics(x, options.batch_size, weights_path(Path(prepared_dir).parents[1]), device, partial=partial)
    return {**stats, "split": np.asarray(options.reference)}


def fid_sizes(options: FIDOptions, facts: Facts, n_synthetic: int) -> list[tuple[str, str]]:
    """The generated images it reads, and the real reference, fit their sets."""
    problems = []
    if options.n_samples > n_synthetic:
        problems.append(("n_samples", f"{options.n_samples} generated images but a run draws {n_synthetic}"))
    split = facts.n_train if options.reference == "train" else facts.n_test
    if options.reference_n is not None and options.reference_n > split:
        problems.append(
            ("reference_n", f"{options.reference_n} real images but the {options.reference} split has {split}")
        )
    return problems


@register_metric(
    "fid",
    needs=("samples", "reference"),
    options=FIDOptions,
    reference=build_reference,
    kinds=("image",),
    check=fid_sizes,
    reference_keys=("reference", "reference_n", "batch_size"),
    gpu=True,
    runtime=240,
    description="Frechet Inception Distance to real images (torch-fidelity, offline InceptionV3)",
)
def fid(ctx: EvalContext) -> Rows:
    from torch_fidelity.metric_fid import fid_statistics_to_metric

    x = ctx.samples["x"][: ctx.options.n_samples]
    if len(x) < 2:
        raise ValueError(f"FID needs at least 2 samples, the run has {len(ctx.samples['x'])}")
    real = ctx.reference()
    weights = weights_path(Path(ctx.run.spec.data_root))
    memo = ctx.reference_path.parent / "generated" if ctx.reference_path else None
    partial = partial_file(ctx.out_dir / "fid.json")
    generated = memoised_statistics(x, ctx.options.batch_size, weights, ctx.run.device, memo, partial)
    value = fid_statistics_to_metric(generated, {"mu": real["mu"], "sigma": real["sigma"]}, verbose=False)
    return [
        {"metric": "fid", "value": float(value["frechet_inception_distance"])},
        {"metric": "fid_n_samples", "value": float(len(x))},
        {"metric": "fid_reference_n", "value": float(real["n"])},
    ]
