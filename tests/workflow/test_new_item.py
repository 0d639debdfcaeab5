"""Issue 39 (one place), Done-when 1: in a copy of the repository under git, each change is made as a user makes it
and `git` says which files it touched; the result is planned (`workflow.Rules`, `snakemake -n`) and, where that
is cheap, rendered.

- a new item over a new experiment: the experiment's config.yaml entry (with the paper's setting), one line in
  items.py and one renderer function that takes its experiment and variants from the item;
- an experiment added to an existing item (LVAE Fig. 3, whose renderer draws every experiment of its item): its
  config.yaml entries (the experiment and its variant) and its name in the item's line of items.py; no renderer;
- a new item over an existing experiment (P3GM Table IV's hyper-parameters without the paper's): one line in
  items.py and one renderer function; config.yaml unchanged.

Planted faults show that the checks can fail: a renderer with its own count of experiments, an experiment no item
names, a renderer with its own list of datasets.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

from dpvae.paths import item_prefix, item_spec_file
from support.workflow_runs import copy_repository, smoke, snakemake

ITEMS = "src/dpvae/items.py"
UTILITY_CURVES = "src/dpvae/render/p3gm/utility_curves.py"
OVERVIEW = "src/dpvae/render/p3gm/overview.py"
MEMBERSHIP = "src/dpvae/render/lvae/membership.py"

# -- a new item over a new experiment: P3GM Fig. 4's panels on Adult -----------------------------------------------

ADULT_EXPERIMENT = """\
  p3gm_adult_eps:
    paper: p3gm
    paper_setting: {datasets: [adult], epsilons: [0.5, 1]}
    description: Adult AUROC / AUPRC vs epsilon (Fig. 4's layout on Adult)
    datasets: [adult]
    variants: [p3gm, privbayes]
    epsilons: [0.5, 1]
    seeds: 1
    metrics: [tabular_classifiers]
"""
ADULT_ITEM = '        Item("p3gm", "fig10", F, "Adult AUROC / AUPRC vs epsilon", ("p3gm_adult_eps",)),\n'
ADULT_RENDERER = '''

@register_renderer("p3gm/fig10", handles=("datasets", "epsilons"))
def p3gm_fig10(ctx: RenderContext) -> None:
    """Fig. 4's panels for the item's own experiment."""
    utility_figure(ctx, FIG4)
'''

# -- an experiment added to LVAE Fig. 3: the Lipschitz decoder at L = 5 ----------------------------------------------

L5_VARIANT = """\
  lvae-lipschitz-l5:            # the Lipschitz decoder at L = 5
    method: lvae
    private: false
    params: {<<: *lvae, constraint: gradient_penalty, lipschitz: 5.0, gp_weight: 10.0, gp_probes: prior, gp_points: 16,
             gp_norm: spectral, gp_power_iterations: 1}

"""
L5_EXPERIMENT = """\
  lvae_lipschitz_l5:
    paper: lvae
    paper_setting: {datasets: [mnist], epsilons: [1]}
    description: The Lipschitz decoder at L = 5, attacked as in Fig. 3
    datasets: [mnist-lvae]
    variants: [lvae-lipschitz-l5]
    epsilons: [1]
    seeds: 1
    metrics: [mc_attack, elbo_attack]

"""
FIG3_EXPERIMENTS = '            ("lvae_mia", "lvae_spectral"),\n'
FIG3_WITH_L5 = '            ("lvae_mia", "lvae_spectral", "lvae_lipschitz_l5"),\n'

# -- a new item over an existing experiment: Table IV's hyper-parameters of this configuration alone ------------------

TABLE9_ITEM = '        Item("p3gm", "table9", T, "DP-SGD hyper-parameters of this configuration", ("p3gm_table4",)),\n'
TABLE9_RENDERER = '''

@register_renderer("p3gm/table9")
def p3gm_table9(ctx: RenderContext) -> None:
    """Table IV's hyper-parameters of this configuration alone: a row per dataset, a column per parameter."""
    table = ctx.tables[ctx.experiment]
    wide = table.pivot_table(index="dataset", columns="metric", values="value", sort=False)
    save_table(wide.reset_index(), ctx.prefix, "P3GM - DP-SGD hyper-parameters of this configuration")
'''


# -- the copy and its changes --------------------------------------------------------------------------------------


def _git(copy: Path, *args: str) -> str:
    result = subprocess.run(["git", *args], cwd=copy, capture_output=True, text=True, check=True)
    return result.stdout


def _repository(tmp_path: Path) -> Path:
    """A copy of the repository's build files, committed to a fresh git repository (bytecode ignored)."""
    (tmp_path / "repo").mkdir()
    copy = copy_repository(tmp_path / "repo")
    _git(copy, "init", "-q")
    (copy / ".git" / "info" / "exclude").write_text("__pycache__/\n")
    _git(copy, "add", "-A")
    _git(copy, "-c", "user.name=test", "-c", "user.email=test@localhost", "commit", "-q", "-m", "copy")
    return copy


def _changed(copy: Path) -> set[str]:
    """The files the copy's working tree changed or added since its commit (`git diff --name-only`)."""
    _git(copy, "add", "-A")
    return set(_git(copy, "diff", "--cached", "--name-only").split())


def _insert(copy: Path, path: str, before: str, text: str) -> None:
    """`text` into the copy's file `path` before the one line that starts with `before`."""
    file = copy / path
    lines = file.read_text().splitlines(keepends=True)
    at = [i for i, line in enumerate(lines) if line.startswith(before)]
    assert len(at) == 1, f"{path}: {len(at)} lines start with {before!r}"
    file.write_text("".join([*lines[: at[0]], text, *lines[at[0] :]]))


def _replace(copy: Path, path: str, old: str, new: str) -> None:
    file = copy / path
    assert file.read_text().count(old) == 1, f"{path}: {old!r} is not there once"
    file.write_text(file.read_text().replace(old, new))


def _append(copy: Path, path: str, text: str) -> None:
    file = copy / path
    file.write_text(file.read_text() + text)


def _in_copy(copy: Path, cwd: Path, *code: str) -> str:
    """Run Python `code` on the copy's package (its config.yaml and smoke overlay as `CONFIG`) in `cwd`; stdout."""
    env = {**os.environ, "PYTHONPATH": str(copy / "src")}
    config = f"CONFIG = [{str(copy / 'config.yaml')!r}, {str(copy / 'tests' / 'config' / 'smoke.yaml')!r}]"
    result = subprocess.run(
        [sys.executable, "-c", "\n".join([config, *code])], cwd=cwd, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def _planned(copy: Path, paper: str, item_id: str) -> dict:
    """The item's render spec in the copy (`Rules.item_spec`), its experiments' run directories and whether the
    item is a default target."""
    out = _in_copy(
        copy,
        copy,
        "import json",
        "from dpvae.config import load_config",
        "from dpvae.workflow import Rules",
        "plan = Rules(load_config(CONFIG), '.')",
        f"spec = plan.item_spec({paper!r}, {item_id!r}).to_json()",
        "runs = {e: [plan.run_dir(r) for d in x['datasets'] for r in plan.runs(e, d)]",
        "        for e, x in spec['context']['experiments'].items() if 'analysis' not in x}",
        f"default = 'figures/{paper}/{item_id}.pdf' in plan.default_targets()",
        "print(json.dumps({'spec': spec, 'runs': runs, 'default': default}))",
    )
    return json.loads(out)


def _dry_run(copy: Path, tmp_path: Path, target: str, mirror: Path) -> str:
    """What `snakemake -n TARGET` at smoke scale would run in a fresh directory (its output)."""
    work = Path(tmp_path, "dry-run")
    work.mkdir()
    dry = snakemake("-n", "--cores", "1", smoke(copy), target, cwd=work, repo=copy, mirror=mirror)
    assert dry.returncode == 0, dry.stdout[-2000:] + dry.stderr[-2000:]
    return dry.stdout


def _render(copy: Path, work: Path, spec: str) -> None:
    """Render in `work` with the copy's renderer from the render spec `spec` (a file under `work`), as the render
    job does."""
    _in_copy(copy, work, "from dpvae import stages", f"stages.render({spec!r})")


def _rendered_without_runs(copy: Path, tmp_path: Path, paper: str, item_id: str) -> str:
    """The text of the item's PDF rendered by the copy's renderer from its render spec (as the render job does),
    every table it reads present but empty (no run, no number: what the renderer takes from its item and the
    configuration)."""
    from pypdf import PdfReader

    work = Path(tmp_path, "render")
    work.mkdir(exist_ok=True)
    _in_copy(
        copy,
        work,
        "import json",
        "from pathlib import Path",
        "from dpvae.analyses import TIDY_COLUMNS",
        "from dpvae.config import load_config",
        "from dpvae.workflow import Rules",
        f"spec = Rules(load_config(CONFIG), {str(copy)!r}).item_spec({paper!r}, {item_id!r}).to_json()",
        "for table in [p for paths in spec['tables'].values() for p in paths]:",
        "    Path(table).parent.mkdir(parents=True, exist_ok=True)",
        "    Path(table).write_text(','.join(TIDY_COLUMNS) + '\\n')",
        "Path('spec.json').write_text(json.dumps(spec))",
        "from dpvae import stages",
        "stages.render('spec.json')",
    )
    reader = PdfReader(work / f"{item_prefix(paper, item_id)}.pdf")
    return " ".join(page.extract_text() for page in reader.pages)


# -- a new item over a new experiment ------------------------------------------------------------------------------


def test_a_new_item_over_a_new_experiment_is_config_items_and_one_renderer(tmp_path, mirror):
    copy = _repository(tmp_path)
    _insert(copy, "config.yaml", "  # ---------------- DP2-VAE ----", ADULT_EXPERIMENT + "\n")
    _insert(copy, ITEMS, '        Item("p3gm", "fig9",', ADULT_ITEM)
    _append(copy, UTILITY_CURVES, ADULT_RENDERER)
    assert _changed(copy) == {"config.yaml", ITEMS, UTILITY_CURVES}

    planned = _planned(copy, "p3gm", "fig10")
    assert sorted(planned["spec"]["tables"]) == ["p3gm_adult_eps"]
    assert planned["spec"]["context"]["experiments"]["p3gm_adult_eps"]["variants"] == ["p3gm", "privbayes"]
    assert planned["default"]
    dry = _dry_run(copy, tmp_path, "figures/p3gm/fig10.pdf", mirror)
    assert "render_figure" in dry and all(run in dry for run in planned["runs"]["p3gm_adult_eps"])


# -- an experiment added to an existing item -----------------------------------------------------------------------


def _add_l5_to_fig3(copy: Path, name_it_in_items: bool = True) -> None:
    """LVAE Fig. 3 gets the experiment `lvae_lipschitz_l5` (a new variant): config.yaml, and its name in the item."""
    _insert(copy, "config.yaml", "  # ---------------- P3GM (Takagi et al.)", L5_VARIANT)
    _insert(copy, "config.yaml", "  # ---------------- P3GM ----", L5_EXPERIMENT)
    if name_it_in_items:
        _replace(copy, ITEMS, FIG3_EXPERIMENTS, FIG3_WITH_L5)


def test_an_experiment_added_to_an_existing_item_is_config_and_its_name_in_the_item(tmp_path, mirror):
    copy = _repository(tmp_path)
    _add_l5_to_fig3(copy)
    assert _changed(copy) == {"config.yaml", ITEMS}  # no renderer: Fig. 3 draws every experiment of its item

    planned = _planned(copy, "lvae", "fig3")
    assert list(planned["spec"]["tables"]) == ["lvae_mia", "lvae_spectral", "lvae_lipschitz_l5"]
    assert planned["runs"]["lvae_lipschitz_l5"]  # its runs, in the render job's inputs and in the DAG
    artifacts = planned["spec"]["artifacts"]
    assert all(any(a.startswith(f"{run}/") for a in artifacts) for run in planned["runs"]["lvae_lipschitz_l5"])
    dry = _dry_run(copy, tmp_path, "figures/lvae/fig3.pdf", mirror)
    assert "render_figure" in dry and all(run in dry for run in planned["runs"]["lvae_lipschitz_l5"])

    assert "lvae-lipschitz-l5" in _rendered_without_runs(copy, tmp_path, "lvae", "fig3")


def test_an_experiment_no_item_names_is_not_planned_and_a_renderer_with_its_own_count_misses_it(tmp_path):
    copy = _repository(tmp_path)
    _add_l5_to_fig3(copy, name_it_in_items=False)  # planted: only config.yaml knows the experiment
    assert "lvae_lipschitz_l5" not in _planned(copy, "lvae", "fig3")["spec"]["tables"]

    _replace(copy, ITEMS, FIG3_EXPERIMENTS, FIG3_WITH_L5)
    # planted: the renderer counts its item's experiments itself (the paper's two) instead of asking the item
    _replace(copy, MEMBERSHIP, "for experiment in ctx.item.experiments", "for experiment in ctx.item.experiments[:2]")
    assert _changed(copy) == {"config.yaml", ITEMS, MEMBERSHIP}
    assert "lvae-lipschitz-l5" not in _rendered_without_runs(copy, tmp_path, "lvae", "fig3")


# -- a new item over an existing experiment ------------------------------------------------------------------------


def _cells_missing(rendered: Path, tidy: Path) -> list[tuple[str, str, str]]:
    """(dataset, metric, value) of each row of the experiment's tidy table that the rendered CSV does not show
    (as it writes numbers: 6 significant digits)."""
    shown = pd.read_csv(rendered, dtype=str).set_index("dataset")
    rows = pd.read_csv(tidy).itertuples()
    return [
        (r.dataset, r.metric, f"{r.value:.6g}")
        for r in rows
        if r.dataset not in shown.index or shown.get(r.metric, {}).get(r.dataset) != f"{r.value:.6g}"
    ]


def test_a_new_item_over_an_existing_experiment_is_one_item_and_one_renderer(tmp_path, mirror):
    copy = _repository(tmp_path)
    _insert(copy, ITEMS, '        Item("p3gm", "fig1",', TABLE9_ITEM)
    _append(copy, OVERVIEW, TABLE9_RENDERER)
    assert _changed(copy) == {ITEMS, OVERVIEW}  # config.yaml as it was

    work = Path(tmp_path, "work")
    work.mkdir()
    built = snakemake("--cores", "1", smoke(copy), "figures/p3gm/table9.pdf", cwd=work, repo=copy, mirror=mirror)
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    spec = json.loads((work / item_spec_file("smoke", "p3gm", "table9")).read_text())  # what the render job read
    assert list(spec["tables"]) == ["p3gm_table4"]
    (tidy,) = spec["tables"]["p3gm_table4"]
    rendered = work / f"{item_prefix('p3gm', 'table9')}.csv"
    assert len(pd.read_csv(work / tidy)) and not _cells_missing(rendered, work / tidy)

    # planted: the renderer keeps its own list of datasets instead of the experiment's (rendered again from the spec
    # file the build wrote)
    _replace(copy, OVERVIEW, "table.pivot_table(", 'table[table["dataset"].isin(["credit", "adult"])].pivot_table(')
    _render(copy, work, item_spec_file("smoke", "p3gm", "table9"))
    others = set(pd.read_csv(work / tidy)["dataset"]) - {"credit", "adult"}
    assert others and {dataset for dataset, _, _ in _cells_missing(rendered, work / tidy)} == others
