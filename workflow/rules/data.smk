# fetch -> prepare: raw files are verified against published checksums; prepared sets are written whole.


rule fetch:
    output:
        f"{DATA}/raw/{{source}}/SHA256SUMS",
    log:
        "logs/fetch/{source}.log",
    params:
        dpvae=DPVAE,
        root=lambda w, output: Path(output[0]).parents[2],  # <root>/raw/<source>/SHA256SUMS
        mirror=f"--mirror {MIRROR}" if MIRROR else "",
        unverified=lambda w: "--allow-unverified" if w.source in config["data"]["allow_unverified"] else "",
    conda:
        ENV
    shell:
        "{params.dpvae} fetch --source {wildcards.source} --root {params.root} {params.mirror} {params.unverified} > {log} 2>&1"


rule prepare:
    input:
        fetch_inputs,
    output:
        directory(f"{DATA}/prepared/{{dataset}}"),
    log:
        "logs/prepare/{dataset}.log",
    params:
        dpvae=DPVAE,
        root=lambda w, output: Path(output[0]).parents[1],  # <root>/prepared/<dataset>
        seed=config["data"]["split_seed"],
    conda:
        ENV
    shell:
        "{params.dpvae} prepare --dataset {wildcards.dataset} --root {params.root} --seed {params.seed} > {log} 2>&1"
