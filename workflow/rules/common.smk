# Validation of the configuration and of the requested targets, and the input functions of the rules.
# All logic lives in src/dpvae (dpvae.workflow); this file only binds it to Snakemake.

import json
import os
import re
import sys
from pathlib import Path

SRC = str(Path(workflow.basedir) / "src")
if SRC not in sys.path:
    sys.path.insert(0, SRC)

from snakemake.exceptions import WorkflowError
from snakemake.settings.types import DeploymentMethod

from dpvae.errors import DpvaeError
from dpvae.paths import (
    CLAIMS,
    SCORECARD,
    aggregate_spec_file,
    analysis_table,
    data_mirror,
    experiment_prefix,
    experiment_spec_file,
    experiment_table,
    fetched_marker,
    figure_file,
    gathered_file,
    item_prefix,
    item_spec_file,
    job_benchmark,
    job_log,
    ledger_file,
    log_file,
    metric_file,
    model_path,
    prepared_dir,
    reference_file,
    render_log,
    results_dir,
    rule_benchmark,
    run_dir,
    run_id,
    samples_file,
    stage1_dir,
    stage1_id,
    stage1_record,
    train_record,
    variant_table,
)
from dpvae.runs import secret_datasets
from dpvae.workflow import Rules


def stop(error):
    """End the run while the Snakefile is read, before any job: the message alone, no traceback.

    (A WorkflowError raised here would print this file's name, line and a traceback line around it.)
    """
    print(f"dpvae: error: {error}", file=sys.stderr, flush=True)
    sys.exit(1)


# The checkout's files that rules read (renderer modules, published numbers, reproductions) are named relative
# to the working directory ("Relocatable" below).
BASE = os.path.relpath(workflow.basedir)
try:
    RULES = Rules(config, BASE)
except DpvaeError as error:
    stop(error)
# The validated configuration, typed (dpvae.config.Config): the rules read it, never Snakemake's dict.
CONFIG = RULES.config


def checked(fn):
    """An input function whose user-fixable errors (unknown or not-yet-built item, unverifiable data) end
    the run while the DAG is built, before any job. Snakemake wraps the message (rule, wildcards)."""

    def wrapped(wildcards):
        try:
            return fn(wildcards)
        except DpvaeError as error:
            raise WorkflowError(str(error)) from None

    return wrapped


DATA = CONFIG.data.root
SCALE = CONFIG.scale
RESULTS = results_dir(SCALE)
MIRROR = data_mirror(CONFIG.data.mirror)
USES_CONDA = DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method
# Relocatable: what Snakemake tracks of a job (its params, shell code and input paths) names no absolute path
# of the checkout or of the interpreter, so a finished build moved elsewhere, or run by another environment,
# plans nothing. The jobs read both from their environment instead, set here by every Snakemake that runs them
# (on a cluster node too, which reads this file again): DPVAE_SRC, this checkout's src/, which the command puts
# first on PYTHONPATH (in the command: under --sdm conda Snakemake removes PYTHONPATH from a job's
# environment), and DPVAE_PYTHON, the interpreter running Snakemake (under --sdm conda, the rule
# environment's python).
# (Set, never read here: not `envvars:`, which would ask the user to set them.)
os.environ.update(DPVAE_SRC=SRC, DPVAE_PYTHON="python" if USES_CONDA else sys.executable)
# Every job's output goes to its log; fd 3 keeps Snakemake's stderr, where the CLI also writes the one-line
# message of any failure (bad data, privacy budget exceeded, or a bug, whose traceback stays in the log), so
# it shows in the terminal.
DPVAE = '3>&2 DPVAE_ERROR_FD=3 PYTHONPATH="$DPVAE_SRC${PYTHONPATH:+:$PYTHONPATH}" "$DPVAE_PYTHON" -m dpvae'
ENV = "../../envs/dpvae.yaml"
RUN = run_dir(SCALE, run_id("{dataset}", "{variant}", "{eps}", "{seed}"))
STAGE1 = stage1_dir(SCALE, stage1_id("{dataset}", "{method}", "{key}", "{seed}"))
# the wildcard pattern of the datasets whose runs are releases (`runs.secret_datasets`); "(?!)" matches none
RELEASE_DATASETS = "|".join(re.escape(d) for d in secret_datasets(CONFIG)) or "(?!)"


def prepared(dataset):
    return prepared_dir(DATA, dataset)


@checked
def fetch_inputs(wildcards):
    """The verified raw files a dataset is prepared from (none for generated datasets)."""
    return RULES.fetch_inputs(wildcards.dataset, dryrun=workflow.dryrun)


def gpus(wanted):
    """GPUs a job asks the scheduler for: 1 if its method or metric wants one, unless `device: cpu`."""
    return int(bool(wanted) and CONFIG.device != "cpu")


def default_targets():
    """Every item that can be built today (its methods, metrics and renderer exist)."""
    return RULES.default_targets()


def _spec(w):
    return RULES.spec_json(w.dataset, w.variant, w.eps, w.seed)


def _resources(w):
    return RULES.train_resources(w.dataset, w.variant, w.eps, w.seed)


def _stage1_inputs(w):
    return RULES.stage1_inputs(w.dataset, w.variant, w.eps, w.seed)


@checked
def _stage1_spec(w):
    return RULES.stage1_spec_json(w.dataset, w.method, w.key, w.seed)


@checked
def _stage1_resources(w):
    return RULES.stage1_resources(w.dataset, w.method, w.key, w.seed)


def _metric(w):
    from dpvae.eval.registry import METRICS

    return METRICS.get(w.metric)


@checked
def _experiment_inputs(w):
    return {"spec": experiment_spec_file(SCALE, w.experiment), "tables": RULES.experiment_inputs(w.experiment)}


@checked
def _render_inputs(w):
    RULES.check_buildable(f"{item_prefix(w.paper, w.item)}.pdf", dryrun=workflow.dryrun)
    return {
        "spec": item_spec_file(SCALE, w.paper, w.item),
        "renderer": RULES.renderer_files(w.paper),
        "published": RULES.published_files(w.paper),
        "tables": RULES.render_inputs(w.paper, w.item),
    }


WORKER = []


def start_worker():
    """A warm worker (dpvae.worker) for a local build of at least `local_worker` jobs: jobs fork from one
    process that imported torch and the project once."""
    wanted = CONFIG.local_worker
    if wanted and len(workflow.dag) >= wanted and workflow.local_exec and not USES_CONDA:
        from dpvae import worker

        WORKER.append(worker.start(SRC, Path(log_file("worker"))))


def stop_worker():
    from dpvae import worker

    while WORKER:
        worker.stop(WORKER.pop())
