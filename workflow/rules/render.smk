# render: one renderer per item (render/<paper>.py or render/<paper>/), reading only tidy tables, run artifacts and the
# paper's published numbers. A render job depends on its renderer module and its paper's published CSVs,
# so editing a plot re-renders that paper's items and retrains nothing. Every item is in the report.


rule item_spec:
    output:
        f"{RESULTS}/items/{{paper}}/{{item}}.json",
    log:
        "logs/render/{paper}/{item}.spec.log",
    conda:
        ENV
    params:
        spec=lambda w: RULES.item_spec(w.paper, w.item),
    script:
        "../scripts/write_spec.py"


_CAPTION = "../report/item.rst"
# Anything under figures/ that is not an item, a gathered item id or the scorecard.
_SECTIONS = "|".join(SECTIONS)
UNKNOWN_TARGET = (
    rf"(?!({_SECTIONS})/({ITEM_ID_PATTERN})\.(pdf|png|csv|tex)$)"
    rf"(?!({ITEM_ID_PATTERN})\.pdf$)(?!scorecard\.(pdf|csv)$)(?!experiments/[^/]+\.(pdf|csv|tex)$).+"
)
# Figures whose tidy data is an output beside them (the audit item): pdf, png and csv.
FIGURE_CSV_ITEMS = "|".join(sorted({i.id for i in ITEMS.values() if i.kind == "figure" and "csv" in i.outputs}))


rule render_table:
    input:
        unpack(_render_inputs),
    output:
        pdf=report(
            "figures/{paper}/{item}.pdf",
            caption=_CAPTION,
            category="{paper}",
            labels={"item": "{item}", "output": "pdf"},
        ),
        csv=report(
            "figures/{paper}/{item}.csv",
            caption=_CAPTION,
            category="{paper}",
            labels={"item": "{item}", "output": "csv"},
        ),
        tex="figures/{paper}/{item}.tex",
    log:
        "logs/render/{paper}/{item}.log",
    wildcard_constraints:
        item=r"table\d+",
    conda:
        ENV
    params:
        dpvae=DPVAE,
        caption=lambda w: RULES.caption(w.paper, w.item),
    shell:
        "{params.dpvae} render --spec {input.spec} > {log} 2>&1"


rule render_figure:
    input:
        unpack(_render_inputs),
    output:
        pdf=report(
            "figures/{paper}/{item}.pdf",
            caption=_CAPTION,
            category="{paper}",
            labels={"item": "{item}", "output": "pdf"},
        ),
        png=report(
            "figures/{paper}/{item}.png",
            caption=_CAPTION,
            category="{paper}",
            labels={"item": "{item}", "output": "png"},
        ),
    log:
        "logs/render/{paper}/{item}.log",
    wildcard_constraints:
        item=r"fig\d+",
    conda:
        ENV
    params:
        dpvae=DPVAE,
        caption=lambda w: RULES.caption(w.paper, w.item),
    shell:
        "{params.dpvae} render --spec {input.spec} > {log} 2>&1"


rule render_figure_csv:
    input:
        unpack(_render_inputs),
    output:
        pdf=report(
            "figures/{paper}/{item}.pdf",
            caption=_CAPTION,
            category="{paper}",
            labels={"item": "{item}", "output": "pdf"},
        ),
        png=report(
            "figures/{paper}/{item}.png",
            caption=_CAPTION,
            category="{paper}",
            labels={"item": "{item}", "output": "png"},
        ),
        csv=report(
            "figures/{paper}/{item}.csv",
            caption=_CAPTION,
            category="{paper}",
            labels={"item": "{item}", "output": "csv"},
        ),
    log:
        "logs/render/{paper}/{item}.log",
    wildcard_constraints:
        item=FIGURE_CSV_ITEMS,
    conda:
        ENV
    params:
        dpvae=DPVAE,
        caption=lambda w: RULES.caption(w.paper, w.item),
    shell:
        "{params.dpvae} render --spec {input.spec} > {log} 2>&1"


rule unknown_target:
    input:
        checked(lambda w: RULES.check_buildable(f"figures/{w.path}", dryrun=workflow.dryrun) or []),
    # Matches only what no other rule makes under figures/: explains what the valid targets are.
    output:
        "figures/{path}",
    log:
        "logs/unknown_target/{path}.log",
    wildcard_constraints:
        path=UNKNOWN_TARGET,
    conda:
        ENV
    shell:
        "false"


ruleorder: render_table > render_figure > render_figure_csv > scorecard > gather > render_experiment > unknown_target


rule gather:
    input:
        lambda w: RULES.gathered(w.item),
    output:
        "figures/{item}.pdf",
    log:
        "logs/gather/{item}.log",
    conda:
        ENV
    params:
        dpvae=DPVAE,
        pdfs=lambda w, input: " ".join(f"--pdf {p}" for p in input),
        pending=lambda w: json.dumps(RULES.gather_pending(w.item)),
    shell:
        "{params.dpvae} gather --item {wildcards.item} {params.pdfs} --pending {params.pending:q} "
        "--out {output} > {log} 2>&1"


rule scorecard:
    # Every published cell beside the recorded paper-scale reproductions (reproductions/<paper>.csv).
    input:
        published=RULES.published_files(""),
        reproductions=sorted(str(p) for p in Path(BASE, "reproductions").glob("*.csv")),
    output:
        pdf=report("figures/scorecard.pdf", caption="../report/scorecard.rst", category="scorecard"),
        csv=report("figures/scorecard.csv", caption="../report/scorecard.rst", category="scorecard"),
    log:
        "logs/render/scorecard.log",
    conda:
        ENV
    params:
        dpvae=DPVAE,
    shell:
        "{params.dpvae} scorecard --out {output.pdf} > {log} 2>&1"


# One table for any experiment (a paper's or the user's own): figures/experiments/<experiment>.pdf, .csv, .tex.
rule experiment_spec:
    output:
        f"{RESULTS}/experiments/{{experiment}}.json",
    log:
        "logs/render/experiments/{experiment}.spec.log",
    conda:
        ENV
    params:
        spec=lambda w: RULES.experiment_spec(w.experiment),
    script:
        "../scripts/write_spec.py"


rule render_experiment:
    input:
        unpack(_experiment_inputs),
    output:
        pdf=report(
            "figures/experiments/{experiment}.pdf",
            caption="../report/experiment.rst",
            category="experiments",
            labels={"experiment": "{experiment}", "output": "pdf"},
        ),
        csv="figures/experiments/{experiment}.csv",
        tex="figures/experiments/{experiment}.tex",
    log:
        "logs/render/experiments/{experiment}.log",
    conda:
        ENV
    params:
        dpvae=DPVAE,
        prefix=lambda w: f"figures/experiments/{w.experiment}",
    shell:
        "{params.dpvae} render-experiment --spec {input.spec} --out {params.prefix} > {log} 2>&1"
