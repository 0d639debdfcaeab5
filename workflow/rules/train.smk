# One generic training rule for every method: the run spec (method, resolved hyper-parameters, target
# epsilon, seed) comes from the run table; the method registry does the rest.

RUN = "results/runs/{dataset}/{variant}/eps{eps}/seed{seed}"


rule train:
    input:
        lambda w: prepared(w.dataset),
    output:
        model=directory(f"{RUN}/model"),
        ledger=f"{RUN}/privacy.json",
        meta=f"{RUN}/train.json",
    log:
        f"logs/{RUN}/train.log",
    params:
        dpvae=DPVAE,
        spec=spec_json,
    threads: 2
    resources:
        mem_mb=8000,
        runtime=240,
    conda:
        ENV
    shell:
        "OMP_NUM_THREADS={threads} {params.dpvae} train --spec {params.spec:q} > {log} 2>&1"


rule sample:
    input:
        model=f"{RUN}/model",
        data=lambda w: prepared(w.dataset),
    output:
        f"{RUN}/samples.npz",
    log:
        f"logs/{RUN}/sample.log",
    params:
        dpvae=DPVAE,
        spec=spec_json,
        n=lambda w: config["evaluation"]["n_samples"] or "",
    threads: 2
    conda:
        ENV
    shell:
        "OMP_NUM_THREADS={threads} {params.dpvae} sample --spec {params.spec:q} "
        "$( [ -n '{params.n}' ] && echo --n {params.n} ) > {log} 2>&1"
