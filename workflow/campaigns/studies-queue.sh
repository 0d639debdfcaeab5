#!/usr/bin/env bash
# The studies of the asserted causes (issue 63 Build 4; overlays/studies.yaml says what each tests), one job at a
# time, each study's tables recorded into reproductions/studies/<study>.csv as soon as they are built, from this
# checkout (which must be clean: `record` refuses a modified tree). Rerun the same command after an interruption:
# Snakemake keeps finished runs, and a table is recorded again only when rebuilt. Cheapest first.
#   DPVAE_DATA_MIRROR=../shared/data nice -n 19 workflow/campaigns/studies-queue.sh [STUDY ...]
# Estimated CPU time per study, 5 seeds (one core; from the Adult public-domain campaign's benchmarks/*.tsv on
# this 2-core machine under load, and one seed of each image study at reduced size, docs/p3gm.md "Studies of the
# asserted causes"):
#   p3gm_adult_dropna_study      ~40 min  (real 50 s + PrivBayes 390 s a seed)
#   p3gm_privbayes_degree_study  ~35 min  (390 s a seed: train 75, sample 60, classifiers 135, TVD 120)
#   p3gm_privbayes_eps8_study    ~35 min
#   p3gm_ryan_label_study        ~30 min  (train 170, sample 75, classifiers 65, TVD 10 s a seed)
#   p3gm_dpgm_clustering_study   ~75 min  (train 360, sample 80, classifiers 305, TVD 90 s a seed)
#   dp2vae_merf_lr_study         ~50 min  (train 3 min, 60,000 samples, two LR fits; 0 where the seeds are built)
#   p3gm_dpgm_epochs_study       ~70 CPU-min, 1.5-3 h wall (10 runs; one seed at 6,000 MNIST records: 28 + 7 + 18
#                                CPU-s for train, sample, CNN, 196 + 111 + 100 s wall under a load of 14; x10 records)
#   p3gm_privbayes_pixels_study  ~3.5 CPU-h, 5-8 h wall (10 runs; one seed at 6,000 MNIST records: 107 CPU-s of
#                                training, 443 s wall under load, the network's counts x10 records; CNN 65 s a run)
set -euo pipefail
SNAKEMAKE=${SNAKEMAKE:-.venv/bin/snakemake}
PYTHON=${PYTHON:-.venv/bin/python}
OVERLAY=workflow/campaigns/overlays/studies.yaml
declare -A DATASETS=(
  [p3gm_adult_dropna_study]="adult-dropna"
  [p3gm_privbayes_degree_study]="adult"
  [p3gm_privbayes_eps8_study]="adult"
  [p3gm_ryan_label_study]="adult"
  [p3gm_dpgm_clustering_study]="adult"
  [dp2vae_merf_lr_study]="mnist"
  [p3gm_dpgm_epochs_study]="mnist-p3gm fashion-mnist-p3gm"
  [p3gm_privbayes_pixels_study]="mnist-p3gm fashion-mnist-p3gm"
)
ORDER=(p3gm_adult_dropna_study p3gm_privbayes_degree_study p3gm_privbayes_eps8_study p3gm_ryan_label_study
  p3gm_dpgm_clustering_study dp2vae_merf_lr_study p3gm_dpgm_epochs_study p3gm_privbayes_pixels_study)
studies=("${@:-${ORDER[@]}}")
for study in "${studies[@]}"; do
  [ -n "${DATASETS[$study]:-}" ] || { echo "studies-queue.sh: unknown study '$study' (one of: ${ORDER[*]})" >&2; exit 2; }
done
for study in "${studies[@]}"; do
  for dataset in ${DATASETS[$study]}; do
    table=results/paper/tables/$study/$dataset.csv
    command="nice -n 19 snakemake --cores 1 --configfile=$OVERLAY $table"
    echo "== $(date -u +%FT%TZ) $table"
    "$SNAKEMAKE" --cores 1 --configfile="$OVERLAY" --quiet progress -- "$table"
    if [ ! -e "$table.recorded" ] || [ "$table" -nt "$table.recorded" ]; then
      "$PYTHON" -m dpvae record "$table" --command "$command" && touch "$table.recorded"
    fi
  done
done
echo "== $(date -u +%FT%TZ) done"
