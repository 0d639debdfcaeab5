#!/usr/bin/env bash
# The "today" page at paper scale (issue 64 Build 7; docs/mst-aim.md): the experiment `today_adult` of config.yaml (MST
# and AIM beside PrivBayes, P3GM and DP-GM on Adult's declared domain, epsilon 0.3 / 1 / 3 / 10, 5 seeds), one job
# at a time, method by method, the cheap ones first, so that each method's table is recorded (into
# reproductions/today.csv) as soon as its 20 runs are built and before the next method starts; DP-GM last. Then the
# page, figures/today/adult.pdf, from the built runs. Records come from this checkout, which must be clean: `record`
# refuses a modified tree. Rerun the same command after an interruption: Snakemake keeps finished runs, and a table
# is recorded again only when rebuilt.
#   DPVAE_DATA_MIRROR=../shared/data nice -n 19 workflow/campaigns/today-adult-queue.sh
# Cost per run on the project's 2-core CPU (training + sampling; every run adds its evaluation, ~4 min: the four
# classifiers ~3 min, the 2-way marginals ~1 min, the P3GM Adult campaign's benchmark TSVs): PrivBayes ~10 s, P3GM
# ~30 s, DP-GM ~30 s (one of the campaign's five took 24 min under contention), MST ~1-4 min and AIM ~13-33 min
# (docs/mst-aim.md's synth runs at epsilon 1 and 10). Twenty runs per method: about 1.5 h each for PrivBayes,
# P3GM, DP-GM and MST, 6-12 h for AIM.
set -euo pipefail
SNAKEMAKE=${SNAKEMAKE:-.venv/bin/snakemake}
PYTHON=${PYTHON:-.venv/bin/python}
TABLES=results/paper/tables/today_adult/adult
for method in mst privbayes p3gm aim dp-gm; do
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
