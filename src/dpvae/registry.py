"""A name -> entry registry that refuses duplicates and answers unknown names with the known ones.

Methods, metrics, renderers and analyses each keep one, filled by a decorator in the module that
implements the entry (opacus' `register_grad_sampler` is the model). `discover(package)` imports every
module (or every sub-package) of a package so that their decorators run.
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil
import re
from collections.abc import Iterator
from typing import Generic, TypeVar

from dpvae.errors import TargetError

T = TypeVar("T")
NAME = re.compile(r"^[a-z0-9][a-z0-9_./-]*$")


def did_you_mean(name: str, known: list[str]) -> str:
    """' did you mean 'x'?' for the closest known name, or ''."""
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


class Registry(Generic[T]):
    """Entries of one kind (`kind` names it in messages), in registration order."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, T] = {}

    def add(self, name: str, entry: T) -> T:
        if not isinstance(name, str) or not NAME.match(name):
            raise ValueError(f"invalid {self.kind} name {name!r} (lower-case letters, digits, _ . / -)")
        if name in self._entries:
            raise ValueError(f"{self.kind} '{name}' is registered twice: {self._entries[name]!r} and {entry!r}")
        self._entries[name] = entry
        return entry

    def get(self, name: str) -> T:
        """The entry called `name`; a TargetError listing the known names otherwise."""
        try:
            return self._entries[name]
        except KeyError:
            known = sorted(self._entries)
            raise TargetError(
                f"unknown {self.kind} '{name}'{did_you_mean(name, known)} (known: {', '.join(known)})"
            ) from None

    def __getitem__(self, name: str) -> T:
        return self.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def items(self) -> list[tuple[str, T]]:
        return list(self._entries.items())

    def values(self) -> list[T]:
        return list(self._entries.values())

    def names(self) -> list[str]:
        return list(self._entries)


def discover(package: str, skip: tuple[str, ...] = (), packages: bool = False) -> list[str]:
    """Import every module of `package` (or, with `packages`, every sub-package) but `skip` (heavy modules a
    registry loads on use); return their names."""
    pkg = importlib.import_module(package)
    names = sorted(m.name for m in pkgutil.iter_modules(pkg.__path__) if m.ispkg == packages and m.name not in skip)
    for name in names:
        importlib.import_module(f"{package}.{name}")
    return names
