#!/usr/bin/env bash
# One device call of the GPU queue (gpu-queue.yaml) on a CUDA machine of this workplace, from the repository root:
#   DPVAE_COMMIT=<sha> workflow/campaigns/gpu-window.sh [BUDGET_MINUTES [OPTION...]]
# BUDGET_MINUTES (default 9) counts from this script's start and bounds the whole call but the packing of what
# finished (seconds); OPTIONs go to `gpu_queue.py run` (--dry-run, --queue FILE, --cores N, --device cpu);
# results under $OUT/queue; $PY: python3. DPVAE_COMMIT: the commit the call's working tree is (`git rev-parse HEAD`
# here, `-dirty` added for uncommitted changes), which the runs' train.json and so the recorded rows carry (the
# copy on the device may carry an older commit's .git: DPVAE_COMMIT wins, dpvae.provenance.git_commit); a call
# without it stops before any work (but a --dry-run).
# GPU_WINDOW_KEEP: where the machine keeps the wheels' install and the joined weights between calls (default /tmp).
# Carrying .whl/ (workflow/campaigns/gpu-wheels.sh), .devdata/ (the entries' datasets from ../shared/data with its
# MANIFEST.tsv) and, for FID, the Inception weights' parts .devinc<k>/ (workflow/campaigns/gpu-inception.sh split)
# spread over consecutive calls: the machine keeps them, and /tmp, while it stays warm. Installs the wheels once,
# joins the weights once every part is there, then runs the queue; `gpu_queue.py unpack $OUT/queue` here afterwards.
#
# Rehearsed on the CPU by tests/workflow/test_gpu_window.py: a copy of the working tree with toy carried folders,
# two calls of this script on a toy queue (tests/config/gpu-rehearsal-queue.yaml, --device cpu): the join, entries
# trained and evaluated, a budget stop resumed by the next call, what comes back under $OUT, `unpack`, the tables,
# `dpvae record` and the scorecard. What only a device shows, and where the first call (`gpu-window.sh 9 --dry-run`,
# about a minute: the device line, then the first entry planned) or the first entry shows it:
#   * CUDA seen by torch, its name, free memory: `gpu_queue.py run`'s first line (queue.txt's too), "device: cuda:
#     NVIDIA H100 ..., X of Y GiB free"; without CUDA the call stops there, saying so, before any entry.
#   * CUDA kernels (per-example gradients, GroupNorm, noise from a CUDA generator): that line's 10 DP-SGD steps on
#     the GPU; the methods' own CUDA code (DP²-VAE's vectorised encoders, FID's Inception, the classifiers): the
#     first entry, whose failed job's log Snakemake prints (the call's output tail).
#   * Deterministic CUDA settings (dpvae.devices.repeatable): "deterministic kernels on" in the device line; an op
#     without a deterministic kernel warns in its job's log.
#   * Memory: the free GiB in the device line; the paper widths' peak (1,000 encoders, 5.2 GiB): the first entry.
#   * The wheels on the device's Python 3.12 and torch (2.11 there; the CPU rehearsal imports this checkout's
#     environment and skips the install): this script's "gpu-window: installed ..." line, then the device line.
#   * The warm machine keeping $GPU_WINDOW_KEEP and the carried folders between calls: the next call says
#     "packages already importable" and, once every part came, "joined"; else it installs again / leaves FID.
#   * nvidia-smi: the name and memory line below.
#   * Paper-size timings and archive sizes (the toy entries take seconds and KiB): queue.txt's "ok in X min;
#     <entry>.tar.gz: Y MiB" of the first entry, against its `minutes` and the 16 MiB limit of one file back.
# Seen on the first queue calls (27 Nov 2026, one H200; benchmarks/measured/h200-2026-11-27/): a call starts in
# ~30 s and installs the wheels in ~20 s; the device's copy carried the session's first commit's .git (hence
# DPVAE_COMMIT decides); 12 PriVAE runs side by side took 5.8 min; their models (56 MiB) came back only by a
# later call (now: in parts, see gpu_queue.pack).
# The device call's command: its output into a file under $OUT, never into a pipe; `timeout`'s limit + its -k
# under the call's timeout_s, and BUDGET*60 under `timeout`'s limit:
#   DPVAE_COMMIT=<sha> PY=python3 timeout -k 40 550 workflow/campaigns/gpu-window.sh 8.5 --cores 16 \
#     > $OUT/window.log 2>&1; tail -n 12 $OUT/window.log                           (timeout_s 598)
# A SIGTERM stops the wave as the budget would (gpu_queue.stopped_by_signals). On 27 Nov 2026 (one H100) a call of
# `timeout 580 gpu-window.sh 9.5 | tail` brought nothing back: the budget started after ~30 s of set-up, timeout's
# SIGTERM killed the queue process but not Snakemake (a session of its own), which held the pipe to `tail` open
# until the device tool's limit took the call and everything under $OUT with it.
set -euo pipefail
started=$(date +%s)  # the budget counts from here: the install, the join and the device check are in it
cd "$(dirname "$0")/../.."
PY=${PY:-python3}
if [ -z "${DPVAE_COMMIT:-}" ] && [[ " ${*:2} " != *" --dry-run "* ]]; then
  echo "gpu-window: set DPVAE_COMMIT=<sha> (git rev-parse HEAD where the call was prepared): without it every run's" \
    "train.json, and so every row recorded from it, says commit 'unknown'; nothing ran" >&2
  exit 2
fi
KEEP=${GPU_WINDOW_KEEP:-/tmp}
if PYTHONPATH=$KEEP/site "$PY" -c "import snakemake, opacus, pypdf" 2> /dev/null; then
  echo "gpu-window: packages already importable"
else
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$KEEP/site" .whl/*.whl
  echo "gpu-window: installed $(ls .whl | wc -l) wheels into $KEEP/site"
fi
export PYTHONPATH=$KEEP/site DPVAE_DATA_MIRROR=$PWD/.devdata
weights=$KEEP/pt_inception-2015-12-05-fc-zeroed.pth
if [ ! -f "$weights" ] && compgen -G ".devinc*/*.part*" > /dev/null; then
  workflow/campaigns/gpu-inception.sh join "$weights" > /dev/null && echo "gpu-window: joined $weights" \
    || echo "gpu-window: FID left for a later call (a part missing)"
fi
[ -f "$weights" ] && export DPVAE_INCEPTION_WEIGHTS=$weights
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
# exec: `timeout` then signals and waits for the queue itself, which stops its wave and packs before it exits
exec "$PY" workflow/campaigns/gpu_queue.py run "${OUT:-/tmp/out}/queue" --budget "${1:-9}" --since "$started" "${@:2}"
