# evaluate (one metric of one run; its inputs follow from what the metric declares it needs) ->
# aggregate (one tidy table per experiment and dataset); reference (a metric's cached per-dataset input,
# e.g. FID's real-image statistics); analyses are experiments computed without training runs.
rule evaluate:
    input:
        unpack(lambda w: RULES.evaluate_inputs(w.dataset, RUN.format(**dict(w.items())), w.metric)),
    output:
        metric_file(RUN, "{metric}"),
    log:
        job_log(RUN, "evaluate-{metric}"),
    benchmark:
        job_benchmark(RUN, "evaluate-{metric}")
    conda:
        ENV
    threads: lambda w: _metric(w).threads
    resources:
        mem_mb=lambda w: _metric(w).mem_mb,
        runtime=lambda w: _metric(w).runtime,
        gpu=lambda w: gpus(_metric(w).gpu),
    params:
        dpvae=DPVAE,
        run=lambda w, input: Path(input.train).parent,
        options=lambda w: json.dumps(RULES.metric_options(w.metric), sort_keys=True),
        reference=lambda w, input: f"--reference {input.reference}" if "reference" in input.keys() else "",
    shell:
        "OMP_NUM_THREADS={threads} {params.dpvae} evaluate --run {params.run} --metric {wildcards.metric} "
        "--options {params.options:q} {params.reference} --out {output} > {log} 2>&1"


rule reference:
    input:
        data=lambda w: prepared(w.dataset),
    output:
        reference_file(SCALE, "{dataset}", "{metric}"),
    log:
        log_file(reference_file(SCALE, "{dataset}", "{metric}", suffix="")),
    benchmark:
        reference_file(SCALE, "{dataset}", "{metric}", suffix=".benchmark.tsv")
    conda:
        ENV
    threads: 2
    resources:
        mem_mb=lambda w: _metric(w).mem_mb,
        runtime=lambda w: _metric(w).runtime,
        gpu=lambda w: gpus(_metric(w).gpu),
    params:
        dpvae=DPVAE,
        options=lambda w: json.dumps(RULES.reference_options(w.metric), sort_keys=True),
    shell:
        "OMP_NUM_THREADS={threads} {params.dpvae} reference --data {input.data} --metric {wildcards.metric} "
        "--options {params.options:q} --out {output} > {log} 2>&1"


rule aggregate_spec:
    output:
        aggregate_spec_file(SCALE, "{experiment}", "{dataset}", "{variant}"),
    log:
        log_file(f"{RESULTS}/aggregate/{{experiment}}/{{dataset}}/{{variant}}.spec"),
    benchmark:
        rule_benchmark(SCALE, "aggregate_spec", "{experiment}/{dataset}/{variant}")
    conda:
        ENV
    params:
        spec=lambda w: RULES.aggregate_spec(w.experiment, w.dataset, w.variant).to_json(),
    script:
        "../scripts/write_spec.py"


rule aggregate:
    input:
        spec=aggregate_spec_file(SCALE, "{experiment}", "{dataset}", "{variant}"),
        runs=lambda w: RULES.aggregate_inputs(w.experiment, w.dataset, w.variant),
    output:
        variant_table(SCALE, "{experiment}", "{dataset}", "{variant}"),
    log:
        log_file(f"{RESULTS}/aggregate/{{experiment}}/{{dataset}}/{{variant}}"),
    benchmark:
        rule_benchmark(SCALE, "aggregate", "{experiment}/{dataset}/{variant}")
    conda:
        ENV
    params:
        dpvae=DPVAE,
    shell:
        "{params.dpvae} aggregate --spec {input.spec} --out {output} > {log} 2>&1"


rule combine:
    input:
        lambda w: RULES.variant_tables(w.experiment, w.dataset),
    output:
        experiment_table(SCALE, "{experiment}", "{dataset}"),
    log:
        log_file(f"{RESULTS}/combine/{{experiment}}/{{dataset}}"),
    benchmark:
        rule_benchmark(SCALE, "combine", "{experiment}/{dataset}")
    conda:
        ENV
    params:
        dpvae=DPVAE,
    shell:
        "{params.dpvae} combine {input} --out {output} > {log} 2>&1"


rule analyze:
    input:
        lambda w: [prepared(d) for d in CONFIG.experiments[w.experiment].datasets],
    output:
        analysis_table(SCALE, "{experiment}"),
    log:
        log_file(f"{RESULTS}/analyze/{{experiment}}"),
    benchmark:
        rule_benchmark(SCALE, "analyze", "{experiment}")
    conda:
        ENV
    params:
        dpvae=DPVAE,
        context=lambda w: json.dumps(RULES.analysis_context(w.experiment).to_json(), sort_keys=True),
    shell:
        "{params.dpvae} analyze --experiment {wildcards.experiment} --context {params.context:q} "
        "--out {output} > {log} 2>&1"
