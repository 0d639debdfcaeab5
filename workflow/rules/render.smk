# render: one renderer per item, reading only tidy tables, run artifacts and the published numbers.

PUBLISHED = sorted(str(p) for p in Path(workflow.basedir, "workflow/resources/published").glob("*.csv"))


rule render_table:
    input:
        render_inputs,
        published=PUBLISHED,
    output:
        multiext("figures/{paper}/{item}", ".pdf", ".csv", ".tex"),
    log:
        "logs/render/{paper}/{item}.log",
    wildcard_constraints:
        item=r"table\d+",
    params:
        dpvae=DPVAE,
        args=render_args,
        context=render_context,
    conda:
        ENV
    shell:
        "{params.dpvae} render --item {wildcards.paper}/{wildcards.item} --context {params.context:q} "
        "{params.args} > {log} 2>&1"


rule render_figure:
    input:
        render_inputs,
        published=PUBLISHED,
    output:
        multiext("figures/{paper}/{item}", ".pdf", ".png"),
    log:
        "logs/render/{paper}/{item}.log",
    wildcard_constraints:
        item=r"fig\d+",
    params:
        dpvae=DPVAE,
        args=render_args,
        context=render_context,
    conda:
        ENV
    shell:
        "{params.dpvae} render --item {wildcards.paper}/{wildcards.item} --context {params.context:q} "
        "{params.args} > {log} 2>&1"


rule gather:
    input:
        gathered,
    output:
        "figures/{item}.pdf",
    log:
        "logs/gather/{item}.log",
    params:
        dpvae=DPVAE,
        pdfs=lambda w, input: " ".join(f"--pdf {p}" for p in input),
        pending=gather_pending,
    conda:
        ENV
    shell:
        "{params.dpvae} gather --item {wildcards.item} {params.pdfs} --pending {params.pending:q} "
        "--out {output} > {log} 2>&1"
