"""Renderers take their experiments from their item (`ctx.experiment`, or `ctx.experiment_for(role)` for an item
of several): no module under src/dpvae/render/ holds an experiment name of config.yaml as a string literal, so an
experiment is named in config.yaml and items.py only."""

from __future__ import annotations

import ast
from pathlib import Path

import yaml

from dpvae.paths import REPO_ROOT

RENDER = REPO_ROOT / "src" / "dpvae" / "render"


def experiment_names() -> set[str]:
    return set(yaml.safe_load((REPO_ROOT / "config.yaml").read_text())["experiments"])


def experiment_literals(module: Path, names: set[str]) -> list[str]:
    """'<module>:<line>: <name>' for every string literal of `module` (f-string parts included) in `names`."""
    tree = ast.parse(module.read_text(), filename=str(module))
    return [
        f"{module}:{node.lineno}: {node.value}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names
    ]


def test_no_renderer_names_an_experiment():
    names = experiment_names()
    modules = sorted(RENDER.rglob("*.py"))
    assert {"privae", "lvae", "p3gm", "dp2vae"} <= {m.parent.name for m in modules}  # the papers' packages read
    found = [hit for module in modules for hit in experiment_literals(module, names)]
    assert not found, "experiment names as literals (ask the item: ctx.experiment / ctx.experiment_for):\n" + "\n".join(
        found
    )


def test_the_check_finds_a_planted_experiment_name(tmp_path):
    module = tmp_path / "planted.py"
    module.write_text(
        "def render(ctx):\n"
        '    """Draws privae_sparsity (a docstring naming it is prose, not a literal equal to it)."""\n'
        '    table = ctx.tables["privae_sparsity"]\n'
        '    return table, f"{ctx.prefix} lvae_mia", ("lvae_mia", "x")\n'
    )
    assert experiment_literals(module, experiment_names()) == [
        f"{module}:3: privae_sparsity",
        f"{module}:4: lvae_mia",
    ]
