#!/usr/bin/env bash
# DP²-VAE Tables 1-2's Real-data and DP-MERF rows at the paper's protocol on a CPU (overlay
# workflow/campaigns/overlays/dp2vae-cpu-protocol.yaml, which states the protocol and the costs), one job at a time in
# this order, with the Real-data FID study of each dataset after its Table 1 cells (features of 70,000 real images,
# cached every 10,000). Everything resumes: Snakemake keeps finished jobs, the classifiers' finished fits and the study's
# features are kept, a finished study's CSV is not rebuilt. Usage, from the repo root of a clean checkout:
#   DPVAE_DATA_MIRROR=../shared/data nice -n 19 workflow/campaigns/dp2vae-protocol-queue.sh STUDY_DIR
# STUDY_DIR (outside the checkout) gets the study's CSVs and feature caches. Then record each cell's table:
#   python -m dpvae record results/paper/tables/dp2vae_eps10/mnist/real.csv --command "..." (the overlay's header)
set -euo pipefail
STUDY=${1:?usage: dp2vae-protocol-queue.sh STUDY_DIR}
PY=${PY:-.venv/bin/python}
SNAKEMAKE=${SNAKEMAKE:-.venv/bin/snakemake}
OVERLAY=workflow/campaigns/overlays/dp2vae-cpu-protocol.yaml
TABLES=results/paper/tables
study() {  # dataset
  [ -f "$STUDY/dp2vae_real_fid_$1.csv" ] && return
  echo "== $(date -u +%FT%TZ) study $1"
  PYTHONPATH=src "$PY" workflow/campaigns/dp2vae_real_fid.py --dataset "$1" --resizes tf1 \
    --cache "$STUDY/cache-$1" --out "$STUDY/dp2vae_real_fid_$1.csv"
}
cell() {  # table
  echo "== $(date -u +%FT%TZ) $1"
  "$SNAKEMAKE" --cores 2 --configfile="$OVERLAY" --quiet progress -- "$TABLES/$1.csv"
}
mkdir -p "$STUDY"
cell dp2vae_eps10/mnist/real
cell dp2vae_eps10/mnist/dp-merf
study mnist
cell dp2vae_eps10/fashion-mnist/real
cell dp2vae_eps10/fashion-mnist/dp-merf
study fashion-mnist
cell dp2vae_eps1/mnist/dp-merf
cell dp2vae_eps1/fashion-mnist/dp-merf
echo "== $(date -u +%FT%TZ) done"
