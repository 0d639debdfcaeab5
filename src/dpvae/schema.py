"""The configuration's first layer: read and merge YAML files, check them against the JSON Schema.

`workflow/schemas/config.schema.yaml` gives types, ranges, unknown keys and defaults of everything but
the per-method parameters and per-metric options (those are typed dataclasses beside their
implementations, checked by `dpvae.config`). Every problem names the dotted key.
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


def format_eps(value: float | str) -> str:
    """Canonical label of an epsilon used in keys and paths: 1 -> '1', 0.1 -> '0.1', inf -> 'inf'."""
    x = float(value)
    return "inf" if math.isinf(x) else f"{x:g}"


def read_config(paths: Iterable[str | Path], overrides: dict | None = None) -> dict:
    """Read YAML files (later ones deep-update earlier ones, as Snakemake does); nothing is validated yet."""
    config: dict = {}
    for path in paths:
        deep_update(config, read_yaml(path))
    deep_update(config, overrides or {})
    return config


def read_yaml(path: str | Path) -> dict:
    """One configuration file as a mapping; a ConfigError naming the file if it is not one."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a text file (a YAML configuration is expected)") from None
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" at line {where.line + 1}, column {where.column + 1}" if where else ""
        raise ConfigError(f"{path}: malformed YAML{at}: {getattr(exc, 'problem', exc)}") from None
    if loaded is None:
        raise ConfigError(f"{path}: the file is empty (a YAML mapping of configuration keys is expected)")
    if not isinstance(loaded, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of configuration keys, got {type(loaded).__name__}")
    return loaded


def deep_update(base: dict, update: dict) -> dict:
    """Recursively update mapping `base` with `update` (lists and scalars are replaced)."""
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            deep_update(base[key], value)
        else:
            base[key] = copy.deepcopy(value)
    return base


def schema_errors(config: dict) -> list[str]:
    """Messages for every schema violation of `config` (which gets its defaults filled in place)."""
    _normalise_epsilon_keys(config)
    return [_schema_message(e) for e in _schema_errors(config)]


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


def key_path(parts: Iterable[Any]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "<top level>"


def _schema_message(error: jsonschema.ValidationError) -> str:
    path = list(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = set(error.schema.get("properties", {}))
        unknown = sorted(k for k in error.instance if k not in allowed)
        return "; ".join(f"config key '{key_path(path + [k])}': unknown key" for k in unknown)
    if "propertyNames" in error.schema_path:
        return f"config key '{key_path(path + [error.instance])}': invalid name ({error.message})"
    if error.validator == "oneOf":
        return f"config key '{key_path(path)}': {error.instance!r} is not valid (see the schema description)"
    return f"config key '{key_path(path)}': {error.message}"


def _normalise_epsilon_keys(config: dict) -> None:
    """per_setting epsilons may be written as numbers in YAML; make them canonical string labels."""
    for variant in (config.get("variants") or {}).values():
        if isinstance(variant, dict) and isinstance(variant.get("per_setting"), list):
            for entry in variant["per_setting"]:
                if isinstance(entry, dict) and "epsilon" in entry:
                    try:
                        entry["epsilon"] = format_eps(entry["epsilon"])
                    except (TypeError, ValueError):
                        pass  # the cross-checks report it
