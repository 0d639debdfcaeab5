#!/usr/bin/env bash
# The whole test suite as two pytest processes side by side: tests/workflow (the smoke build and the other
# Snakemake runs, which leave a core idle most of the time) and every other test. Same tests as a plain
# `python -m pytest`, about a fifth less wall time on 2 cores. Arguments go to both; exit status is non-zero when
# either fails. The other process's report is printed after the workflow one's.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
report=$(mktemp)
trap 'rm -f "$report"' EXIT
"$PY" -m pytest -p no:cacheprovider --ignore=tests/workflow "$@" >"$report" 2>&1 &
others=$!
"$PY" -m pytest tests/workflow "$@"
workflow_status=$?
wait "$others"
others_status=$?
echo "== every test outside tests/workflow (run beside it) =="
cat "$report"
exit $(( workflow_status != 0 || others_status != 0 ))
