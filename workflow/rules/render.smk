# render: one renderer per item (render/<paper>.py or render/<paper>/), reading only tidy tables, run artifacts and the
# paper's published numbers. A render job depends on its renderer module and its paper's published CSVs,
# so editing a plot re-renders that paper's items and retrains nothing. Every item is in the report.

# The output prefixes of an item's and of an experiment's render job (figures/<paper>/<item>,
# figures/experiments/<experiment>).
ITEM = item_prefix("{paper}", "{item}")
EXPERIMENT = experiment_prefix("{experiment}")


rule item_spec:
    output:
        item_spec_file(SCALE, "{paper}", "{item}"),
    log:
        render_log(ITEM, ".spec"),
    benchmark:
        rule_benchmark(SCALE, "item_spec", "{paper}/{item}")
    conda:
        ENV
    params:
        spec=lambda w: RULES.item_spec(w.paper, w.item).to_json(),
    script:
        "../scripts/write_spec.py"


_CAPTION = "../report/item.rst"
# Anything under figures/ that is not an item, a gathered item id, the scorecard or the claims.
_SECTIONS = "|".join(SECTIONS)
UNKNOWN_TARGET = (
    rf"(?!({_SECTIONS})/({ITEM_ID_PATTERN})\.(pdf|png|csv|tex)$)"
    rf"(?!({ITEM_ID_PATTERN})\.pdf$)(?!(scorecard|claims)\.(pdf|csv)$)(?!experiments/[^/]+\.(pdf|csv|tex)$).+"
)
# Figures whose tidy data is an output beside them (the audit item): pdf, png and csv.
FIGURE_CSV_ITEMS = "|".join(sorted({i.id for i in ITEMS.values() if i.kind == "figure" and "csv" in i.outputs}))


rule render_table:
    input:
        unpack(_render_inputs),
    output:
        pdf=report(
            f"{ITEM}.pdf",
            caption=_CAPTION,
            category="{paper}",
            labels={"item": "{item}", "output": "pdf"},
        ),
        csv=report(
            f"{ITEM}.csv",
            caption=_CAPTION,
            category="{paper}",
            labels={"item": "{item}", "output": "csv"},
        ),
        tex=f"{ITEM}.tex",
    log:
        render_log(ITEM),
    benchmark:
        rule_benchmark(SCALE, "render_table", "{paper}/{item}")
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
            f"{ITEM}.pdf",
            caption=_CAPTION,
            category="{paper}",
            labels={"item": "{item}", "output": "pdf"},
        ),
        png=report(
            f"{ITEM}.png",
            caption=_CAPTION,
            category="{paper}",
            labels={"item": "{item}", "output": "png"},
        ),
    log:
        render_log(ITEM),
    benchmark:
        rule_benchmark(SCALE, "render_figure", "{paper}/{item}")
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
            f"{ITEM}.pdf",
            caption=_CAPTION,
            category="{paper}",
            labels={"item": "{item}", "output": "pdf"},
        ),
        png=report(
            f"{ITEM}.png",
            caption=_CAPTION,
            category="{paper}",
            labels={"item": "{item}", "output": "png"},
        ),
        csv=report(
            f"{ITEM}.csv",
            caption=_CAPTION,
            category="{paper}",
            labels={"item": "{item}", "output": "csv"},
        ),
    log:
        render_log(ITEM),
    benchmark:
        rule_benchmark(SCALE, "render_figure_csv", "{paper}/{item}")
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
        checked(lambda w: RULES.check_buildable(figure_file(w.path), dryrun=workflow.dryrun) or []),
    # Matches only what no other rule makes under figures/: explains what the valid targets are.
    output:
        figure_file("{path}"),
    log:
        log_file("unknown_target/{path}"),
    wildcard_constraints:
        path=UNKNOWN_TARGET,
    conda:
        ENV
    shell:
        "false"


ruleorder: render_table > render_figure > render_figure_csv > scorecard > claims > gather > render_experiment > unknown_target


rule gather:
    input:
        lambda w: RULES.gathered(w.item),
    output:
        gathered_file("{item}"),
    log:
        log_file("gather/{item}"),
    benchmark:
        rule_benchmark(SCALE, "gather", "{item}")
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
        pdf=report(f"{SCORECARD}.pdf", caption="../report/scorecard.rst", category="scorecard"),
        csv=report(f"{SCORECARD}.csv", caption="../report/scorecard.rst", category="scorecard"),
    log:
        render_log(SCORECARD),
    benchmark:
        rule_benchmark(SCALE, "scorecard")
    conda:
        ENV
    params:
        dpvae=DPVAE,
    shell:
        "{params.dpvae} scorecard --out {output.pdf} > {log} 2>&1"


rule claims:
    # The papers' claims (workflow/resources/published/claims.csv), each judged by code over the recorded rows.
    input:
        published=RULES.published_files(""),
        reproductions=sorted(str(p) for p in Path(BASE, "reproductions").glob("*.csv")),
    output:
        pdf=report(f"{CLAIMS}.pdf", caption="../report/claims.rst", category="scorecard"),
        csv=report(f"{CLAIMS}.csv", caption="../report/claims.rst", category="scorecard"),
    log:
        render_log(CLAIMS),
    benchmark:
        rule_benchmark(SCALE, "claims")
    conda:
        ENV
    params:
        dpvae=DPVAE,
    shell:
        "{params.dpvae} claims --out {output.pdf} > {log} 2>&1"


# One table for any experiment (a paper's or the user's own): figures/experiments/<experiment>.pdf, .csv, .tex.
rule experiment_spec:
    output:
        experiment_spec_file(SCALE, "{experiment}"),
    log:
        render_log(EXPERIMENT, ".spec"),
    benchmark:
        rule_benchmark(SCALE, "experiment_spec", "{experiment}")
    conda:
        ENV
    params:
        spec=lambda w: RULES.experiment_spec(w.experiment).to_json(),
    script:
        "../scripts/write_spec.py"


rule render_experiment:
    input:
        unpack(_experiment_inputs),
    output:
        pdf=report(
            f"{EXPERIMENT}.pdf",
            caption="../report/experiment.rst",
            category="experiments",
            labels={"experiment": "{experiment}", "output": "pdf"},
        ),
        csv=f"{EXPERIMENT}.csv",
        tex=f"{EXPERIMENT}.tex",
    log:
        render_log(EXPERIMENT),
    benchmark:
        rule_benchmark(SCALE, "render_experiment", "{experiment}")
    conda:
        ENV
    params:
        dpvae=DPVAE,
        prefix=lambda w: experiment_prefix(w.experiment),
    shell:
        "{params.dpvae} render-experiment --spec {input.spec} --out {params.prefix} > {log} 2>&1"
