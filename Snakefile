# dpvae: every figure and table of four DP-VAE papers as a Snakemake target.
#   snakemake --cores 2 figures/p3gm/table6.pdf        one item (figures/<paper>/<item>.pdf)
#   snakemake --cores 2 figures/table2.pdf             an item id gathered across papers
#   snakemake --cores 2 figures/experiments/p3gm_tabular.pdf   one table for any experiment of config.yaml
#   snakemake --cores 2                                every item that can be built today
#   snakemake --report report.html                     every built item with its caption
# Configuration: config.yaml (paper scale) or --configfile=tests/config/smoke.yaml (CI scale).

import os
import sys

from snakemake.utils import min_version

min_version("9.0")

sys.path.insert(0, os.path.join(workflow.basedir, "src"))
from dpvae.items import ITEM_ID_PATTERN, ITEMS, SECTIONS  # noqa: E402


# Paper scale, always loaded (beside this Snakefile); --configfile overlays are merged on top of it.
configfile: os.path.join(workflow.basedir, "config.yaml")


report: "workflow/report/workflow.rst"


wildcard_constraints:
    source=r"[a-z0-9][a-z0-9_.-]*",
    dataset=r"[a-z0-9][a-z0-9_.-]*",
    variant=r"[a-z0-9][a-z0-9_.=@-]*",
    eps=r"[0-9][0-9.e+-]*|inf",
    seed=r"\d+",
    method=r"[a-z0-9][a-z0-9_.-]*",
    key=r"[0-9a-f]{12}",
    metric=r"[a-z0-9_]+",
    experiment=r"[a-z0-9][a-z0-9_.-]*",
    paper="|".join(SECTIONS),
    item=ITEM_ID_PATTERN,


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/render.smk"


localrules:
    aggregate_spec,
    aggregate,
    combine,
    analyze,
    item_spec,
    render_table,
    render_figure,
    render_figure_csv,
    gather,
    scorecard,
    claims,
    experiment_spec,
    render_experiment,


onstart:
    start_worker()


onsuccess:
    stop_worker()


onerror:
    stop_worker()


rule all:
    default_target: True
    input:
        default_targets(),
