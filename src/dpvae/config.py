"""Load and validate the workflow configuration before any job runs.

Two layers: the JSON Schema (`dpvae.schema`: types, ranges, unknown keys, defaults) and the checks a schema
cannot express — datasets (built-in or declared under `datasets`, their files readable), variants, methods,
metrics and analyses exist; every variant's parameters fit *its* method's typed parameters (`Method.Params`)
and every metric's options its `Options`; the data fits what runs on it (a batch in its training set, an
image method on images, a metric's sizes in its splits: `Method.data_errors`, `Metric.data_errors`); private
variants have epsilons. Every problem is reported with the dotted key.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from dpvae.config_types import (
    Config,
    Data,
    Dataset,
    Evaluation,
    Experiment,
    PaperSetting,
    PerSetting,
    Sweep,
    Variant,
)
from dpvae.errors import ConfigError
from dpvae.schema import format_eps, read_config, schema_errors

__all__ = [
    "Config",
    "ConfigError",
    "Data",
    "Dataset",
    "Evaluation",
    "Experiment",
    "PaperSetting",
    "PerSetting",
    "Sweep",
    "Variant",
    "format_eps",
    "load",
    "load_config",
    "metric_options",
    "typed",
    "validate_config",
]


def load(paths: Iterable[str | Path], overrides: dict | None = None) -> Config:
    """Read YAML files (later ones deep-update earlier ones, as Snakemake does), validate, type."""
    return Config.from_json(load_config(paths, overrides))


def typed(config: Config | Mapping[str, Any]) -> Config:
    """`config` as a `Config`: a mapping is validated first (schema defaults filled in place, as Snakemake's)."""
    return config if isinstance(config, Config) else Config.from_json(validate_config(config))


def metric_options(config: Config, metric: str) -> Any:
    """`metric`'s typed options (its `Metric.Options`): the type's defaults, then what the config states."""
    from dpvae.eval.registry import METRICS

    return METRICS.get(metric).Options.parse(config.evaluation.configured(metric), name=metric)


def load_config(paths: Iterable[str | Path], overrides: dict | None = None) -> dict:
    """Read YAML files (later ones deep-update earlier ones, as Snakemake does), then validate."""
    return validate_config(read_config(paths, overrides))


def validate_config(config: dict) -> dict:
    """Validate `config` in place (filling schema defaults) and return it; raise ConfigError on problems."""
    if not isinstance(config, dict):
        raise ConfigError(f"the configuration must be a mapping, got {type(config).__name__}")
    errors = schema_errors(config)
    if not errors:
        errors = list(_reference_errors(config, Config.from_json(config)))
    if errors:
        errors = list(dict.fromkeys(errors))  # one line per problem (a sweep repeats some)
        raise ConfigError("invalid configuration:\n  - " + "\n  - ".join(errors))
    return config


# ----------------------------------------------------------------------------------------------------
# Cross-reference layer


def _reference_errors(config: dict, typed_config: Config) -> Iterator[str]:
    from dpvae.eval.registry import METRICS

    yield from _declared_errors(config)
    for name, variant in config["variants"].items():
        yield from _variant_errors(config, name, variant)

    yield from _evaluation_errors(config.get("evaluation", {}), METRICS)
    for i, ds in enumerate(config.get("data", {}).get("unreachable", [])):
        if err := _dataset_error(config, f"data.unreachable[{i}]", ds):
            yield err

    for name, exp in config["experiments"].items():
        yield from _experiment_errors(config, typed_config, name, exp)


def _variant_errors(config: dict, name: str, variant: dict) -> Iterator[str]:
    """Variant `name`'s method, parameters, audit, calibration and papers."""
    from dpvae.items import PAPERS
    from dpvae.methods.registry import METHODS

    if variant["method"] not in METHODS:
        yield (
            f"config key 'variants.{name}.method': unknown method '{variant['method']}'"
            f"{_did_you_mean(variant['method'], METHODS.names())} (known: {', '.join(sorted(METHODS))})"
        )
        return
    yield from _variant_param_errors(config, name, variant, METHODS.get(variant["method"]))
    if variant.get("audit") and not _is_private(config, name):
        yield f"config key 'variants.{name}.audit': only a private variant can be audited"
    if variant.get("calibrate") == "sound" and not _is_private(config, name):
        yield f"config key 'variants.{name}.calibrate': variant '{name}' is not private; it has no noise to tune"
    elif variant.get("calibrate") == "sound" and not METHODS.get(variant["method"]).plans_its_ledger:
        yield (
            f"config key 'variants.{name}.calibrate': method '{variant['method']}''s ledger is known only after "
            "training, so its noise cannot be calibrated to the sound bound"
        )
    for paper in variant.get("published_as", {}):
        if paper not in PAPERS:
            yield (
                f"config key 'variants.{name}.published_as.{paper}': unknown paper '{paper}'"
                f"{_did_you_mean(paper, list(PAPERS))} (known: {', '.join(PAPERS)})"
            )


def _experiment_errors(config: dict, typed_config: Config, name: str, exp: dict) -> Iterator[str]:
    """Experiment `name`'s paper and datasets, then what an analysis or a trained experiment needs."""
    from dpvae.items import PAPERS, SECTIONS

    key = f"experiments.{name}"
    if "paper" in exp and exp["paper"] not in SECTIONS:
        yield f"config key '{key}.paper': unknown paper '{exp['paper']}' (known: {', '.join(SECTIONS)})"
    for i, ds in enumerate(exp["datasets"]):
        if err := _dataset_error(config, f"{key}.datasets[{i}]", ds):
            yield err
    yield from _paper_setting_errors(key, exp, PAPERS)
    if "analysis" in exp:
        yield from _analysis_experiment_errors(key, exp)
    else:
        yield from _trained_experiment_errors(config, typed_config, name, exp)


def _analysis_experiment_errors(key: str, exp: dict) -> Iterator[str]:
    """An analysis experiment: a known analysis, and nothing to train."""
    from dpvae.analyses import ANALYSES

    if exp["analysis"] not in ANALYSES:
        yield (
            f"config key '{key}.analysis': unknown analysis '{exp['analysis']}' (known: {', '.join(sorted(ANALYSES))})"
        )
    for extra in ("variants", "epsilons", "metrics", "sweep"):
        if exp.get(extra):
            yield f"config key '{key}.{extra}': an analysis experiment trains nothing; remove it"


def _trained_experiment_errors(config: dict, typed_config: Config, name: str, exp: dict) -> Iterator[str]:
    """A trained experiment: its variants, metrics and sweep exist, and its variants fit its data and epsilons."""
    from dpvae.eval.registry import METRICS
    from dpvae.methods.registry import METHODS

    key = f"experiments.{name}"
    variants = config["variants"]
    if "params" in exp:
        yield f"config key '{key}.params': only analysis experiments take params"
    if not exp["variants"]:
        yield f"config key '{key}.variants': an experiment without an analysis needs variants"
    for i, metric in enumerate(exp["metrics"]):
        if metric not in METRICS:
            yield (
                f"config key '{key}.metrics[{i}]': unknown metric '{metric}'"
                f"{_did_you_mean(metric, METRICS.names())} (known: {', '.join(sorted(METRICS))})"
            )
    sweep = exp.get("sweep") or {}
    for label in sweep.get("only", []):
        if label not in sweep["points"]:
            yield (
                f"config key '{key}.sweep.only': '{label}' is not a point of the sweep"
                f"{_did_you_mean(label, list(sweep['points']))}"
            )
    for i, vname in enumerate(exp["variants"]):
        yield from _experiment_variant_errors(config, typed_config, name, exp, i, vname)
    if any(_is_private(config, v) for v in exp["variants"] if v in variants and variants[v]["method"] in METHODS):
        yield from _domain_budget_errors(config, key, exp)


def _experiment_variant_errors(
    config: dict, typed_config: Config, name: str, exp: dict, i: int, vname: str
) -> Iterator[str]:
    """The experiment's `i`th variant `vname`: it exists, its sweep points fit its method, and it fits the
    experiment's epsilons and data."""
    from dpvae.methods.registry import METHODS

    key = f"experiments.{name}"
    variants = config["variants"]
    if vname not in variants:
        yield f"config key '{key}.variants[{i}]': unknown variant '{vname}'{_did_you_mean(vname, list(variants))}"
        return
    if variants[vname]["method"] not in METHODS:
        return
    method = METHODS.get(variants[vname]["method"])
    for point, values in ((exp.get("sweep") or {}).get("points") or {}).items():
        yield from method.Params.errors(values, f"{key}.sweep.points.{point}", method.name)
    if _is_private(config, vname) and not exp["epsilons"]:
        yield f"config key '{key}.epsilons': variant '{vname}' is private and needs target epsilons"
    yield from _fit_errors(config, typed_config, name, vname, i)


def _paper_setting_errors(key: str, exp: dict, papers: tuple[str, ...]) -> Iterator[str]:
    """`paper_setting` belongs to a paper's trained experiment, and names the papers' datasets (not our ids)."""
    from dpvae.reproductions import published_dataset

    setting = exp.get("paper_setting")
    if setting is None:
        return
    if exp.get("paper") not in papers or "analysis" in exp:
        yield (
            f"config key '{key}.paper_setting': only a paper's experiment with runs has a paper setting "
            f"(paper one of {', '.join(papers)}, no analysis)"
        )
        return
    for i, name in enumerate(setting["datasets"]):
        if published_dataset(name)[0] != name:
            yield (
                f"config key '{key}.paper_setting.datasets[{i}]': '{name}' is our id; the paper setting names the "
                f"papers' dataset '{published_dataset(name)[0]}'"
            )


def _domain_budget_errors(config: dict, key: str, exp: dict) -> Iterator[str]:
    """A private target ε must exceed the domain_epsilon a declared dataset's domain estimate spends first."""
    for dataset in exp.get("datasets", []):
        spent = (config.get("datasets", {}).get(dataset) or {}).get("domain_epsilon")
        for eps in exp["epsilons"]:
            if isinstance(spent, int | float) and eps <= spent:
                yield (
                    f"config key '{key}.epsilons': ε = {eps} leaves nothing after dataset '{dataset}''s domain "
                    f"estimate (datasets.{dataset}.domain_epsilon = {spent})"
                )
                return


def _did_you_mean(name: str, known: list[str]) -> str:
    from dpvae.registry import did_you_mean

    return did_you_mean(name, known)


def _dataset_error(config: dict, key: str, name: str) -> str | None:
    from dpvae.data.registry import get_dataset

    if name in config.get("datasets", {}):
        return None  # declared: checked by _declared_errors
    try:
        get_dataset(name)
    except (KeyError, ValueError) as exc:
        return f"config key '{key}': {exc.args[0] if exc.args else exc}"
    return None


def _declared_errors(config: dict) -> Iterator[str]:
    """Datasets declared under `datasets`: ids free, files readable, columns present (`dpvae.data.declared`)."""
    from dpvae.data import declared
    from dpvae.data.registry import is_builtin_name

    for name, entry in config.get("datasets", {}).items():
        if is_builtin_name(name):
            yield f"config key 'datasets.{name}': '{name}' is a built-in dataset id or raw source; choose another id"
            continue
        yield from declared.problems(name, entry)


def facts_of(config: dict, dataset: str) -> Any:
    """What validation knows of a dataset's data (`dpvae.data.declared.Facts`: the registry's documented sizes,
    or a declaration's file), or None."""
    from dpvae.data import declared
    from dpvae.data.registry import get_dataset

    entry = config.get("datasets", {}).get(dataset)
    try:
        if entry is not None:
            return None if declared.problems(dataset, entry) else declared.facts(entry)
        return get_dataset(dataset).facts
    except (KeyError, ValueError, OSError):
        return None


def _variant_param_errors(config: dict, name: str, variant: dict, method: Any) -> Iterator[str]:
    """The variant's params, per_dataset and per_setting overrides against its method's typed parameters."""
    key = f"variants.{name}"
    yield from method.Params.errors(variant.get("params", {}), f"{key}.params", method.name)
    for ds, values in variant.get("per_dataset", {}).items():
        if err := _dataset_error(config, f"{key}.per_dataset.{ds}", ds):
            yield err
        yield from method.Params.errors(values, f"{key}.per_dataset.{ds}", method.name)
    yield from _setting_errors(config, name, variant, method)


def _setting_errors(config: dict, name: str, variant: dict, method: Any) -> Iterator[str]:
    """Each `per_setting` entry: a known dataset (or "*"), an epsilon, the method's parameters, one entry per
    setting, and at least one run of some experiment it applies to (a stray override is refused)."""
    from dpvae.runs import EVERY_DATASET, setting_matches

    private = _is_private(config, name)
    runs = {
        (dataset, format_eps(eps) if private else "inf")
        for exp in config["experiments"].values()
        if "analysis" not in exp and name in exp.get("variants", [])
        for dataset in exp.get("datasets", [])
        for eps in (exp.get("epsilons", []) if private else ["inf"])
    }  # (dataset, epsilon label) of every run of the variant
    seen: dict[tuple[str, str], int] = {}
    for i, entry in enumerate(variant.get("per_setting", [])):
        key = f"variants.{name}.per_setting[{i}]"
        dataset, eps = entry["dataset"], entry["epsilon"]
        if dataset != EVERY_DATASET and (err := _dataset_error(config, f"{key}.dataset", dataset)):
            yield err
            continue
        try:
            format_eps(eps)
        except (TypeError, ValueError):
            yield f"config key '{key}.epsilon': {eps!r} is not an epsilon"
            continue
        yield from method.Params.errors(entry["params"], f"{key}.params", method.name)
        if (dataset, eps) in seen:
            yield f"config key '{key}': a second entry for dataset {dataset} at epsilon {eps} ([{seen[dataset, eps]}])"
        seen.setdefault((dataset, eps), i)
        if not any(setting_matches(entry, *run) for run in runs):
            yield (
                f"config key '{key}': no experiment runs variant '{name}' on dataset {dataset} at epsilon {eps}: "
                "the override would change nothing (remove it, or name the dataset and epsilon it is for)"
            )


def _evaluation_errors(evaluation: dict, metrics: Any) -> Iterator[str]:
    """`evaluation.<metric>` options against each metric's typed options."""
    for name, options in evaluation.items():
        if name == "n_samples":
            continue
        if name not in metrics:
            yield (
                f"config key 'evaluation.{name}': unknown metric '{name}'"
                f"{_did_you_mean(name, metrics.names())} (known: {', '.join(sorted(metrics))})"
            )
            continue
        yield from metrics.get(name).Options.errors(options, f"evaluation.{name}", name)


def _is_private(config: dict, variant: str) -> bool:
    from dpvae.methods.registry import METHODS

    spec = config["variants"][variant]
    return spec.get("private", METHODS.get(spec["method"]).private)


def _fit_errors(config: dict, typed_config: Config, exp_name: str, variant: str, index: int) -> Iterator[str]:
    """The data fits what runs on it: a batch in the training set, the method's and the metrics' needs
    (`Method.data_errors`, `Metric.data_errors`: record kind and shape, sizes against the splits)."""
    import dataclasses

    from dpvae.data.declared import Facts
    from dpvae.eval.registry import METRICS
    from dpvae.methods.registry import METHODS
    from dpvae.runs import resolve_params

    exp = config["experiments"][exp_name]
    sweep = typed_config.experiments[exp_name].sweep
    method = METHODS.get(config["variants"][variant]["method"])
    points = list((exp.get("sweep") or {}).get("points", {None: None}))
    epsilons = [format_eps(e) for e in exp["epsilons"]] or ["inf"]
    where = f"experiment {exp_name}, variant {variant}"
    for ds in exp["datasets"]:
        facts: Facts | None = facts_of(config, ds)
        n_train = facts.n_train if facts else _documented_n_train(ds)
        if facts and facts.kind not in method.kinds:
            yield (
                f"config key 'experiments.{exp_name}.variants[{index}]': method '{method.name}' (variant '{variant}') "
                f"cannot take dataset '{ds}': it trains on {' and '.join(method.kinds)} records, and '{ds}' holds "
                f"{_describe(facts)}"
            )
            continue
        if method.needs_public_data and ds in config.get("datasets", {}):
            yield (
                f"config key 'experiments.{exp_name}.variants[{index}]': method '{method.name}' (variant '{variant}') "
                f"cannot take declared dataset '{ds}': {method.needs_public_data}"
            )
            continue
        for eps in epsilons:
            for point in points:
                params = resolve_params(typed_config, variant, ds, eps, sweep, point)
                limits = [x for x in (n_train, params.get("max_train")) if x]
                batch = params.get("batch_size")
                if isinstance(batch, int) and limits and batch > min(limits):
                    yield (
                        f"config key 'variants.{variant}' (experiment {exp_name}, dataset {ds}): "
                        f"batch_size {batch} is larger than the {min(limits)} training records"
                    )
                if facts is None or method.Params.errors(params, "", method.name):
                    continue
                run = dataclasses.replace(facts, n_train=min(limits))
                for param, why in method.data_errors(method.Params.parse(params, name=method.name), run):
                    suffix = f".params.{param}" if param else ""
                    yield f"config key 'variants.{variant}{suffix}' ({where}, dataset {ds}): {why}"
                n_synthetic = (config.get("evaluation") or {}).get("n_samples") or run.n_train
                for metric in exp["metrics"]:
                    if metric not in METRICS:
                        continue
                    entry = METRICS.get(metric)
                    values = (config.get("evaluation") or {}).get(metric) or {}
                    if entry.Options.errors(values, "", metric):
                        continue
                    for option, why in entry.data_errors(entry.Options.parse(values, name=metric), run, n_synthetic):
                        key = f"evaluation.{metric}.{option}" if option else f"experiments.{exp_name}.metrics"
                        yield f"config key '{key}' (metric {metric}, {where}, dataset {ds}): {why}"


def _documented_n_train(dataset: str) -> int | None:
    from dpvae.data.registry import get_dataset

    try:
        return getattr(get_dataset(dataset), "n_train", None)
    except (KeyError, ValueError):
        return None


def _describe(facts: Any) -> str:
    shape = "x".join(map(str, facts.record_shape))
    return f"{shape} images" if facts.kind == "image" else f"[{shape}] records (a table)"
