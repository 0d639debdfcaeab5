#!/usr/bin/env bash
# P3GM's Adult items (Tables VI / VIII, then Fig. 8) on Adult's declared public domain at paper scale, 5 seeds
# (overlays/p3gm-cpu-adult-public.yaml says why), one job at a time; each table is recorded as soon as it is built,
# from this checkout (which must be clean: `record` refuses a modified tree). Rerun the same command after an
# interruption: Snakemake keeps finished runs, and a recorded table is recorded again only when rebuilt.
#   DPVAE_DATA_MIRROR=../shared/data nice -n 19 workflow/campaigns/p3gm-adult-public-queue.sh
set -euo pipefail
SNAKEMAKE=${SNAKEMAKE:-.venv/bin/snakemake}
PYTHON=${PYTHON:-.venv/bin/python}
OVERLAY=workflow/campaigns/overlays/p3gm-cpu-adult-public.yaml
for table in results/paper/tables/p3gm_tabular/adult.csv results/paper/tables/p3gm_allocation/adult.csv; do
  command="nice -n 19 snakemake --cores 1 --configfile=$OVERLAY $table"
  echo "== $(date -u +%FT%TZ) $table"
  "$SNAKEMAKE" --cores 1 --configfile="$OVERLAY" --quiet progress -- "$table"
  if [ ! -e "$table.recorded" ] || [ "$table" -nt "$table.recorded" ]; then
    "$PYTHON" -m dpvae record "$table" --command "$command" && touch "$table.recorded"
  fi
done
echo "== $(date -u +%FT%TZ) done"
