#!/usr/bin/env bash
# The whole test suite as two pytest processes side by side: tests/workflow (the smoke build and the other
# Snakemake runs, many of them one job at a time) with the hash-seed runs (fresh processes too), and every other
# test. Same tests as a plain `python -m pytest`; on 2 cores the suite then keeps both busy. The split balances the
# two by measured durations (CI of 27 Nov 2026: tests/workflow 1,314 s, the rest 1,557 s of which the hash-seed
# module ~112 s; so the module joined the workflow process; a local CI run of 27 Nov, session 20: that process
# 1,427 s, the rest 1,872 s, so FID's feature tests (~120 s) and PriVAE's (~110 s) join it too; session 23's: 1,336 s and
# 1,801 s, and CI's whole run 1,834 s, so DP²-VAE's compiled-stage-2 tests (~207 s) join it; session 25's, with
# the second process on one thread (below): 1,691 s and 1,697 s, the whole local CI 1,867 s, session 24's ~3,100 s).
# Arguments go to both; exit status is non-zero when either fails. The other process's report is printed after the
# workflow one's.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
FIRST=(tests/workflow tests/methods/test_hash_seed.py tests/eval/test_fid_features.py tests/methods/test_privae.py
       tests/methods/test_dp2vae_compile.py)   # the process that runs in the foreground
report=$(mktemp)
trap 'rm -f "$report"' EXIT
# niced (the foreground one waits on Snakemake jobs) and on one OpenMP thread: with torch's default (one per core)
# its threads spin-wait for cores the foreground holds. benchmarks/suite_threads.sh, this 2-core CPU, 28 Nov 2026
# (benchmarks/measured/cpu-2026-11-28/suite-threads.log): four modules as two processes, both done in 64.8 s with
# the default, 52.7 s with this one's single thread (its own tests 61 s -> 34 s), 59.7 s with one thread in both
OMP_NUM_THREADS=1 nice -n 10 "$PY" -m pytest -p no:cacheprovider "${FIRST[@]/#/--ignore=}" "$@" >"$report" 2>&1 &
others=$!
"$PY" -m pytest "${FIRST[@]}" "$@"
workflow_status=$?
wait "$others"
others_status=$?
echo "== every other test (run beside it) =="
cat "$report"
exit $(( workflow_status != 0 || others_status != 0 ))
