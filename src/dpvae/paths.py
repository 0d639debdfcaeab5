"""Where things live: the repository's resources and the workflow's output layout.

Every path the workflow writes is built here, so the Snakemake rules and the Python stages agree.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
SCHEMA_PATH = REPO_ROOT / "workflow" / "schemas" / "config.schema.yaml"
PUBLISHED_DIR = REPO_ROOT / "workflow" / "resources" / "published"

RESULTS = "results"
FIGURES = "figures"
LOGS = "logs"


def run_dir(dataset: str, variant: str, eps: str, seed: int | str) -> str:
    """Directory of one run: results/runs/<dataset>/<variant>/eps<eps>/seed<seed>."""
    return f"{RESULTS}/runs/{dataset}/{variant}/eps{eps}/seed{seed}"


def experiment_table(experiment: str, dataset: str) -> str:
    """Tidy metrics table of one experiment on one dataset."""
    return f"{RESULTS}/tables/{experiment}/{dataset}.csv"


def analysis_table(experiment: str) -> str:
    """Tidy table of an analysis experiment (no training runs)."""
    return f"{RESULTS}/tables/{experiment}.csv"


def item_prefix(paper: str, item: str) -> str:
    """figures/<paper>/<item>; renderers add .pdf/.png or .pdf/.csv/.tex."""
    return f"{FIGURES}/{paper}/{item}"


def data_mirror(configured: str | None) -> str | None:
    """The mirror directory: the config key if set, else $DPVAE_DATA_MIRROR, else None (download)."""
    mirror = configured or os.environ.get("DPVAE_DATA_MIRROR") or None
    return str(Path(mirror).resolve()) if mirror else None
