#!/usr/bin/env bash
# Wall time of two pytest processes side by side, as tests/run.sh runs the suite (the second one niced), under each
# setting of their OpenMP thread counts: N (both) or FG/BG, each a number or `default` (torch's own: one per core).
# Prints the device, then a line per setting.
#   benchmarks/suite_threads.sh [SETTING ...]         (default: default 1 default/1)
# FG and BG (environment) name the two processes' tests; the defaults are four CPU-bound modules of ~1 min.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
FG=${FG:-tests/methods/test_lvae.py tests/methods/test_privae.py}
BG=${BG:-tests/methods/test_p3gm.py tests/eval/test_p3gm_metrics.py}
echo "device: cpu $(uname -m) x$(nproc), $("$PY" -c 'import torch; print("torch", torch.__version__)')"
echo "fg: $FG | bg: $BG"
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
threads() {  # a count or `default`, then the command
  if [ "$1" = default ]; then env -u OMP_NUM_THREADS "${@:2}"; else OMP_NUM_THREADS=$1 "${@:2}"; fi
}
settings=("$@")
[ $# -gt 0 ] || settings=(default 1 default/1)
for setting in "${settings[@]}"; do
  fg_threads=${setting%/*} bg_threads=${setting#*/}
  start=$(date +%s.%N)
  # shellcheck disable=SC2086
  threads "$bg_threads" nice -n 10 "$PY" -m pytest -q -p no:cacheprovider $BG >"$logs/bg" 2>&1 &
  # shellcheck disable=SC2086
  threads "$fg_threads" "$PY" -m pytest -q -p no:cacheprovider $FG >"$logs/fg" 2>&1 || true
  fg_end=$(date +%s.%N)
  wait || true
  end=$(date +%s.%N)
  printf 'OMP_NUM_THREADS fg %s, bg %s: both done %.1f s, fg %.1f s; fg: %s | bg: %s\n' "$fg_threads" "$bg_threads" \
    "$(echo "$end - $start" | bc)" "$(echo "$fg_end - $start" | bc)" \
    "$(grep -hE '(passed|failed)' "$logs/fg" | tail -1)" "$(grep -hE '(passed|failed)' "$logs/bg" | tail -1)"
done
