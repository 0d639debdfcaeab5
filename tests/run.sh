#!/usr/bin/env bash
# The whole test suite as pytest processes side by side on 2 cores: tests/workflow (the smoke build and the other
# Snakemake runs, many of them one job at a time) with the modules that compile (torch.compile's C++ builds crawl
# in a niced process), beside every other test; the SWING modules run when the first of those two ends, beside
# the other, so that neither core idles at the end whichever process is the longer on a given machine. Same tests
# as a plain `python -m pytest`.
# Measured: stop 59's CI (29 Nov 2026) ended the other process 8 min before the workflow one; stop 66's (2 Dec,
# 1,873 s in all) ended the workflow one first, the other process taking 1,712 s with the hash-seed module's 233 s
# in it (a local run that day: workflow process 2,166 s, the other 2,886 s, both beside a campaign and helpers).
# A quiet .ci/run of 70d3baa (2 Dec, 1,553 s in all): the workflow process 1,339 s, the other 1,107 s, then the
# swing modules beside the workflow one until 1,410 s.
# The niced processes run on one OpenMP thread: with torch's default (one per core) their threads spin-wait for
# cores the workflow process holds. benchmarks/suite_threads.sh, this 2-core CPU, 28 Nov 2026
# (benchmarks/measured/cpu-2026-11-28/suite-threads.log): four modules as two processes, both done in 64.8 s with
# the default, 52.7 s with a single thread in the niced one (its own tests 61 s -> 34 s), 59.7 s with one in both.
# Arguments go to every process; the exit status is non-zero when any fails (pytest's "no tests collected", 5, is
# not a failure: an argument may select none of a process's tests). The other reports follow the workflow one's;
# the last line says how long each ran.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
FIRST=(tests/workflow tests/eval/test_fid_features.py tests/methods/test_dp2vae_compile.py)   # the workflow process
SWING=(tests/methods/test_hash_seed.py tests/privacy/test_workflow_own_data_neighbours.py tests/methods/test_resume.py)
reports=$(mktemp -d)
trap 'rm -rf "$reports"' EXIT
start=$SECONDS

ended() {  # NAME STATUS: keep a process's status and wall time
  echo "$2" >"$reports/$1.status"
  echo $((SECONDS - start)) >"$reports/$1.s"
}
niced() { OMP_NUM_THREADS=1 nice -n 10 "$PY" -m pytest -p no:cacheprovider "$@"; }

("$PY" -m pytest "${FIRST[@]}" "$@"; ended workflow $?) &
(niced "${FIRST[@]/#/--ignore=}" "${SWING[@]/#/--ignore=}" "$@" >"$reports/others" 2>&1; ended others $?) &
wait -n
niced "${SWING[@]}" "$@" >"$reports/swing" 2>&1
ended swing $?
wait

echo "== every other test (run beside it) =="
cat "$reports/others"
echo "== the swing modules (run when the first process ended) =="
cat "$reports/swing"
failed=0
for name in workflow others swing; do
  status=$(cat "$reports/$name.status" 2>/dev/null || echo 1)
  [ "$status" = 0 ] || [ "$status" = 5 ] || failed=1
done
# last, where a truncated CI log still shows it: when each process ended (the balance of the split above)
echo "== ended after: tests/workflow process $(cat "$reports/workflow.s") s, every other test $(cat "$reports/others.s") s," \
  "the swing modules $(cat "$reports/swing.s") s; status $([ $failed = 0 ] && echo passed || echo FAILED)"
exit $failed
