"""Issue 39 (Build 1, done-when): a new item over a new experiment is its config.yaml entry (with the paper's
setting), one line in items.py and one renderer function that takes its experiment and variants from the item;
no other file changes, and the item plans (`snakemake -n`) in a copy of the repository."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

from support.workflow_runs import copy_repository, smoke, snakemake

EXPERIMENT = {
    "p3gm_adult_eps": {
        "paper": "p3gm",
        "paper_setting": {"datasets": ["adult"], "epsilons": [0.5, 1]},
        "description": "Adult AUROC / AUPRC vs epsilon (Fig. 4's layout on Adult)",
        "datasets": ["adult"],
        "variants": ["p3gm", "privbayes"],
        "epsilons": [0.5, 1],
        "seeds": 1,
        "metrics": ["tabular_classifiers"],
    }
}
ITEM = '        Item("p3gm", "fig10", F, "Adult AUROC / AUPRC vs epsilon", ("p3gm_adult_eps",)),\n'
RENDERER = '''

@register_renderer("p3gm/fig10", handles=("datasets", "epsilons"))
def p3gm_fig10(ctx: RenderContext) -> None:
    """Fig. 4's panels for the item's own experiment."""
    utility_figure(ctx, FIG4)
'''


def _plan(copy: Path, *code: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(copy / "src")}
    return subprocess.run([sys.executable, "-c", "\n".join(code)], cwd=copy, env=env, capture_output=True, text=True)


def test_a_new_item_over_a_new_experiment_is_config_items_and_one_renderer(tmp_path, mirror):
    (tmp_path / "repo").mkdir()
    copy = copy_repository(tmp_path / "repo")
    config = yaml.safe_load((copy / "config.yaml").read_text())
    config["experiments"].update(EXPERIMENT)
    (copy / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    items = copy / "src" / "dpvae" / "items.py"
    anchor = '        Item("p3gm", "fig9",'
    items.write_text(items.read_text().replace(anchor, ITEM + anchor, 1))
    renderer = copy / "src" / "dpvae" / "render" / "p3gm" / "utility_curves.py"
    renderer.write_text(renderer.read_text() + RENDERER)

    planned = _plan(
        copy,
        "from dpvae.config import load_config",
        "from dpvae.workflow import Rules",
        "plan = Rules(load_config(['config.yaml', 'tests/config/smoke.yaml']), '.')",
        "spec = plan.item_spec('p3gm', 'fig10')",
        "print(sorted(spec['tables']), spec['context']['experiments']['p3gm_adult_eps']['variants'])",
        "print('default' if 'figures/p3gm/fig10.pdf' in plan.default_targets() else 'left out')",
    )
    assert planned.returncode == 0, planned.stderr[-2000:]
    assert planned.stdout.split("\n")[:2] == ["['p3gm_adult_eps'] ['p3gm', 'privbayes']", "default"]

    work = tmp_path / "work"
    work.mkdir()
    dry = snakemake("-n", "--cores", "1", smoke(copy), "figures/p3gm/fig10.pdf", cwd=work, repo=copy, mirror=mirror)
    assert dry.returncode == 0, dry.stdout[-2000:] + dry.stderr[-2000:]
    assert "render_figure" in dry.stdout and "train" in dry.stdout
