"""What a render job's spec gives a renderer besides the tables (`workflow.Rules.item_spec`), for tests that build
a `RenderContext` by hand."""

from __future__ import annotations

from dpvae.reproductions import configured_variants
from dpvae.runs import split_variant


def spec_variants(experiments: dict) -> dict[str, dict]:
    """The configured entries (config.yaml) of the variants the experiments run, as the spec's `context.variants`
    holds them: a renderer reads a variant's method and privacy there."""
    variants = configured_variants()
    names = {split_variant(v)[0] for e in experiments.values() for v in e.get("variants", [])}
    return {v: variants[v] for v in sorted(names)}
