"""Renderers take their experiments from their item (`ctx.experiment`, or `ctx.experiment_for(role)` for an item
of several) and their variants from the experiment's configuration (`ctx.variants(...)`, whether one is private
or the real data from its configured method): no module under src/dpvae/render/ holds an experiment name of
config.yaml as a string literal, nor a variant name in a list, tuple or set literal or in a comparison (==, !=,
in, ...), so an experiment and the variants it runs are named in config.yaml and items.py only. A variant name
may key a label dict (the paper's presentation, in its order: `common.in_order`)."""

from __future__ import annotations

import ast
from pathlib import Path

import yaml

from dpvae.paths import REPO_ROOT

RENDER = REPO_ROOT / "src" / "dpvae" / "render"
PAPERS = {"privae", "lvae", "p3gm", "dp2vae"}


def configured(key: str) -> set[str]:
    return set(yaml.safe_load((REPO_ROOT / "config.yaml").read_text())[key])


def experiment_names() -> set[str]:
    return configured("experiments")


def variant_names() -> set[str]:
    return configured("variants")


def render_modules() -> list[Path]:
    modules = sorted(RENDER.rglob("*.py"))
    assert PAPERS <= {m.parent.name for m in modules}  # the papers' packages read
    assert RENDER / "audit.py" in modules
    return modules


def is_name(node: ast.AST, names: set[str]) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names


def experiment_literals(module: Path, names: set[str]) -> list[str]:
    """'<module>:<line>: <name>' for every string literal of `module` (f-string parts included) in `names`."""
    tree = ast.parse(module.read_text(), filename=str(module))
    return [f"{module}:{node.lineno}: {node.value}" for node in ast.walk(tree) if is_name(node, names)]


def variant_literals(module: Path, names: set[str]) -> list[str]:
    """'<module>:<line>: <name>' for every string literal of `module` in `names` that is an element of a list,
    tuple or set literal (a display, not a dict) or an operand of a comparison, in the order of the source."""
    tree = ast.parse(module.read_text(), filename=str(module))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            found += [n for n in node.elts if is_name(n, names)]
        elif isinstance(node, ast.Compare):
            found += [n for n in (node.left, *node.comparators) if is_name(n, names)]
    return [f"{module}:{n.lineno}: {n.value}" for n in sorted(found, key=lambda n: (n.lineno, n.col_offset))]


def test_no_renderer_names_an_experiment():
    names = experiment_names()
    found = [hit for module in render_modules() for hit in experiment_literals(module, names)]
    assert not found, "experiment names as literals (ask the item: ctx.experiment / ctx.experiment_for):\n" + "\n".join(
        found
    )


def test_no_renderer_lists_or_compares_a_variant():
    names = variant_names()
    found = [hit for module in render_modules() for hit in variant_literals(module, names)]
    assert not found, (
        "variant names listed or compared as literals (ctx.variants(...) in a label dict's order: common.in_order; "
        "private / real data / ours from the configuration):\n" + "\n".join(found)
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


def test_the_check_finds_planted_variant_lists_and_comparisons(tmp_path):
    module = tmp_path / "planted.py"
    module.write_text(
        'LABELS = {"p3gm": "P3GM", "real": "real data"}  # label dict keys: allowed\n'
        "def render(ctx, variant):\n"
        '    """Compares variant == "p3gm" (prose in a docstring)."""\n'
        '    order = ["vae-mlp", "dp-gm"]\n'
        '    panels = [("real", "(a) real MNIST")]\n'
        '    private = variant in ("dp-vae", "p3gm")\n'
        '    if variant == "p3gm" or "real" != variant or variant not in {"ryan"}:\n'
        '        return LABELS.get("pgm", "pgm"), ctx.tables[variant], order, panels, private\n'
    )
    assert variant_literals(module, variant_names()) == [
        f"{module}:4: vae-mlp",
        f"{module}:4: dp-gm",
        f"{module}:5: real",
        f"{module}:6: dp-vae",
        f"{module}:6: p3gm",
        f"{module}:7: p3gm",
        f"{module}:7: real",
        f"{module}:7: ryan",
    ]
