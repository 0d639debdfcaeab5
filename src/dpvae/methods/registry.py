"""The method registry: every method any experiment names, implemented or planned.

A method registers itself in its own module (`methods/<name>.py`) with `@register_method`; importing this
module imports every such module. A planned method (`methods/planned.py`) keeps its runs in the DAG, so
every figure and table stays a target, and fails plainly if a job actually runs it.
"""

from __future__ import annotations

from dpvae.methods.base import Method
from dpvae.registry import Registry, discover

METHODS: Registry[Method] = Registry("method")
_NOT_METHODS = ("base", "registry", "planned", "checkpoint")


def register_method(cls: type[Method]) -> type[Method]:
    """Class decorator: instantiate `cls` and register it under `cls.name` (duplicates are refused)."""
    for attr in ("name", "paper", "private", "description"):
        if not hasattr(cls, attr):
            raise TypeError(f"method class {cls.__name__} lacks the class attribute '{attr}'")
    METHODS.add(cls.name, cls())
    return cls


def get_method(name: str) -> Method:
    return METHODS.get(name)


def _load() -> None:
    from dpvae.methods.planned import PLANNED

    discover("dpvae.methods", skip=_NOT_METHODS)
    for method in PLANNED:
        if method.name not in METHODS:
            METHODS.add(method.name, method)


_load()
