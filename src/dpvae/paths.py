"""Where things live: the repository's resources, the workflow's output layout, a run's files and the data root's.

Every path the workflow writes is built here, so the Snakemake rules and the Python stages agree. A layout
function called with wildcard strings gives the rules' pattern: `variant_table(scale, "{experiment}",
"{dataset}", "{variant}")`; one of a run's files (`ledger_file(run)`) or of the data root (`prepared_dir(root,
dataset)`) is a string for a string directory (a rule's pattern) and a Path for a Path. (tests/unit/
test_paths_literals.py refuses these paths and file names spelt elsewhere.)
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TypeVar

REPO_ROOT = Path(__file__).resolve().parents[2]
SCHEMA_PATH = REPO_ROOT / "workflow" / "schemas" / "config.schema.yaml"
PUBLISHED_DIR = REPO_ROOT / "workflow" / "resources" / "published"
CAMPAIGNS = "workflow/campaigns"  # the scripts that run campaigns (queues, the GPU window)
OVERLAYS = f"{CAMPAIGNS}/overlays"  # the campaigns' config overlays (--configfile=FILE on config.yaml)

RESULTS = "results"
FIGURES = "figures"
LOGS = "logs"

#: a directory as the rules spell it (a string, joined with '/') or as the stages hold it (a Path)
Dir = TypeVar("Dir", str, Path)


def _under(directory: Dir, *names: str) -> Dir:
    """`directory`/`names`: a string joined with '/' (a rule's pattern stays a string) or a joined Path."""
    return directory.joinpath(*names) if isinstance(directory, Path) else "/".join((directory, *names))


#: a campaign overlay's path in a command, as recorded before or after the overlays moved into OVERLAYS
CAMPAIGN_OVERLAY = re.compile(rf"{CAMPAIGNS}/(?:overlays/)?[\w.-]+\.ya?ml")


def campaign_overlay(path: str) -> str:
    """Where a campaign overlay a recorded command names lives now: `workflow/campaigns/<name>.yaml`, its place
    until the overlays moved into `OVERLAYS`, maps to `OVERLAYS/<name>.yaml`; any other path is returned as is.
    (At its recorded commit the recorded path itself holds the overlay.)"""
    folder, _, name = path.rpartition("/")
    return f"{OVERLAYS}/{name}" if folder == CAMPAIGNS and name.endswith((".yaml", ".yml")) else path


def command_words(command: str) -> set[str]:
    """The words of a recorded command (`--configfile=X` split at '='), a campaign overlay among them named where it
    lives now (`campaign_overlay`): what a recorded row's command is matched against an overlay by."""
    return {campaign_overlay(part) for token in command.split() for part in token.split("=") if part}


def results_dir(scale: str) -> str:
    """Everything computed at one scale: results/<scale> (smoke and paper never share a file)."""
    return f"{RESULTS}/{scale}"


def run_id(dataset: str, variant: str, eps: str, seed: int | str) -> str:
    """'<dataset>/<variant>/eps<eps>/seed<seed>': a run's name, the same at every scale."""
    return f"{dataset}/{variant}/eps{eps}/seed{seed}"


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


# -- inside a run's directory (`run_dir`) or a first stage's (`stage1_dir`) --------------------------------

MODEL = "model"  # the trained model (a directory its method lays out; the train stage renames it into place)
TRAIN_RECORD = "train.json"  # a run's spec as planned and its provenance (written last by the train stage)
LEDGER = "privacy.json"  # a run's privacy ledger (a non-private run's says so)
AUDIT = "audit.json"  # an audited run's canary record, beside its ledger
CHECKPOINT = "checkpoint.pt"  # a resume point while training (removed once the model is in place)
FITS = ".fits.json"  # ending of a metric's resume point: `.<metric>.fits.json` beside its JSON (removed when done)
PARTIAL = ".partial.npz"  # ending of an output's running sums: `.<stem>.partial.npz` beside it (removed when done)
SAMPLES = "samples.npz"  # the synthetic records the sample stage draws
METRICS = "metrics"  # one JSON per metric (+ its artifacts beside it)
BENCHMARKS = "benchmarks"  # Snakemake's benchmark of each job writing into the directory
STAGE1_RECORD = "stage1.json"  # a first stage's spec, key and provenance
RUN_FILES = (MODEL, TRAIN_RECORD, LEDGER, AUDIT, CHECKPOINT, SAMPLES, METRICS, BENCHMARKS, STAGE1_RECORD)


def model_path(run: Dir) -> Dir:
    """<run>/model: a run's (or first stage's) trained model."""
    return _under(run, MODEL)


def train_record(run: Dir) -> Dir:
    """<run>/train.json: the run's spec and provenance."""
    return _under(run, TRAIN_RECORD)


def ledger_file(run: Dir) -> Dir:
    """<run>/privacy.json: the run's privacy ledger."""
    return _under(run, LEDGER)


def audit_file(run: Dir) -> Dir:
    """<run>/audit.json: an audited run's canary record."""
    return _under(run, AUDIT)


def checkpoint_file(run: Dir) -> Dir:
    """<run>/checkpoint.pt: a training run's (or first stage's) resume point."""
    return _under(run, CHECKPOINT)


def samples_file(run: Dir) -> Dir:
    """<run>/samples.npz: the run's synthetic records."""
    return _under(run, SAMPLES)


def metric_file(run: Dir, metric: str) -> Dir:
    """<run>/metrics/<metric>.json: one metric of the run (its artifacts go beside it)."""
    return _under(run, METRICS, f"{metric}.json")


def metric_fits_file(metrics: Dir, metric: str) -> Dir:
    """<run>/metrics/.<metric>.fits.json, given the folder of the metric's JSON (its `out_dir`): the fits its job
    has finished, hidden beside the JSON and not a rule's output, so a killed job keeps it (`is_resume_point`)."""
    return _under(metrics, f".{metric}{FITS}")


def partial_file(output: Path) -> Path:
    """<folder>/.<stem>.partial.npz beside `output` (a metric's JSON, a reference's .npz): the running sums of the job
    that writes `output`, hidden and not a rule's output, so a killed job keeps them (`is_resume_point`)."""
    return output.with_name(f".{output.stem}{PARTIAL}")


def is_resume_point(name: str) -> bool:
    """Whether a file's name is a job's resume point (`metric_fits_file`, `partial_file`): it serves the job on its
    machine only."""
    return name.startswith(".") and name.endswith((FITS, PARTIAL))


def stage1_record(stage1: Dir) -> Dir:
    """<stage1>/stage1.json: a first stage's spec, key and provenance."""
    return _under(stage1, STAGE1_RECORD)


def variant_table(scale: str, experiment: str, dataset: str, variant: str) -> str:
    """Tidy metrics table of one variant of an experiment on one dataset (`combine` joins them)."""
    return f"{results_dir(scale)}/tables/{experiment}/{dataset}/{variant}.csv"


def aggregate_spec_file(scale: str, experiment: str, dataset: str, variant: str) -> str:
    """The runs one variant's table aggregates (JSON, written by the rule `aggregate_spec`)."""
    return f"{results_dir(scale)}/tables/{experiment}/{dataset}/{variant}.runs.json"


def experiment_table(scale: str, experiment: str, dataset: str) -> str:
    """Tidy metrics table of one experiment on one dataset."""
    return f"{results_dir(scale)}/tables/{experiment}/{dataset}.csv"


def analysis_table(scale: str, experiment: str) -> str:
    """Tidy table of an analysis experiment (no training runs)."""
    return f"{results_dir(scale)}/tables/{experiment}.csv"


def reference_file(scale: str, dataset: str, metric: str, suffix: str = ".npz") -> str:
    """A metric's cached per-dataset reference (e.g. FID's real-image statistics); `suffix` names a file
    beside it (its job's benchmark: ".benchmark.tsv")."""
    return f"{results_dir(scale)}/references/{dataset}/{metric}{suffix}"


def item_spec_file(scale: str, paper: str, item: str) -> str:
    """What an item's render job reads (JSON, written by the rule `item_spec`)."""
    return f"{results_dir(scale)}/items/{paper}/{item}.json"


def experiment_spec_file(scale: str, experiment: str) -> str:
    """What an experiment's render job reads (JSON, written by the rule `experiment_spec`)."""
    return f"{results_dir(scale)}/experiments/{experiment}.json"


def figure_file(path: str) -> str:
    """figures/<path>: any target under figures/."""
    return f"{FIGURES}/{path}"


def item_prefix(paper: str, item: str) -> str:
    """figures/<paper>/<item>; renderers add .pdf/.png or .pdf/.csv/.tex."""
    return figure_file(f"{paper}/{item}")


def gathered_file(item: str) -> str:
    """figures/<item>.pdf: one item id gathered from every paper that has it."""
    return figure_file(f"{item}.pdf")


def experiment_prefix(experiment: str) -> str:
    """figures/experiments/<experiment>; its renderer adds .pdf, .csv and .tex."""
    return figure_file(f"experiments/{experiment}")


#: figures/scorecard; the scorecard adds .pdf and .csv
SCORECARD = figure_file("scorecard")
#: figures/claims; the papers' claims judged (`dpvae.claims`): .pdf and .csv
CLAIMS = figure_file("claims")

#: a target's item (figures/<paper>/<item>.<ext>), experiment (figures/experiments/<experiment>.<ext>) or
#: gathered item id (figures/<item>.pdf): the inverses of item_prefix, experiment_prefix and gathered_file
ITEM_TARGET = re.compile(rf"^(?:\./)?{FIGURES}/(?P<paper>[^/]+)/(?P<item>[^/.]+)\.(?P<ext>pdf|png|csv|tex)$")
EXPERIMENT_TARGET = re.compile(rf"^(?:\./)?{FIGURES}/experiments/(?P<experiment>[^/]+)\.(?P<ext>[^/.]+)$")
GATHER_TARGET = re.compile(rf"^(?:\./)?{FIGURES}/(?P<item>[^/.]+)\.pdf$")


def log_file(job: str) -> str:
    """logs/<job>.log: the log of the job named `job` (a rule's directory and the job's wildcards)."""
    return f"{LOGS}/{job}.log"


def render_log(prefix: str, suffix: str = "") -> str:
    """The log of the job rendering figures/<name> (`prefix`): logs/render/<name><suffix>.log; suffix
    ".spec" for the job writing its spec."""
    return log_file(f"render/{prefix.removeprefix(FIGURES + '/')}{suffix}")


def job_log(directory: str, job: str) -> str:
    """logs/<directory>/<job>.log: the log of a job writing into a run's or first stage's directory."""
    return log_file(f"{directory}/{job}")


def job_benchmark(directory: str, job: str) -> str:
    """<directory>/benchmarks/<job>.tsv: Snakemake's benchmark of a job writing into a run's directory."""
    return f"{directory}/{BENCHMARKS}/{job}.tsv"


def rule_benchmark(scale: str, rule: str, wildcards: str = "") -> str:
    """results/<scale>/benchmarks/<rule>[/<wildcards>].tsv: Snakemake's benchmark of a job of `rule` that writes
    outside a run's directory (data, tables, figures), at the scale of the build that ran it."""
    return f"{results_dir(scale)}/{BENCHMARKS}/{'/'.join(p for p in (rule, wildcards) if p)}.tsv"


# -- the data root (config key data.root): raw sources and prepared datasets ---------------------------------

RAW = "raw"
PREPARED = "prepared"
FETCHED_MARKER = "SHA256SUMS"  # a fetched source's checksums: the workflow's marker that it is complete
PREPARED_META = "meta.json"  # a prepared dataset's metadata (`dpvae.data.store`)


def raw_dir(root: Dir, source: str) -> Dir:
    """<root>/raw/<source>: the verified raw files of one source (several dataset ids may share it)."""
    return _under(root, RAW, source)


def fetched_marker(root: Dir, source: str) -> Dir:
    """<root>/raw/<source>/SHA256SUMS: written once the source's files are all fetched and verified."""
    return _under(raw_dir(root, source), FETCHED_MARKER)


def prepared_dir(root: Dir, dataset: str) -> Dir:
    """<root>/prepared/<dataset>: one prepared dataset (`dpvae.data.store`)."""
    return _under(root, PREPARED, dataset)


def prepared_meta(root: Dir, dataset: str) -> Dir:
    """<root>/prepared/<dataset>/meta.json: a prepared dataset's shapes, checksums and provenance."""
    return _under(prepared_dir(root, dataset), PREPARED_META)


#: where `make smoke` and a fresh clone find the verified data: `../shared/data` beside the repository
SIBLING_MIRROR = REPO_ROOT.parent / "shared" / "data"


def data_mirror(configured: str | None) -> str | None:
    """The mirror directory: the config key if set, else $DPVAE_DATA_MIRROR (set but empty: none, download), else
    `SIBLING_MIRROR` where it exists, else None (download)."""
    mirror = configured or os.environ.get("DPVAE_DATA_MIRROR")
    if mirror is None and SIBLING_MIRROR.is_dir():
        mirror = str(SIBLING_MIRROR)
    return str(Path(mirror).resolve()) if mirror else None
