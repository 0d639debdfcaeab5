"""The registries: registration beside the implementation, duplicates refused,
typed parameters and options, and configuration checks that stay light (no torch at validation time)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from dpvae.errors import TargetError
from dpvae.eval.registry import METRICS
from dpvae.methods.base import Method
from dpvae.methods.registry import METHODS, register_method
from dpvae.params import MethodParams, MetricOptions
from dpvae.registry import Registry
from dpvae.render.base import load_renderers


def test_a_registry_refuses_duplicates_and_explains_unknown_names():
    registry: Registry[int] = Registry("widget")
    registry.add("alpha", 1)
    with pytest.raises(ValueError, match="widget 'alpha' is registered twice"):
        registry.add("alpha", 2)
    with pytest.raises(TargetError, match="unknown widget 'alpah'; did you mean 'alpha'"):
        registry.get("alpah")


def test_registering_a_second_method_with_a_taken_name_fails():
    with pytest.raises(ValueError, match="registered twice"):

        @register_method
        class Real(Method):  # noqa: F841 - the decorator is what is tested
            name, paper, private, description = "real", "test", False, "a duplicate"

            def train(self, ctx): ...

            def sample(self, ctx, n): ...


def test_every_method_and_metric_has_typed_parameters_whose_defaults_parse():
    for method in METHODS.values():
        assert issubclass(method.Params, MethodParams), method.name
        assert method.Params.parse({}).to_dict().keys() == {f["name"] for f in method.Params.describe()}
    for metric in METRICS.values():
        assert issubclass(metric.Options, MetricOptions), metric.name
        metric.Options.parse({})
        assert metric.needs, metric.name


def test_every_item_renderer_is_registered_in_its_papers_module():
    for key, renderer in load_renderers().items():
        paper = f"dpvae.render.{key.split('/')[0]}"
        assert renderer.__module__ == paper or renderer.__module__.startswith(f"{paper}."), key


def test_validating_a_configuration_imports_no_heavy_library():
    """Snakemake parses the Snakefile (and validates) for every job on a cluster and every command: keep it light.
    matplotlib and pypdf load when a page is drawn (they were ~1.2 s of each `snakemake -n`'s 4.6 s)."""
    code = (
        "import sys; import dpvae.workflow; from dpvae.config import load_config; from dpvae.status import done_items; "
        "c = load_config(['config.yaml']); done_items(c); "
        "heavy = [m for m in ('torch', 'sklearn', 'jax', 'xgboost', 'torch_fidelity', 'DataSynthesizer', 'mbi', "
        "'matplotlib', 'pypdf') if m in sys.modules]; print(','.join(heavy))"
    )
    from dpvae.paths import REPO_ROOT

    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "src")}  # this checkout's package, not the venv's install
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT, env=env, check=True
    )
    assert out.stdout.strip() == "", f"imported at validation time: {out.stdout.strip()}"
