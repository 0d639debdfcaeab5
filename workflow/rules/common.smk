# Validation of the configuration, the run table and the target lists. All logic lives in src/dpvae;
# this file only turns it into input functions for the rules.

import json
import sys
from pathlib import Path

SRC = str(Path(workflow.basedir) / "src")
if SRC not in sys.path:
    sys.path.insert(0, SRC)

from snakemake.exceptions import WorkflowError
from snakemake.settings.types import DeploymentMethod

from dpvae.config import ConfigError, validate_config
from dpvae.data.registry import get_dataset
from dpvae.items import ITEMS, done_items, get_item, item_datasets, items_with_id, missing_parts
from dpvae.paths import analysis_table, data_mirror, experiment_table, item_prefix
from dpvae.runs import Run, experiment_runs, find_run, run_spec

try:
    validate_config(config)
except ConfigError as error:
    raise WorkflowError(str(error)) from None

DATA = config["data"]["root"]
MIRROR = data_mirror(config["data"]["mirror"])
# Under --sdm conda the rule's environment provides python; otherwise the interpreter running Snakemake.
USES_CONDA = DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method
PYTHON = "python" if USES_CONDA else sys.executable
DPVAE = f"PYTHONPATH={SRC}${{PYTHONPATH:+:$PYTHONPATH}} {PYTHON} -m dpvae"
ENV = "../../envs/dpvae.yaml"


def prepared(dataset):
    return f"{DATA}/prepared/{dataset}"


def fetch_inputs(wildcards):
    """The verified raw files a dataset is prepared from (none for generated datasets)."""
    spec = get_dataset(wildcards.dataset)
    return [f"{DATA}/raw/{spec.source}/SHA256SUMS"] if spec.files else []


def _run(wildcards):
    try:
        return find_run(config, wildcards.dataset, wildcards.variant, wildcards.eps, wildcards.seed)
    except ValueError as error:
        raise WorkflowError(str(error)) from None


def spec_json(wildcards):
    return json.dumps(run_spec(config, _run(wildcards)), sort_keys=True)


def metric_options(wildcards):
    options = dict(config["evaluation"].get(wildcards.metric, {}))
    options["n_samples"] = config["evaluation"]["n_samples"]
    return json.dumps(options, sort_keys=True)


def experiment_run_files(experiment, dataset):
    """Every file an experiment's aggregated table on one dataset is built from."""
    metrics = config["experiments"][experiment]["metrics"]
    files = []
    for run in experiment_runs(config, experiment, dataset):
        files += [f"{run.path}/train.json", f"{run.path}/privacy.json"]
        files += [f"{run.path}/metrics/{m}.json" for m in metrics]
    return files


def aggregate_inputs(wildcards):
    return experiment_run_files(wildcards.experiment, wildcards.dataset)


def analysis_inputs(wildcards):
    return [prepared(d) for d in config["experiments"][wildcards.experiment]["datasets"]]


def analysis_context(wildcards):
    """The configuration subset an analysis reads (its experiment, the variants it names, data root, delta)."""
    exp = config["experiments"][wildcards.experiment]
    names = [exp.get("params", {}).get("variant")]
    return json.dumps({
        "experiments": {wildcards.experiment: exp},
        "variants": {n: config["variants"][n] for n in names if n},
        "data_root": DATA,
        "delta": config["delta"],
    }, sort_keys=True)


def item_tables(item):
    """experiment -> the tidy tables an item reads."""
    tables = {}
    for name in item.experiments:
        if "analysis" in config["experiments"][name]:
            tables[name] = [analysis_table(name)]
        else:
            tables[name] = [experiment_table(name, d) for d in item_datasets(item, config, name)]
    return tables


def item_artifacts(item):
    files = []
    for name in item.experiments:
        if "analysis" in config["experiments"][name]:
            continue
        for dataset in item_datasets(item, config, name):
            files += [f"{run.path}/metrics/{a}.json" for run in experiment_runs(config, name, dataset)
                      for a in item.artifacts]
    return files


def render_inputs(wildcards):
    item = get_item(f"{wildcards.paper}/{wildcards.item}")
    return [p for paths in item_tables(item).values() for p in paths] + item_artifacts(item)


def render_args(wildcards):
    item = get_item(f"{wildcards.paper}/{wildcards.item}")
    args = [f"--table {exp}={path}" for exp, paths in item_tables(item).items() for path in paths]
    args += [f"--artifact {path}" for path in item_artifacts(item)]
    return " ".join(args)


def render_context(wildcards):
    item = get_item(f"{wildcards.paper}/{wildcards.item}")
    experiments = {n: config["experiments"][n] for n in item.experiments}
    variants = {v: config["variants"][v.split("@")[0]] for e in experiments.values() for v in e.get("variants", [])}
    return json.dumps({"experiments": experiments, "variants": variants, "delta": config["delta"]}, sort_keys=True)


def gathered(wildcards):
    return [f"{item_prefix(i.paper, i.id)}.pdf" for i in items_with_id(wildcards.item) if not missing_parts(i, config)]


def gather_pending(wildcards):
    return json.dumps({i.key: missing_parts(i, config) for i in items_with_id(wildcards.item)
                       if missing_parts(i, config)})


def default_targets():
    """Every item that can be built today (its methods, metrics and renderer exist)."""
    return [f"{item_prefix(i.paper, i.id)}.pdf" for i in done_items(config)]
