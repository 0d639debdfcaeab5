#!/usr/bin/env bash
# One device call of the GPU queue (gpu-queue.yaml) on a CUDA machine of this workplace, from the repository root:
#   workflow/campaigns/gpu-window.sh [BUDGET_MINUTES [--dry-run]]   (default 9; results under $OUT/queue; $PY: python3)
# carrying .whl/ (workflow/campaigns/gpu-wheels.sh), .devdata/ (the entries' datasets from ../shared/data with its
# MANIFEST.tsv) and, for FID, the Inception weights' parts .devinc<k>/ (workflow/campaigns/gpu-inception.sh split)
# spread over consecutive calls: the machine keeps them, and /tmp, while it stays warm. Installs the wheels once,
# joins the weights once every part is there, then runs the queue; `gpu_queue.py unpack $OUT/queue` here afterwards.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-python3}
PYTHONPATH=/tmp/site "$PY" -c "import snakemake, opacus" 2> /dev/null \
  || "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site DPVAE_DATA_MIRROR=$PWD/.devdata
weights=/tmp/pt_inception-2015-12-05-fc-zeroed.pth
if [ ! -f "$weights" ] && compgen -G ".devinc*/*.part*" > /dev/null; then
  workflow/campaigns/gpu-inception.sh join "$weights" || echo "gpu-window: FID left for a later call (a part missing)"
fi
[ -f "$weights" ] && export DPVAE_INCEPTION_WEIGHTS=$weights
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
"$PY" workflow/campaigns/gpu_queue.py run "${OUT:-/tmp/out}/queue" --budget "${1:-9}" "${@:2}"
