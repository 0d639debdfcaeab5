"""The record vectors the MLP-VAE methods model, their model files, and generation / reconstruction from them.

Records as P3GM's code feeds them to its MLPs: the flattened features followed by the one-hot label. The
reference (`tkgsn/P3GM` `my_util.load_dataset`) one-hot encodes the label column and keeps every other column
as a number in [0, 1] (Adult's categorical codes included), so d = #features + #classes (MNIST 794, Adult 16,
credit 31). Generated vectors are decoded back: features unchanged (no clipping, as the code writes them),
label = arg-max of the one-hot block (docs/papers.md §3.1; the code's evaluation reads Adult's label by arg-min,
which the tabular metric's positive-class option handles). Model files:

    <model>/model.json        architecture, record layout, sampling prior (and DP-MoG), training summary
    <model>/model.pt          the MLPVAE state dict (P3GM's frozen PCA projection included)
    <model>/snapshots.pt      {"steps", "states"}: the decoder and the trained encoder mean (`snapshot_state`)
                              after every epoch and at iterations spaced in log scale (only with record_every_epoch)

Nothing else: a run keeps no statistic of its training batches (fig 7's reconstruction curve is computed from
the snapshots on the test split, `recon_loss`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from dpvae.errors import DataError
from dpvae.files import atomic_write, save_torch
from dpvae.models.mlp_vae import MLPVAE
from dpvae.progress import Progress


def num_classes(prepared: Any) -> int:
    """Number of label values: the prepared data's `label_names`, else the largest label seen + 1."""
    names = prepared.meta.get("label_names")
    if names:
        return len(names)
    return int(max(prepared.train.y.max(), prepared.test.y.max())) + 1


def vector_dimension(record_shape: tuple[int, ...], classes: int) -> int:
    """d of `to_vectors`' rows for records of `record_shape` and `classes` labels (F + C), known before the data."""
    return int(np.prod(record_shape, dtype=np.int64)) + classes


def to_vectors(x: np.ndarray, y: np.ndarray, classes: int) -> np.ndarray:
    """[N, F + C] float32: flattened features, then the one-hot label."""
    features = np.asarray(x, dtype=np.float32).reshape(len(x), -1)
    labels = np.asarray(y)
    if labels.size and not (0 <= labels.min() and labels.max() < classes):
        raise ValueError(f"labels must lie in [0, {classes}), got [{labels.min()}, {labels.max()}]")
    one_hot = np.zeros((len(x), classes), dtype=np.float32)
    one_hot[np.arange(len(x)), labels] = 1.0
    return np.concatenate([features, one_hot], axis=1)  # [N, vector_dimension(record shape, classes)]


def from_vectors(vectors: np.ndarray, record_shape: tuple[int, ...], classes: int) -> dict[str, np.ndarray]:
    """{"x": float32 [N, *record_shape], "y": int64 arg-max of the label block} from generated vectors."""
    vectors = np.asarray(vectors, dtype=np.float32)
    features = vectors[:, : vectors.shape[1] - classes]
    return {
        "x": np.ascontiguousarray(features.reshape(len(vectors), *record_shape)),
        "y": vectors[:, features.shape[1] :].argmax(axis=1).astype(np.int64),
    }


INFO, WEIGHTS, SNAPSHOTS = "model.json", "model.pt", "snapshots.pt"
GENERATION_CHUNK = 8192


def save_model(
    model_dir: Path,
    model: MLPVAE,
    info: dict[str, Any],
    snapshots: dict[int, dict[str, Tensor]] | None = None,
) -> None:
    """Write the model files (each atomically) into `model_dir`; `snapshots`: step -> `snapshot_state`."""
    model_dir = Path(model_dir)
    model_dir.mkdir(parents=True, exist_ok=True)
    save_torch(model_dir / WEIGHTS, model.state_dict())
    if snapshots:
        saved = {"steps": list(snapshots), "states": list(snapshots.values())}
        save_torch(model_dir / SNAPSHOTS, saved)
    atomic_write(model_dir / INFO, lambda tmp: Path(tmp).write_text(json.dumps(info, indent=2) + "\n"))


def load_info(model_dir: Path) -> dict[str, Any]:
    return json.loads((Path(model_dir) / INFO).read_text())


