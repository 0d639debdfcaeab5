"""PriVAE's VAEs on disk: `model.pt` (state dict) + `model.json` (class and constructor arguments)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from dpvae.errors import DataError
from dpvae.files import save_torch, write_json
from dpvae.models.conv_vae import ConvVAE
from dpvae.models.latent_vae import LatentVAE
from dpvae.models.pinwheel_vae import PinwheelVAE

MODEL_FILE, CONFIG_FILE = "model.pt", "model.json"


def save_vae(model: LatentVAE, directory: str | Path, extra: dict[str, Any] | None = None) -> None:
    """`model.pt` (state dict, CPU) and `model.json` (class, constructor arguments, `extra`) into `directory`."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    save_torch(directory / MODEL_FILE, state)
    meta = {"class": type(model).__name__, "config": model.config, **(extra or {})}
    write_json(directory / CONFIG_FILE, meta)


def model_classes() -> dict[str, type[LatentVAE]]:
    return {"ConvVAE": ConvVAE, "PinwheelVAE": PinwheelVAE}


def load_vae(directory: str | Path) -> tuple[LatentVAE, dict[str, Any]]:
    """The saved model (CPU, eval mode, float32) and its `model.json`."""
    directory = Path(directory)
    meta_path = directory / CONFIG_FILE
    if not meta_path.is_file():
        raise DataError(f"{meta_path}: missing; this run's model was not saved by a PriVAE method")
    meta = json.loads(meta_path.read_text())
    classes = model_classes()
    if meta.get("class") not in classes:
        raise DataError(f"{meta_path}: unknown model class {meta.get('class')!r} (known: {', '.join(classes)})")
    model = classes[meta["class"]](**meta["config"])
    model.load_state_dict(torch.load(directory / MODEL_FILE, map_location="cpu", weights_only=True))
    return model.eval(), meta
