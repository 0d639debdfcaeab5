"""The GPU queue (workflow/campaigns/gpu-queue.yaml) names runs the configuration has, under overlays that exist."""

from __future__ import annotations

import importlib.util
import sys

from dpvae.config import load_config
from dpvae.paths import REPO_ROOT

SCRIPT = REPO_ROOT / "workflow" / "campaigns" / "gpu_queue.py"


def _queue():
    spec = importlib.util.spec_from_file_location("gpu_queue", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_every_entry_names_configured_runs_and_metrics():
    queue = _queue()
    entries = queue.load_queue()
    assert entries and len({e.name for e in entries}) == len(entries)
    for entry in entries:
        overlay = REPO_ROOT / entry.overlay
        config = load_config([REPO_ROOT / "config.yaml"] + ([overlay] if overlay.name != "config.yaml" else []))
        assert set(entry.variants) <= set(config["variants"]), entry.name
        assert entry.dataset in {d for e in config["experiments"].values() for d in e.get("datasets", [])}, entry.name
        assert all(target.endswith(".json") and f"/{entry.dataset}/" in target for target in entry.targets())
        assert entry.blocked or entry.minutes <= 10, f"{entry.name}: a ready entry fits one 10-minute call"


def test_a_row_of_another_campaign_does_not_count_as_the_entry_recorded():
    """DP²-VAE's narrow CPU rows (overlay dp2vae-cpu.yaml) share variant, ε, seed and dataset with the paper-width
    entries (config.yaml): only a row made under the entry's own overlay marks the entry recorded."""
    queue = _queue()
    paper_width = next(e for e in queue.load_queue() if e.overlay == "config.yaml")
    cpu = "snakemake --cores 1 --configfile=workflow/campaigns/dp2vae-cpu.yaml figures/dp2vae/table1.pdf"
    assert not paper_width.made_here(cpu) and paper_width.made_here("snakemake --cores 1 figures/dp2vae/table1.pdf")
    privae = next(e for e in queue.load_queue() if e.paper == "privae")
    assert privae.made_here(f"snakemake --configfile={privae.overlay} x") and not privae.made_here(cpu)
