"""Where things live: the repository's resources and the workflow's output layout.

Every path the workflow writes is built here, so the Snakemake rules and the Python stages agree.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
SCHEMA_PATH = REPO_ROOT / "workflow" / "schemas" / "config.schema.yaml"
PUBLISHED_DIR = REPO_ROOT / "workflow" / "resources" / "published"
CAMPAIGNS = "workflow/campaigns"  # the scripts that run campaigns (queues, the GPU window)
OVERLAYS = f"{CAMPAIGNS}/overlays"  # the campaigns' config overlays (--configfile=FILE on config.yaml)

RESULTS = "results"
FIGURES = "figures"
LOGS = "logs"


#: a campaign overlay's path in a command, as recorded before or after the overlays moved into OVERLAYS
CAMPAIGN_OVERLAY = re.compile(rf"{CAMPAIGNS}/(?:overlays/)?[\w.-]+\.ya?ml")


def campaign_overlay(path: str) -> str:
    """Where a campaign overlay a recorded command names lives now: `workflow/campaigns/<name>.yaml`, its place
    until the overlays moved into `OVERLAYS`, maps to `OVERLAYS/<name>.yaml`; any other path is returned as is.
    (At its recorded commit the recorded path itself holds the overlay.)"""
    folder, _, name = path.rpartition("/")
    return f"{OVERLAYS}/{name}" if folder == CAMPAIGNS and name.endswith((".yaml", ".yml")) else path


def results_dir(scale: str) -> str:
    """Everything computed at one scale: results/<scale> (smoke and paper never share a file)."""
    return f"{RESULTS}/{scale}"


def run_dir(scale: str, run_id: str) -> str:
    """Directory of one run: results/<scale>/runs/<dataset>/<variant>/eps<eps>/seed<seed>."""
    return f"{results_dir(scale)}/runs/{run_id}"


#: a run directory anywhere in a path: results/<scale>/runs/<dataset>/<variant>/eps<eps>/seed<seed>
_RUN_DIR = re.compile(rf"(?:^|/){RESULTS}/(?P<scale>[^/]+)/runs/(?P<run_id>[^/]+/[^/]+/eps[^/]+/seed\d+)(?:/|$)")


def run_dir_parts(path: str | Path) -> tuple[str, str]:
    """The inverse of `run_dir`: (scale, run id) of a path at or under a run's directory (ValueError if none)."""
    match = _RUN_DIR.search(Path(path).as_posix())
    if match is None:
        raise ValueError(f"{path}: not under {RESULTS}/<scale>/runs/<dataset>/<variant>/eps<eps>/seed<seed>")
    return match["scale"], match["run_id"]


def stage1_id(dataset: str, method: str, key: str, seed: int | str) -> str:
    """'<dataset>/<method>/<key>/seed<seed>': a shared first stage's name, the same at every scale."""
    return f"{dataset}/{method}/{key}/seed{seed}"


def stage1_dir(scale: str, stage1: str) -> str:
    """Directory of one shared non-private first stage: results/<scale>/stage1/<stage1_id>."""
    return f"{results_dir(scale)}/stage1/{stage1}"


def experiment_table(scale: str, experiment: str, dataset: str) -> str:
    """Tidy metrics table of one experiment on one dataset."""
    return f"{results_dir(scale)}/tables/{experiment}/{dataset}.csv"


def analysis_table(scale: str, experiment: str) -> str:
    """Tidy table of an analysis experiment (no training runs)."""
    return f"{results_dir(scale)}/tables/{experiment}.csv"


def reference_file(scale: str, dataset: str, metric: str) -> str:
    """A metric's cached per-dataset reference (e.g. FID's real-image statistics)."""
    return f"{results_dir(scale)}/references/{dataset}/{metric}.npz"


def item_prefix(paper: str, item: str) -> str:
    """figures/<paper>/<item>; renderers add .pdf/.png or .pdf/.csv/.tex."""
    return f"{FIGURES}/{paper}/{item}"


#: where `make smoke` and a fresh clone find the verified data: `../shared/data` beside the repository
SIBLING_MIRROR = REPO_ROOT.parent / "shared" / "data"


def data_mirror(configured: str | None) -> str | None:
    """The mirror directory: the config key if set, else $DPVAE_DATA_MIRROR (set but empty: none, download), else
    `SIBLING_MIRROR` where it exists, else None (download)."""
    mirror = configured or os.environ.get("DPVAE_DATA_MIRROR")
    if mirror is None and SIBLING_MIRROR.is_dir():
        mirror = str(SIBLING_MIRROR)
    return str(Path(mirror).resolve()) if mirror else None
