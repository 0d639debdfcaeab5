"""Typed parameters: a frozen dataclass per method (or metric), each field with a default and one line of doc.

    @dataclass(frozen=True)
    class P3GMParams(Params):
        pca_components: int = param(30, "d' = min(this, d) DP-PCA components", minimum=1)
        sigma_sgd: float | Literal["auto"] = param("auto", "DP-SGD noise multiplier; auto = calibrated")

`Params.errors(values, key)` checks a config mapping against the fields (unknown key, wrong type, out of
range) and names the dotted key; `Params.parse(values)` builds the instance with defaults filled in;
`Params.describe()` lists the fields for `python -m dpvae methods` (docs/operations.md).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Union, get_args, get_origin

from dpvae.errors import ConfigError

_MISSING = dataclasses.MISSING
CompileMode = Literal[False, "default", "reduce-overhead"]  # a `compile` parameter: off, or torch.compile's mode


def param(
    default: Any,
    doc: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    exclusive_minimum: float | None = None,
) -> Any:
    """A dataclass field with a default, a one-line description and optional numeric bounds."""
    meta = {"doc": doc, "minimum": minimum, "maximum": maximum, "exclusive_minimum": exclusive_minimum}
    if isinstance(default, (list, dict, set)):
        frozen = tuple(default) if isinstance(default, list) else default
        return field(default_factory=lambda: list(frozen) if isinstance(frozen, tuple) else frozen, metadata=meta)
    return field(default=default, metadata=meta)


def _type_name(hint: Any) -> str:
    origin = get_origin(hint)
    if origin is Literal:
        return " | ".join(repr(a) for a in get_args(hint))
    if origin in (Union, types.UnionType):
        return " | ".join(_type_name(a) for a in get_args(hint))
    if origin in (list, tuple):
        return f"list[{', '.join(_type_name(a) for a in get_args(hint) if a is not Ellipsis)}]"
    if hint is type(None):
        return "null"
    return getattr(hint, "__name__", str(hint))


def _matches(value: Any, hint: Any) -> bool:
    """Whether a YAML/JSON value fits a type hint (int fits float; bool fits neither)."""
    origin = get_origin(hint)
    if hint is Any:
        return True
    if origin is Literal:
        return any(value == a and type(value) is type(a) for a in get_args(hint))
    if origin in (Union, types.UnionType):
        return any(_matches(value, a) for a in get_args(hint))
    if origin in (list, tuple):
        (item,) = [a for a in get_args(hint) if a is not Ellipsis][:1] or [Any]
        return isinstance(value, (list, tuple)) and all(_matches(v, item) for v in value)
    if origin is dict:
        return isinstance(value, dict)
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    return isinstance(value, hint) if isinstance(hint, type) else False


def _bound_error(value: Any, meta: Mapping) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if meta.get("minimum") is not None and value < meta["minimum"]:
        return f"{value!r} is less than the minimum {meta['minimum']}"
    if meta.get("exclusive_minimum") is not None and value <= meta["exclusive_minimum"]:
        return f"{value!r} must be greater than {meta['exclusive_minimum']}"
    if meta.get("maximum") is not None and value > meta["maximum"]:
        return f"{value!r} is greater than the maximum {meta['maximum']}"
    return None


@dataclass(frozen=True)
class Params:
    """Base of every parameter set; subclasses add fields with `param(...)`."""

    owner: ClassVar[str] = "method"  # what the parameters belong to, in messages ("method", "metric")

    @classmethod
    def hints(cls) -> dict[str, Any]:
        return typing.get_type_hints(cls)

    @classmethod
    def errors(cls, values: Mapping[str, Any], key: str, name: str = "") -> list[str]:
        """Every problem of `values` as 'config key ...' messages (empty = valid)."""
        if not isinstance(values, Mapping):
            return [f"config key '{key}': must be a mapping of parameters, got {values!r}"]
        fields_ = {f.name: f for f in dataclasses.fields(cls)}
        hints = cls.hints()
        problems = []
        for k, v in values.items():
            if k not in fields_:
                known = ", ".join(sorted(fields_))
                problems.append(
                    f"config key '{key}.{k}': not a parameter of {cls.owner} '{name}' (its parameters: {known})"
                )
                continue
            if not _matches(v, hints[k]):
                problems.append(f"config key '{key}.{k}': {v!r} is not of type {_type_name(hints[k])}")
            elif bound := _bound_error(v, fields_[k].metadata):
                problems.append(f"config key '{key}.{k}': {bound}")
        return problems

    @classmethod
    def parse(cls, values: Mapping[str, Any] | None = None, key: str = "params", name: str = "") -> Params:
        """The instance for `values` (defaults for the rest); ConfigError naming the key if invalid."""
        values = dict(values or {})
        if problems := cls.errors(values, key, name):
            raise ConfigError("invalid parameters:\n  - " + "\n  - ".join(problems))
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def describe(cls) -> list[dict[str, Any]]:
        """[{name, type, default, doc}] for every field, in declaration order."""
        hints = cls.hints()
        rows = []
        for f in dataclasses.fields(cls):
            default = (
                f.default
                if f.default is not _MISSING
                else (f.default_factory() if f.default_factory is not _MISSING else None)
            )
            rows.append(
                {
                    "name": f.name,
                    "type": _type_name(hints[f.name]),
                    "default": default,
                    "doc": f.metadata.get("doc", ""),
                }
            )
        return rows


@dataclass(frozen=True)
class MethodParams(Params):
    """Parameters every method accepts."""

    max_train: int | None = param(
        None, "use a seeded random subset of this many training records (null = all)", minimum=1
    )


@dataclass(frozen=True)
class MetricOptions(Params):
    """Options every metric accepts (none yet); subclasses add theirs."""

    owner: ClassVar[str] = "metric"
