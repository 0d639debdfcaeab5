# fetch -> prepare: raw files are verified against published checksums; prepared sets are written whole.


rule fetch:
    output:
        f"{DATA}/raw/{{source}}/SHA256SUMS",
    log:
        "logs/fetch/{source}.log",
    params:
        mirror=f"--mirror {MIRROR}" if MIRROR else "",
        unverified=lambda w: "--allow-unverified" if w.source in config["data"]["allow_unverified"] else "",
    conda:
        ENV
    shell:
        "{DPVAE} fetch --source {wildcards.source} --root {DATA} {params.mirror} {params.unverified} > {log} 2>&1"


rule prepare:
    input:
        fetch_inputs,
    output:
        directory(f"{DATA}/prepared/{{dataset}}"),
    log:
        "logs/prepare/{dataset}.log",
    params:
        seed=config["data"]["split_seed"],
    conda:
        ENV
    shell:
        "{DPVAE} prepare --dataset {wildcards.dataset} --root {DATA} --seed {params.seed} > {log} 2>&1"
