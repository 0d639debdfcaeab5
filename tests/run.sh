#!/usr/bin/env bash
# The whole test suite as two pytest processes side by side: tests/workflow (the smoke build and the other
# Snakemake runs, many of them one job at a time) with the modules that compile (torch.compile's C++ builds crawl
# in the niced process below), and every other test. Same tests as a plain `python -m pytest`; on 2 cores the suite
# then keeps both busy. The split balances the two by measured durations: stop 59's CI (29 Nov 2026, 2,100 s in
# all) ended the other process 8 min before this one, which then ran the hash-seed (~95 s), FID-feature, PriVAE
# and compiled-stage-2 modules; the hash-seed and PriVAE modules went back to the other process. A local CI of
# 29 Nov (beside a nice-19 campaign) with all four there: this process 1,879 s, the other 2,293 s, its FID-feature
# and compiled-stage-2 tests 203 s and 274 s against 55 s and 104 s here, so those two stay here.
# Arguments go to both; exit status is non-zero when either fails. The other process's report is printed after the
# workflow one's.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
FIRST=(tests/workflow tests/eval/test_fid_features.py tests/methods/test_dp2vae_compile.py)   # the foreground process
report=$(mktemp)
trap 'rm -f "$report"' EXIT
# niced (the foreground one waits on Snakemake jobs) and on one OpenMP thread: with torch's default (one per core)
# its threads spin-wait for cores the foreground holds. benchmarks/suite_threads.sh, this 2-core CPU, 28 Nov 2026
# (benchmarks/measured/cpu-2026-11-28/suite-threads.log): four modules as two processes, both done in 64.8 s with
# the default, 52.7 s with this one's single thread (its own tests 61 s -> 34 s), 59.7 s with one thread in both
start=$SECONDS
(OMP_NUM_THREADS=1 nice -n 10 "$PY" -m pytest -p no:cacheprovider "${FIRST[@]/#/--ignore=}" "$@" >"$report" 2>&1
 status=$?; echo "== every other test ended after $((SECONDS - start)) s" >>"$report"; exit $status) &
others=$!
"$PY" -m pytest "${FIRST[@]}" "$@"
workflow_status=$?
workflow_s=$((SECONDS - start))
wait "$others"
others_status=$?
echo "== every other test (run beside it) =="
cat "$report"
# last, where a truncated CI log still shows it: how long each process ran (tests/run.sh balances the two)
echo "== wall times: tests/workflow process ${workflow_s} s, every other test $(tail -1 "$report" | grep -o '[0-9]* s$')"
exit $(( workflow_status != 0 || others_status != 0 ))
