"""Neighbouring datasets (replace-one) and what two private runs on them may differ in.

    train, test = table_splits(200, 6)                    # or image_splits(64, (1, 28, 28))
    run_d, run_d2 = train_on_neighbours(spec, train, test, index=7, out=tmp_path, sample=16)
    problems = undeclared_differences(run_d, run_d2, method.released)

D′ is D with the training record at `index` replaced by another whose every value lies strictly inside D's
per-feature range and whose label is one D has, so D′ has the same size, the same observed min/max and the
same classes (the domain code is neutral to the change). The test split is the same in both.
"""

from __future__ import annotations

import fnmatch
import json
import shutil
from pathlib import Path

import numpy as np

from dpvae.data.store import Split, write_prepared
from dpvae.paths import MODEL, SAMPLES, TRAIN_RECORD, prepared_dir
from dpvae.runspec import RunSpec

#: train.json's fields that depend on when and where a run trained, not on its data
VOLATILE_PROVENANCE = ("seconds", "commit", "device_name", "host", "python", "platform")
#: files of a run's directory (relative to it) that are drawn from its model: released as the model is
SAMPLED = (SAMPLES,)


def table_splits(n: int, features: int, seed: int = 0) -> tuple[Split, Split]:
    """Two classes of records in [0, 1]^features that differ in their means (train n, test n // 4)."""
    rng = np.random.default_rng(seed)

    def split(size: int) -> Split:
        y = rng.integers(0, 2, size)
        shift = 0.2 * (2 * y[:, None] - 1) * np.linspace(0.2, 1, features)
        x = np.clip(0.5 + shift + 0.1 * rng.standard_normal((size, features)), 0, 1)
        return Split(x.astype(np.float32), y.astype(np.int64))

    return split(n), split(n // 4)


def image_splits(n: int, shape: tuple[int, ...], seed: int = 0) -> tuple[Split, Split]:
    """Grey images in [0, 1] with a class-dependent bright half (train n, test n // 4)."""
    rng = np.random.default_rng(seed)

    def split(size: int) -> Split:
        y = rng.integers(0, 2, size)
        x = rng.random((size, *shape)) * 0.5
        half = shape[-1] // 2
        for label in (0, 1):
            x[y == label, ..., label * half : (label + 1) * half] += 0.5
        return Split(x.astype(np.float32), y.astype(np.int64))

    return split(n), split(n // 4)


def neighbour(train: Split, index: int) -> Split:
    """`train` with record `index` replaced (replace-one): the midpoint of every feature's observed range, and
    the other label; so nothing of D's size, range or classes changes."""
    flat = train.x.reshape(len(train.x), -1)
    inside = (flat.min(0) + flat.max(0)) / 2
    x, y = train.x.copy(), train.y.copy()
    x[index] = inside.reshape(train.x.shape[1:])
    y[index] = 1 - y[index]
    return Split(x, y)


def train_on_neighbours(
    spec: RunSpec, train: Split, test: Split, index: int, out: Path, sample: int = 0
) -> tuple[Path, Path]:
    """Train run `spec` (and draw `sample` records) on D, then on D′ (record `index` replaced), each time with the
    prepared dataset at the same path and the run in the same directory, so that the two specs are identical;
    returns the two finished run directories, moved to `out`/d and `out`/d-prime."""
    from dpvae import stages

    prepared, run = prepared_dir(Path(spec.data_root), spec.dataset), Path(spec.run)
    finished = []
    for tag, split in (("d", train), ("d-prime", neighbour(train, index))):
        write_prepared(prepared, split, test, {"label_names": ["a", "b"]})
        stages.train(spec)
        if sample:
            stages.sample(run, sample)
        finished.append(Path(shutil.move(run, out / tag)))
    return finished[0], finished[1]


def run_files(run: Path) -> dict[str, bytes]:
    """Every file under a run's directory by its path relative to it (Snakemake's timestamp markers left out)."""
    return {
        str(path.relative_to(run)): path.read_bytes()
        for path in sorted(run.rglob("*"))
        if path.is_file() and path.name != ".snakemake_timestamp"
    }


def provenance(data: bytes) -> dict:
    """train.json without the fields of `VOLATILE_PROVENANCE`."""
    return {k: v for k, v in json.loads(data).items() if k not in VOLATILE_PROVENANCE}


def undeclared_differences(run: Path, neighbour_run: Path, released: tuple[str, ...]) -> list[str]:
    """Why two runs of one spec on neighbouring data differ outside what the method releases: a file only one
    of them holds, or one that differs but no pattern of `released` (relative to model/) or `SAMPLED` covers.
    train.json is compared without `VOLATILE_PROVENANCE`."""
    ours, theirs = run_files(run), run_files(neighbour_run)
    problems = [f"{name}: only in one run" for name in sorted(set(ours) ^ set(theirs))]
    for name in sorted(set(ours) & set(theirs)):
        a, b = ours[name], theirs[name]
        if name == TRAIN_RECORD:
            a, b = provenance(a), provenance(b)
        if a == b:
            continue
        relative = name.removeprefix(f"{MODEL}/") if name.startswith(f"{MODEL}/") else None
        if name in SAMPLED or (relative is not None and any(fnmatch.fnmatch(relative, p) for p in released)):
            continue
        problems.append(f"{name}: differs between D and D' and the method does not declare it released")
    return problems
