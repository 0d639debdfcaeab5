"""Load and validate the workflow configuration before any job runs.

Validation has two layers: the JSON Schema (`workflow/schemas/config.schema.yaml`: types, ranges, unknown
keys, defaults) and cross-reference checks that a schema cannot express (datasets, variants, methods,
metrics and analyses exist; a batch fits in its training set; private variants have epsilons). Every
problem is reported with the dotted path of the offending key.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from dpvae.errors import ConfigError
from dpvae.paths import SCHEMA_PATH

__all__ = ["ConfigError", "load_config", "validate_config"]




def format_eps(value: float | str) -> str:
    """Canonical label of an epsilon used in keys and paths: 1 -> '1', 0.1 -> '0.1', inf -> 'inf'."""
    x = float(value)
    return "inf" if math.isinf(x) else f"{x:g}"


def load_config(paths: Iterable[str | Path], overrides: dict | None = None) -> dict:
    """Read YAML files (later ones deep-update earlier ones, as Snakemake does), then validate."""
    config: dict = {}
    for path in paths:
        path = Path(path)
        if not path.is_file():
            raise ConfigError(f"config file not found: {path}")
        with path.open() as fh:
            loaded = yaml.safe_load(fh) or {}
        if not isinstance(loaded, dict):
            raise ConfigError(f"{path}: the top level must be a mapping")
        deep_update(config, loaded)
    deep_update(config, overrides or {})
    return validate_config(config)


def deep_update(base: dict, update: dict) -> dict:
    """Recursively update mapping `base` with `update` (lists and scalars are replaced)."""
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            deep_update(base[key], value)
        else:
            base[key] = copy.deepcopy(value)
    return base


def validate_config(config: dict) -> dict:
    """Validate `config` in place (filling schema defaults) and return it; raise ConfigError on problems."""
    _normalise_epsilon_keys(config)
    errors = [_schema_message(e) for e in _schema_errors(config)]
    if not errors:
        errors = list(_reference_errors(config))
    if errors:
        raise ConfigError("invalid configuration:\n  - " + "\n  - ".join(errors))
    return config


# ----------------------------------------------------------------------------------------------------
# JSON Schema layer


def load_schema() -> dict:
    with SCHEMA_PATH.open() as fh:
        return yaml.safe_load(fh)


def _with_defaults(validator_class: type) -> type:
    """A validator class that fills in `default` values of properties while validating."""
    validate_properties = validator_class.VALIDATORS["properties"]

    def properties(validator: Any, props: dict, instance: Any, schema: dict) -> Iterator:
        if isinstance(instance, dict):
            for name, subschema in props.items():
                if "default" in subschema and name not in instance:
                    instance[name] = copy.deepcopy(subschema["default"])
        yield from validate_properties(validator, props, instance, schema)

    return jsonschema.validators.extend(validator_class, {"properties": properties})


_Validator = _with_defaults(jsonschema.Draft202012Validator)


def _schema_errors(config: dict) -> list[jsonschema.ValidationError]:
    validator = _Validator(load_schema())
    return sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path)))


def _key_path(parts: Iterable[Any]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "<top level>"


def _schema_message(error: jsonschema.ValidationError) -> str:
    path = list(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = set(error.schema.get("properties", {}))
        unknown = sorted(k for k in error.instance if k not in allowed)
        return "; ".join(f"config key '{_key_path(path + [k])}': unknown key" for k in unknown)
    if "propertyNames" in error.schema_path:
        return f"config key '{_key_path(path + [error.instance])}': invalid name ({error.message})"
    if error.validator == "oneOf":
        return f"config key '{_key_path(path)}': {error.instance!r} is not valid (see the schema description)"
    return f"config key '{_key_path(path)}': {error.message}"


def _normalise_epsilon_keys(config: dict) -> None:
    """per_epsilon keys may be written as numbers in YAML; make them canonical string labels."""
    for variant in (config.get("variants") or {}).values():
        if isinstance(variant, dict) and isinstance(variant.get("per_epsilon"), dict):
            renamed = {}
            for key, value in variant["per_epsilon"].items():
                try:
                    renamed[format_eps(key)] = value
                except (TypeError, ValueError):
                    renamed[key] = value  # the schema reports it
            variant["per_epsilon"] = renamed


# ----------------------------------------------------------------------------------------------------
# Cross-reference layer


def _reference_errors(config: dict) -> Iterator[str]:
    from dpvae.analyses import ANALYSES
    from dpvae.data.registry import get_dataset
    from dpvae.eval.registry import METRICS
    from dpvae.methods.registry import METHODS
    from dpvae.runs import resolve_params

    def dataset_error(key: str, name: str) -> str | None:
        try:
            get_dataset(name)
        except (KeyError, ValueError) as exc:
            return f"config key '{key}': {exc.args[0] if exc.args else exc}"
        return None

    variants = config["variants"]
    for name, variant in variants.items():
        if variant["method"] not in METHODS:
            yield (f"config key 'variants.{name}.method': unknown method '{variant['method']}' "
                   f"(known: {', '.join(sorted(METHODS))})")
        for ds in variant.get("per_dataset", {}):
            if (err := dataset_error(f"variants.{name}.per_dataset.{ds}", ds)):
                yield err

    for name, exp in config["experiments"].items():
        key = f"experiments.{name}"
        for i, ds in enumerate(exp["datasets"]):
            if (err := dataset_error(f"{key}.datasets[{i}]", ds)):
                yield err
        if "analysis" in exp:
            if exp["analysis"] not in ANALYSES:
                yield (f"config key '{key}.analysis': unknown analysis '{exp['analysis']}' "
                       f"(known: {', '.join(sorted(ANALYSES))})")
            for extra in ("variants", "epsilons", "metrics", "sweep"):
                if exp.get(extra):
                    yield f"config key '{key}.{extra}': an analysis experiment trains nothing; remove it"
            continue
        if "params" in exp:
            yield f"config key '{key}.params': only analysis experiments take params"
        if not exp["variants"]:
            yield f"config key '{key}.variants': an experiment without an analysis needs variants"
        for i, metric in enumerate(exp["metrics"]):
            if metric not in METRICS:
                yield (f"config key '{key}.metrics[{i}]': unknown metric '{metric}' "
                       f"(known: {', '.join(sorted(METRICS))})")
        for i, vname in enumerate(exp["variants"]):
            if vname not in variants:
                yield f"config key '{key}.variants[{i}]': unknown variant '{vname}'"
                continue
            if variants[vname]["method"] not in METHODS:
                continue
            if _is_private(config, vname) and not exp["epsilons"]:
                yield f"config key '{key}.epsilons': variant '{vname}' is private and needs target epsilons"
            yield from _batch_errors(config, name, exp, vname, resolve_params)


def _is_private(config: dict, variant: str) -> bool:
    from dpvae.methods.registry import METHODS

    spec = config["variants"][variant]
    return spec.get("private", METHODS[spec["method"]].private)


def _batch_errors(config: dict, exp_name: str, exp: dict, variant: str, resolve_params: Any) -> Iterator[str]:
    """A batch may not exceed the training set it is drawn from."""
    from dpvae.data.registry import get_dataset

    points = list((exp.get("sweep") or {}).get("points", {None: None}))
    epsilons = [format_eps(e) for e in exp["epsilons"]] or ["inf"]
    for ds in exp["datasets"]:
        try:
            n_train = getattr(get_dataset(ds), "n_train", None)
        except (KeyError, ValueError):
            continue
        for eps in epsilons:
            for point in points:
                params = resolve_params(config, variant, ds, eps, exp.get("sweep"), point)
                limits = [x for x in (n_train, params.get("max_train")) if x]
                batch = params.get("batch_size")
                if batch and limits and batch > min(limits):
                    yield (f"config key 'variants.{variant}' (experiment {exp_name}, dataset {ds}): "
                           f"batch_size {batch} is larger than the {min(limits)} training records")
