"""Markdown listings of every method's typed parameters and every metric's needs and options; a variant's
parameters resolved for one (dataset, epsilon), each with where it comes from."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dpvae.eval.registry import METRICS
from dpvae.methods.registry import METHODS
from dpvae.params import Params

if TYPE_CHECKING:
    from dpvae.config import Config


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


def resolved_parameters(config: Config, name: str, dataset: str, epsilon: str) -> str:
    """Every parameter of the variants named `name` (the variant itself, else every variant of method `name`) on
    `dataset` at `epsilon`: its value and its source (a config key, or the method's default)."""
    from dpvae.runs import is_private, resolved_sources
    from dpvae.schema import format_eps

    variants = (
        [name] if name in config.variants else sorted(v for v, entry in config.variants.items() if entry.method == name)
    )
    if not variants:
        raise KeyError(f"no variant or method '{name}' in the configuration")
    lines = []
    for variant in variants:
        method = METHODS.get(config.variants[variant].method)
        eps = format_eps(epsilon) if is_private(config, variant) else "inf"
        sources = resolved_sources(config, variant, dataset, eps)
        lines += [f"variant {variant} (method {method.name}) on {dataset} at epsilon {eps}:"]
        width = max(len(f["name"]) for f in method.Params.describe())
        for field in method.Params.describe():
            value, source = sources.get(field["name"], (field["default"], f"default of method {method.name}"))
            lines.append(f"  {field['name']:<{width}}  {value!r:<12}  {source}")
        lines.append("")
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
