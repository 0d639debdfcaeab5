#!/usr/bin/env bash
# The whole test suite as two pytest processes side by side: tests/workflow (the smoke build and the other
# Snakemake runs, many of them one job at a time) and every other test. Same tests as a plain `python -m pytest`;
# on 2 cores the suite then keeps both busy (25 Nov 2026, fresh clone: 23 min for tests/workflow, 17 min for the
# rest beside it, against 26 min for one process). Arguments go to both; exit status is non-zero when either
# fails. The other process's report is printed after the workflow one's.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
report=$(mktemp)
trap 'rm -f "$report"' EXIT
nice -n 10 "$PY" -m pytest -p no:cacheprovider --ignore=tests/workflow "$@" >"$report" 2>&1 &   # the smoke build is the longer path
others=$!
"$PY" -m pytest tests/workflow "$@"
workflow_status=$?
wait "$others"
others_status=$?
echo "== every test outside tests/workflow (run beside it) =="
cat "$report"
exit $(( workflow_status != 0 || others_status != 0 ))
