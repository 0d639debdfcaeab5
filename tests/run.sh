#!/usr/bin/env bash
# The whole test suite as pytest processes side by side on 2 cores: tests/workflow (the smoke build and the other
# Snakemake runs, many of them one job at a time) with the modules that compile (torch.compile's C++ builds crawl
# in a niced process), beside every other test; then each of the two, as it ends, takes the next module of the POOL
# (longest first, one pytest process each) until none is left, so that neither core idles at the end whichever
# process is the longer on a given machine. Same tests as a plain `python -m pytest`.
# Measured: stop 59's CI (29 Nov 2026) ended the other process 8 min before the workflow one; stop 66's (2 Dec,
# 1,873 s in all) ended the workflow one first. A quiet .ci/run of 19b859f (2 Dec, 1,565 s in all, ~150 s of it
# pip's set-up): the workflow process 1,336 s, the other 1,119 s, then the three modules that were the whole pool
# (the first three below, one process) beside the workflow one until 1,414 s, the last 78 s on one core. With this
# pool (9d69977, set-up through uv, 1,389 s in all): the workflow process 1,285 s, the other 955 s, the pool's
# modules ended at 1,102 / 1,223 / 1,295 s, test_new_method 1,299 s and test_worker 1,319 s, then listed in the other
# order (benchmarks/measured/cpu-2026-12-02/suite-quiet.log).
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
POOL=(  # pytest's seconds in the quiet run of 9d69977, longest first
  tests/privacy/test_workflow_own_data_neighbours.py  # 142
  tests/methods/test_hash_seed.py                     # 119 (two processes side by side)
  tests/methods/test_resume.py                        # 71
  tests/unit/test_worker.py                           # 22
  tests/methods/test_new_method.py                    # 13
)
reports=$(mktemp -d)
trap 'rm -rf "$reports"' EXIT
start=$SECONDS

ended() {  # NAME STATUS: keep a process's status and wall time
  echo "$2" >"$reports/$1.status"
  echo $((SECONDS - start)) >"$reports/$1.s"
}
niced() { OMP_NUM_THREADS=1 nice -n 10 "$PY" -m pytest -p no:cacheprovider "$@"; }
drain() {  # ARGS: the pool's next unclaimed module (mkdir claims it: atomic), one at a time, until none is left
  local i
  for i in "${!POOL[@]}"; do
    mkdir "$reports/claim$i" 2>/dev/null || continue
    niced "${POOL[$i]}" "$@" >"$reports/pool$i" 2>&1
    ended "pool$i" $?
  done
}

("$PY" -m pytest "${FIRST[@]}" "$@"; ended workflow $?; drain "$@") &
(niced "${FIRST[@]/#/--ignore=}" "${POOL[@]/#/--ignore=}" "$@" >"$reports/others" 2>&1; ended others $?; drain "$@") &
wait

echo "== every other test (run beside it) =="
cat "$reports/others"
names=(workflow others)
for i in "${!POOL[@]}"; do
  echo "== ${POOL[$i]} (the pool, run by whichever process was free) =="
  cat "$reports/pool$i"
  names+=("pool$i")
done
failed=0
for name in "${names[@]}"; do
  status=$(cat "$reports/$name.status" 2>/dev/null || echo 1)
  [ "$status" = 0 ] || [ "$status" = 5 ] || failed=1
done
# last, where a truncated CI log still shows it: when each process ended (the balance of the split above)
pool=$(for i in "${!POOL[@]}"; do printf ' %s %s s,' "$(basename "${POOL[$i]}" .py)" "$(cat "$reports/pool$i.s")"; done)
echo "== ended after: tests/workflow process $(cat "$reports/workflow.s") s, every other test $(cat "$reports/others.s") s;" \
  "the pool:${pool%,}; status $([ $failed = 0 ] && echo passed || echo FAILED)"
exit $failed
