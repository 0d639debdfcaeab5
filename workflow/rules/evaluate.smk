# evaluate (one metric of one run) -> aggregate (one tidy table per experiment and dataset);
# analyses are experiments computed without training runs.


rule evaluate:
    input:
        samples=f"{RUN}/samples.npz",
        model=f"{RUN}/model",
        data=lambda w: prepared(w.dataset),
    output:
        f"{RUN}/metrics/{{metric}}.json",
    log:
        f"logs/{RUN}/evaluate-{{metric}}.log",
    params:
        dpvae=DPVAE,
        spec=spec_json,
        options=metric_options,
    threads: 2
    resources:
        mem_mb=8000,
        runtime=240,
    conda:
        ENV
    shell:
        "OMP_NUM_THREADS={threads} {params.dpvae} evaluate --spec {params.spec:q} --metric {wildcards.metric} "
        "--options {params.options:q} --out {output} > {log} 2>&1"


rule aggregate:
    input:
        aggregate_inputs,
    output:
        "results/tables/{experiment}/{dataset}.csv",
    log:
        "logs/aggregate/{experiment}/{dataset}.log",
    params:
        dpvae=DPVAE,
        context=lambda w: json.dumps({
            "experiment": config["experiments"][w.experiment],
            "runs": [run_spec(config, r) for r in experiment_runs(config, w.experiment, w.dataset)],
        }, sort_keys=True),
    conda:
        ENV
    shell:
        "{params.dpvae} aggregate --experiment {wildcards.experiment} --context {params.context:q} "
        "--out {output} > {log} 2>&1"


rule analyze:
    input:
        analysis_inputs,
    output:
        "results/tables/{experiment}.csv",
    log:
        "logs/analyze/{experiment}.log",
    params:
        dpvae=DPVAE,
        context=analysis_context,
    conda:
        ENV
    shell:
        "{params.dpvae} analyze --experiment {wildcards.experiment} --context {params.context:q} "
        "--out {output} > {log} 2>&1"
