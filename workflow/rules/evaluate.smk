# evaluate (one metric of one run; its inputs follow from what the metric declares it needs) ->
# aggregate (one tidy table per experiment and dataset); reference (a metric's cached per-dataset input,
# e.g. FID's real-image statistics); analyses are experiments computed without training runs.
rule evaluate:
    input:
        unpack(lambda w: RULES.evaluate_inputs(w.dataset, RUN.format(**dict(w.items())), w.metric)),
    output:
        f"{RUN}/metrics/{{metric}}.json",
    log:
        f"logs/{RUN}/evaluate-{{metric}}.log",
    benchmark:
        f"{RUN}/benchmarks/evaluate-{{metric}}.tsv"
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
        f"{RESULTS}/references/{{dataset}}/{{metric}}.npz",
    log:
        f"logs/{RESULTS}/references/{{dataset}}/{{metric}}.log",
    benchmark:
        f"{RESULTS}/references/{{dataset}}/{{metric}}.benchmark.tsv"
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
        f"{RESULTS}/tables/{{experiment}}/{{dataset}}/{{variant}}.runs.json",
    log:
        f"logs/{RESULTS}/aggregate/{{experiment}}/{{dataset}}/{{variant}}.spec.log",
    conda:
        ENV
    params:
        spec=lambda w: RULES.aggregate_spec(w.experiment, w.dataset, w.variant),
    script:
        "../scripts/write_spec.py"


rule aggregate:
    input:
        spec=f"{RESULTS}/tables/{{experiment}}/{{dataset}}/{{variant}}.runs.json",
        runs=lambda w: RULES.aggregate_inputs(w.experiment, w.dataset, w.variant),
    output:
        f"{RESULTS}/tables/{{experiment}}/{{dataset}}/{{variant}}.csv",
    log:
        f"logs/{RESULTS}/aggregate/{{experiment}}/{{dataset}}/{{variant}}.log",
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
        f"{RESULTS}/tables/{{experiment}}/{{dataset}}.csv",
    log:
        f"logs/{RESULTS}/combine/{{experiment}}/{{dataset}}.log",
    conda:
        ENV
    params:
        dpvae=DPVAE,
    shell:
        "{params.dpvae} combine {input} --out {output} > {log} 2>&1"


rule analyze:
    input:
        lambda w: [prepared(d) for d in config["experiments"][w.experiment]["datasets"]],
    output:
        f"{RESULTS}/tables/{{experiment}}.csv",
    log:
        f"logs/{RESULTS}/analyze/{{experiment}}.log",
    conda:
        ENV
    params:
        dpvae=DPVAE,
        context=lambda w: json.dumps(RULES.analysis_context(w.experiment), sort_keys=True),
    shell:
        "{params.dpvae} analyze --experiment {wildcards.experiment} --context {params.context:q} "
        "--out {output} > {log} 2>&1"
