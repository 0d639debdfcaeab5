#!/usr/bin/env bash
# The "today" page at paper scale (issue 64 Build 7; docs/mst-aim.md): the experiment `today_adult` of config.yaml (MST
# and AIM beside PrivBayes, P3GM (its code's prior and the paper's, p3gm-mog) and DP-GM on Adult's declared domain,
# epsilon 0.3 / 1 / 3 / 10, 5 seeds), one job at a time, method by method, the cheap ones first, so that each method's
# table is recorded (into reproductions/today.csv) as soon as its 20 runs are built and before the next method starts;
# DP-GM last. Then the page, figures/today/adult.pdf, from the built runs. Records come from this checkout, which must
# be clean: `record` refuses a modified tree. Rerun the same command after an interruption: Snakemake keeps finished
# runs, and a table is recorded again only when rebuilt. After a killed session Snakemake's lock stays behind and
# refuses every seed (LockException): `.venv/bin/snakemake --unlock` first, when no other build runs here.
#   DPVAE_DATA_MIRROR=../shared/data nice -n 19 workflow/campaigns/today-adult-queue.sh [SEED]
# With SEED (0-4), one seed of every method at every epsilon under overlays/today-adult-seed<SEED>.yaml, each method's
# rows recorded as they are built (`record` merges them: same key + seed replaced) and no page: one session's share
# where the machine does not outlive a session (AIM alone is 6.5-10 h; a seed of it 80-120 min). The five
# pre-registered seeds stay five: a share never changes which seeds run, only how many are built at once.
# Measured (2-3 Dec 2026, the project's 2-core CPU, 7ea1973 / 90a2e5c, a run beside on the other core): twenty runs
# each with their evaluations, PrivBayes 8 min, P3GM 17.5 min, p3gm-mog 15 min, MST 13.5 min, DP-GM 16.5 min; AIM's
# seed 0 78 min (its trainings 2.6 / 6 / 29 / 38 min at epsilon 0.3 / 1 / 3 / 10); its seed 2 (877d6c1) 3.6 / 5.6 /
# 55 / 55 min: the final estimate's time varies with the junction tree the rounds select; 6.5-10 h for its twenty.
# METHODS reorders (the order records them) or selects: with a METHODS of its own the queue records those tables
# and stops before the page (the page builds every method's runs, AIM's included).
set -euo pipefail
SNAKEMAKE=${SNAKEMAKE:-.venv/bin/snakemake}
PYTHON=${PYTHON:-.venv/bin/python}
TABLES=results/paper/tables/today_adult/adult
OVERLAYS=workflow/campaigns/overlays
SELECTED=${METHODS:-}
METHODS=${METHODS:-mst privbayes p3gm p3gm-mog aim dp-gm}
SEED=${1:-}
overlay=() marker=.recorded
if [ -n "$SEED" ]; then
  overlay=("--configfile=$OVERLAYS/today-adult-seed$SEED.yaml")
  [ -e "${overlay[0]#*=}" ] || {
    echo "today-adult-queue.sh: no seed '$SEED' (one of 0 1 2 3 4)" >&2
    exit 2
  }
  marker=.seed$SEED.recorded
fi
for method in $METHODS; do
  table="$TABLES/$method.csv"
  command=$(echo nice -n 19 snakemake --cores 1 "${overlay[@]}" "$table")  # single spaces, with or without overlay
  echo "== $(date -u +%FT%TZ) $table ${overlay[*]}"
  "$SNAKEMAKE" --cores 1 "${overlay[@]}" --quiet progress -- "$table"
  if [ ! -e "$table$marker" ] || [ "$table" -nt "$table$marker" ]; then
    "$PYTHON" -m dpvae record "$table" --command "$command" && touch "$table$marker"
  fi
done
[ -z "$SEED" ] || { echo "== $(date -u +%FT%TZ) seed $SEED done (the page needs every seed built here)"; exit 0; }
[ -z "$SELECTED" ] || {
  echo "== $(date -u +%FT%TZ) $METHODS done (the page needs every method: run without METHODS)"
  exit 0
}
echo "== $(date -u +%FT%TZ) figures/today/adult.pdf"
"$SNAKEMAKE" --cores 1 --quiet progress -- figures/today/adult.pdf
echo "== $(date -u +%FT%TZ) done"