def load_model(model_dir: Path) -> tuple[MLPVAE, dict[str, Any]]:
    """The trained MLPVAE (eval mode, CPU) and its model.json."""
    info = load_info(model_dir)
    arch = info["arch"]
    pca = None
    if arch["pca"]:
        pca = torch.zeros(arch["data_dim"], arch["latent_dim"])
    model = MLPVAE(arch["data_dim"], arch["latent_dim"], arch["hidden"], pca_components=pca)
    model.load_state_dict(torch.load(Path(model_dir) / WEIGHTS, map_location="cpu", weights_only=True))
    return model.eval(), info


def snapshot_state(model: MLPVAE) -> dict[str, Tensor]:
    """What a snapshot keeps: the decoder and, without P3GM's frozen PCA, the encoder mean (fc1, fc2)."""
    kept = ("fc3.", "fc4.") if hasattr(model, "pca") else ("fc1.", "fc2.", "fc3.", "fc4.")
    return {k: v for k, v in model.state_dict().items() if k.startswith(kept)}


def load_snapshots(model_dir: Path) -> dict[int, dict[str, Tensor]]:
    """step -> the snapshot kept after it (empty without record_every_epoch)."""
    path = Path(model_dir) / SNAPSHOTS
    if not path.is_file():
        return {}
    saved = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(saved, dict):
        raise DataError(f"{path}: per-epoch decoders of an older version (no steps); train the run again")
    return dict(zip(saved["steps"], saved["states"], strict=True))


@torch.no_grad()
def recon_loss(model: MLPVAE, vectors: np.ndarray) -> float:
    """Mean over records of Σ_features (decoder(μ(v)) − v)², μ the encoder mean (P3GM: the frozen PCA)."""
    total = 0.0
    for i in range(0, len(vectors), GENERATION_CHUNK):
        v = torch.from_numpy(vectors[i : i + GENERATION_CHUNK])
        total += float((model.decode(model.encode(v)[0]) - v).square().sum())
    return total / max(len(vectors), 1)


def sample_latent(info: dict[str, Any], n: int, generator: torch.Generator) -> Tensor:
    """z [n, d'] from the model's sampling prior: N(0, I) or its diagonal mixture (component, then Gaussian)."""
    dim = info["arch"]["latent_dim"]
    if info.get("sampling_prior", "normal") == "normal":
        return torch.randn(n, dim, generator=generator)
    prior = info["prior"]
    weights = torch.tensor(prior["weights"], dtype=torch.float64)
    means = torch.tensor(prior["means"], dtype=torch.float32)
    stds = torch.tensor(prior["variances"], dtype=torch.float32).sqrt()
    component = torch.multinomial(weights, n, replacement=True, generator=generator)
    return means[component] + stds[component] * torch.randn(n, dim, generator=generator)


@torch.no_grad()
def generate(
    model: MLPVAE, info: dict[str, Any], n: int, generator: torch.Generator, progress: Progress | None = None
) -> dict[str, np.ndarray]:
    """n synthetic records {"x", "y"}: z from the sampling prior, decoded, label block read by arg-max."""
    chunks, progress = [], progress or Progress("sampling", n, "records")
    for start in range(0, n, GENERATION_CHUNK):
        z = sample_latent(info, min(GENERATION_CHUNK, n - start), generator)
        chunks.append(model.decode(z).numpy())
        progress.advance(len(z))
    vectors = np.concatenate(chunks) if chunks else np.zeros((0, info["arch"]["data_dim"]), dtype=np.float32)
    return from_vectors(vectors, tuple(info["record_shape"]), info["classes"])


@torch.no_grad()
def reconstruct(model: MLPVAE, info: dict[str, Any], vectors: np.ndarray) -> dict[str, np.ndarray]:
    """decoder(encoder mean(v)) of record vectors: the reference's "public" outputs (Table VIII as computed)."""
    out = [
        model.decode(model.encode(torch.from_numpy(vectors[i : i + GENERATION_CHUNK]))[0]).numpy()
        for i in range(0, len(vectors), GENERATION_CHUNK)
    ]
    merged = np.concatenate(out) if out else np.zeros((0, info["arch"]["data_dim"]), dtype=np.float32)
    return from_vectors(merged, tuple(info["record_shape"]), info["classes"])
