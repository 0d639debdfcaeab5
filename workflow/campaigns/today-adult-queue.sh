#!/usr/bin/env bash
# The "today" page at paper scale (issue 64 Build 7; docs/mst-aim.md): the experiment `today_adult` of config.yaml (MST
# and AIM beside PrivBayes, P3GM and DP-GM on Adult's declared domain, epsilon 0.3 / 1 / 3 / 10, 5 seeds), one job
# at a time, method by method, the cheap ones first, so that each method's table is recorded (into
# reproductions/today.csv) as soon as its 20 runs are built and before the next method starts; DP-GM last. Then the
# page, figures/today/adult.pdf, from the built runs. Records come from this checkout, which must be clean: `record`
# refuses a modified tree. Rerun the same command after an interruption: Snakemake keeps finished runs, and a table
# is recorded again only when rebuilt.
#   DPVAE_DATA_MIRROR=../shared/data nice -n 19 workflow/campaigns/today-adult-queue.sh
# Cost per run on the project's 2-core CPU, training + sampling + the two evaluations: PrivBayes ~45 s, P3GM ~1 min,
# DP-GM ~1 min (medians of the P3GM Adult campaign's five epsilon-1 runs, their benchmark TSVs: the four classifiers
# ~30 s, the 2-way marginals ~5 s; under contention one DP-GM run took 24 min to train and 49 min in all), MST ~1.5-4.5
# min and AIM ~14-34 min (docs/mst-aim.md's synth runs at epsilon 1 and 10, plus the evaluations). Twenty runs each:
# PrivBayes ~15 min, P3GM and DP-GM ~20 min, MST 0.5-1.5 h, AIM 5-11 h. METHODS reorders (the order records them).
set -euo pipefail
SNAKEMAKE=${SNAKEMAKE:-.venv/bin/snakemake}
PYTHON=${PYTHON:-.venv/bin/python}
TABLES=results/paper/tables/today_adult/adult
METHODS=${METHODS:-mst privbayes p3gm aim dp-gm}
for method in $METHODS; do
  table="$TABLES/$method.csv"
  command="nice -n 19 snakemake --cores 1 $table"
  echo "== $(date -u +%FT%TZ) $table"
  "$SNAKEMAKE" --cores 1 --quiet progress -- "$table"
  if [ ! -e "$table.recorded" ] || [ "$table" -nt "$table.recorded" ]; then
    "$PYTHON" -m dpvae record "$table" --command "$command" && touch "$table.recorded"
  fi
done
echo "== $(date -u +%FT%TZ) figures/today/adult.pdf"
"$SNAKEMAKE" --cores 1 --quiet progress -- figures/today/adult.pdf
echo "== $(date -u +%FT%TZ) done"
