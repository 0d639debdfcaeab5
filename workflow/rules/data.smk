# fetch -> prepare: raw files are verified against published checksums; prepared sets are written whole.
# A dataset declared in the config (`datasets:`) is its own source: the fetch job copies its file(s) in,
# checked against the sha256 computed while planning (part of the job's params: a changed file re-runs it).
#
# Where the raw bytes come from (the mirror, or a download) is not part of their identity -- their checksum
# is -- so the mirror is not a param: switching DPVAE_DATA_MIRROR / data.mirror on or off re-runs nothing.
# The fetch job reads it from its environment (sbatch exports it to cluster jobs as well).

from dpvae.runs import prepares_secretly

_MIRROR_VARIABLE = "DPVAE_DATA_MIRROR"

if MIRROR:
    if not Path(MIRROR).is_dir():
        stop(
            f"data mirror {MIRROR} does not exist or is not a directory (from DPVAE_DATA_MIRROR or the config key "
            "data.mirror); point it at a directory laid out as <mirror>/<source>/<file>, or unset both to download"
        )
    # optional, so not an `envvars:` directive (that would require it to be set)
    os.environ[_MIRROR_VARIABLE] = MIRROR


rule fetch:
    input:
        lambda w: RULES.declared_files(w.source),  # a dataset declared in the config: its own file(s)
    output:
        fetched_marker(DATA, "{source}"),
    log:
        log_file("fetch/{source}"),
    benchmark:
        rule_benchmark(SCALE, "fetch", "{source}")
    conda:
        ENV
    params:
        dpvae=DPVAE,
        root=lambda w, output: Path(output[0]).parents[2],  # <root>/raw/<source>/SHA256SUMS
        unverified=lambda w: "--allow-unverified" if w.source in CONFIG.data.allow_unverified else "",
        declared=lambda w: RULES.declaration(w.source),
    shell:
        (
            "{params.dpvae} fetch --source {wildcards.source} --root {params.root} "
            '${{DPVAE_DATA_MIRROR:+--mirror "$DPVAE_DATA_MIRROR"}} {params.unverified} {params.declared} > {log} 2>&1'
        )


rule prepare:
    input:
        fetch_inputs,
    output:
        directory(prepared_dir(DATA, "{dataset}")),
    log:
        log_file("prepare/{dataset}"),
    benchmark:
        rule_benchmark(SCALE, "prepare", "{dataset}")
    conda:
        ENV
    params:
        dpvae=DPVAE,
        root=lambda w, output: Path(output[0]).parents[1],  # <root>/prepared/<dataset>
        seed=CONFIG.data.split_seed,
        secret=lambda w: "--secret" if prepares_secretly(CONFIG, w.dataset) else "",
    shell:
        "{params.dpvae} prepare --dataset {wildcards.dataset} --root {params.root} --seed {params.seed} {params.secret} > {log} 2>&1"
