#!/usr/bin/env bash
# PriVAE fig1 at paper scale on a CPU, one run at a time in priority order (each target = one run's three
# metrics; snakemake trains it first). Interrupted runs resume from their checkpoint. Usage, from the repo root:
#   DPVAE_DATA_MIRROR=../shared/data nice -n 10 workflow/campaigns/privae-fig1-queue.sh
# ONLY="micro-agg batch-agg micro-agg-sound batch-agg-sound" queues just those variants (the aggregation curves,
# issue 40 Build 3; session 15 finished micro-agg eps10 seed0 with it at nice 19, ~50 min per run on a shared CPU).
# OVERLAY=FILE: another overlay path (default workflow/campaigns/overlays/privae-cpu.yaml; a checkout from before the
# overlays moved (e.g. a campaign's own worktree) has it one folder up, without overlays/).
# then render with: snakemake --cores 2 --configfile=workflow/campaigns/overlays/privae-cpu.yaml figures/privae/fig1.pdf
set -euo pipefail
SNAKEMAKE=${SNAKEMAKE:-.venv/bin/snakemake}
OVERLAY=${OVERLAY:-workflow/campaigns/overlays/privae-cpu.yaml}
RUNS=results/paper/runs/fashion-mnist-32
targets() {  # variant eps seed
  for m in hoyer_sparsity latent_mmd iwae_loglik; do echo "$RUNS/$1/eps$2/seed$3/metrics/$m.json"; done
}
queue=()
for seed in 0 1 2; do
  queue+=("vae-mmd inf $seed" "vae-sparse inf $seed")
  for eps in 10 1 100; do
    for variant in privae-mmd privae privae-mmd-sound; do queue+=("$variant $eps $seed"); done
  done
done
for seed in 0 1 2; do
  for eps in 10 1 100; do
    for variant in micro-agg batch-agg micro-agg-sound batch-agg-sound; do queue+=("$variant $eps $seed"); done
  done
done
for entry in "${queue[@]}"; do
  read -r variant eps seed <<<"$entry"
  [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $variant "* ]] && continue
  echo "== $(date -u +%FT%TZ) $variant eps$eps seed$seed"
  "$SNAKEMAKE" --cores 2 --configfile="$OVERLAY" --quiet progress -- $(targets "$variant" "$eps" "$seed")
done
