"""Markdown listings of every method's typed parameters and every metric's needs and options."""

from __future__ import annotations

from dpvae.eval.registry import METRICS
from dpvae.methods.registry import METHODS
from dpvae.params import Params


def _fields(params: type[Params]) -> list[str]:
    rows = ["| parameter | type | default | meaning |", "|---|---|---|---|"]
    rows += [
        f"| `{f['name']}` | {f['type'].replace('|', '/')} | `{f['default']!r}` | {f['doc']} |"
        for f in params.describe()
    ]
    return rows


def method_catalog(name: str | None = None) -> str:
    lines = []
    for method in [METHODS.get(name)] if name else sorted(METHODS.values(), key=lambda m: m.name):
        r = method.RESOURCES
        lines += [
            f"### `{method.name}` ({method.paper}; {'private' if method.private else 'non-private'})",
            "",
            method.description,
            "",
            f"Resources of a training job: {r.threads} threads, {r.mem_mb} MB, {r.runtime} min"
            f"{', GPU when available' if r.gpu else ''}; config `precision` applied: "
            f"{', '.join(method.precisions)}.",
            "",
            f"With your data ({' or '.join(method.kinds)} records): {method.data_scaling}",
            "",
            *_fields(method.Params),
            "",
        ]
    return "\n".join(lines)


def metric_catalog(name: str | None = None) -> str:
    lines = []
    for metric in [METRICS.get(name)] if name else METRICS.values():
        lines += [
            f"### `{metric.name}`",
            "",
            metric.description,
            "",
            f"Needs: {', '.join(metric.needs)}{'; GPU when available' if metric.gpu else ''}.",
            "",
        ]
        if metric.Options.describe():
            lines += [*_fields(metric.Options), ""]
    return "\n".join(lines)
