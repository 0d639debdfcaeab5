#!/usr/bin/env bash
# LVAE Figs 1-3 at paper scale on a CPU, one run at a time, a whole seed (three models) before the next, so
# that an interrupted campaign leaves complete seeds. Interrupted runs resume from their checkpoint.
#   DPVAE_DATA_MIRROR=../shared/data nice -n 19 workflow/campaigns/lvae-queue.sh
# then: python -m dpvae record results/paper/tables/lvae_mia/mnist-lvae.csv
set -euo pipefail
SNAKEMAKE=${SNAKEMAKE:-.venv/bin/snakemake}
CONFIG=${CONFIG:-workflow/campaigns/overlays/lvae-cpu.yaml}
RUNS=results/paper/runs/mnist-lvae
METRICS="mc_attack elbo_attack outlier_exposure privacy_tradeoff frechet_pca sample_grid"
for seed in ${SEEDS:-0 1 2}; do
  for entry in "lvae-vae inf" "lvae-dpsgd 1" "lvae-lipschitz inf"; do
    read -r variant eps <<<"$entry"
    echo "== $(date -u +%FT%TZ) $variant eps$eps seed$seed"
    "$SNAKEMAKE" --cores 1 --configfile="$CONFIG" $(for m in $METRICS; do echo "$RUNS/$variant/eps$eps/seed$seed/metrics/$m.json"; done)
  done
done
echo "== $(date -u +%FT%TZ) tables and figures"
"$SNAKEMAKE" --cores 1 --configfile="$CONFIG" figures/lvae/fig1.pdf figures/lvae/fig2.pdf
