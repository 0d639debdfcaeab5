# One generic training rule for every method: the run spec (method, resolved hyper-parameters, target
# epsilon, seed) comes from the run table; the method registry does the rest. A method's declared
# resources (threads, memory, runtime, GPU) size the job, here and on a cluster.
#
# A method's shared non-private first stage (DP2-VAE's pre-trained encoders) is a job of its own, keyed by
# exactly what it depends on (dataset, method, key = hash of the method's stage-1 parameters, seed): every
# run with that key (any epsilon, any stage-2 setting) takes its output as an input and loads it.


rule stage1:
    input:
        data=lambda w: prepared(w.dataset),
    output:
        model=directory(model_path(STAGE1)),
        meta=stage1_record(STAGE1),
    log:
        job_log(STAGE1, "stage1"),
    benchmark:
        job_benchmark(STAGE1, "stage1")
    conda:
        ENV
    threads: lambda w: _stage1_resources(w).threads
    resources:
        mem_mb=lambda w: _stage1_resources(w).mem_mb,
        runtime=lambda w: _stage1_resources(w).runtime,
        gpu=lambda w: gpus(_stage1_resources(w).gpu),
    params:
        dpvae=DPVAE,
        spec=_stage1_spec,
    shell:
        "OMP_NUM_THREADS={threads} {params.dpvae} stage1 --spec {params.spec:q} > {log} 2>&1"


# A release's first stage (a declared dataset whose runs are secret): non-private models of the private data,
# needed only until every run that loads them has trained, so Snakemake deletes them then (`temp`).
use rule stage1 as stage1_release with:
    output:
        model=temp(directory(model_path(STAGE1))),
        meta=temp(stage1_record(STAGE1)),
    wildcard_constraints:
        dataset=RELEASE_DATASETS,


ruleorder: stage1_release > stage1


rule train:
    input:
        data=lambda w: prepared(w.dataset),
        stage1=_stage1_inputs,
    output:
        model=directory(model_path(RUN)),
        ledger=ledger_file(RUN),
        meta=train_record(RUN),
    log:
        job_log(RUN, "train"),
    benchmark:
        job_benchmark(RUN, "train")
    conda:
        ENV
    threads: lambda w: _resources(w).threads
    resources:
        mem_mb=lambda w: _resources(w).mem_mb,
        runtime=lambda w: _resources(w).runtime,
        gpu=lambda w: gpus(_resources(w).gpu),
    params:
        dpvae=DPVAE,
        spec=_spec,
    shell:
        "OMP_NUM_THREADS={threads} {params.dpvae} train --spec {params.spec:q} > {log} 2>&1"


rule sample:
    input:
        meta=train_record(RUN),
        model=model_path(RUN),
        data=lambda w: prepared(w.dataset),
    output:
        samples_file(RUN),
    log:
        job_log(RUN, "sample"),
    benchmark:
        job_benchmark(RUN, "sample")
    conda:
        ENV
    threads: 2
    resources:
        mem_mb=8000,
        runtime=60,
    params:
        dpvae=DPVAE,
        run=lambda w, output: Path(output[0]).parent,
        n=lambda w: CONFIG.evaluation.n_samples or "",
    shell:
        "OMP_NUM_THREADS={threads} {params.dpvae} sample --run {params.run} "
        "$( [ -n '{params.n}' ] && echo --n {params.n} ) > {log} 2>&1"
