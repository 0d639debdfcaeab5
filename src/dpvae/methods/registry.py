"""The method registry: every method any experiment names.

A method registers itself in its family's package (`methods/<family>/__init__.py`) with `@register_method`;
importing this module imports every such package (each sub-package of `dpvae.methods` is a family).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dpvae.methods.base import Method, RunContext
from dpvae.registry import Registry, discover
from dpvae.runspec import RunSpec

METHODS: Registry[Method] = Registry("method")


def register_method(cls: type[Method]) -> type[Method]:
    """Class decorator: instantiate `cls` and register it under `cls.name` (duplicates are refused)."""
    for attr in ("name", "paper", "private", "description"):
        if not hasattr(cls, attr):
            raise TypeError(f"method class {cls.__name__} lacks the class attribute '{attr}'")
    METHODS.add(cls.name, cls())
    return cls


def get_method(name: str) -> Method:
    return METHODS.get(name)


def run_context(spec: RunSpec, **extra: Any) -> RunContext:
    """The context of one run: its spec, its method and typed parameters (checked) and its directory."""
    method = get_method(spec.method)
    params = method.Params.parse(spec.params, key=f"variants.{spec.variant}.params", name=method.name)
    return RunContext(spec, Path(spec.run), params, extra, method)


discover("dpvae.methods", packages=True)
