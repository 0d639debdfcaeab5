#!/usr/bin/env bash
# The checks a CUDA machine is for (≈ 2.5 min on one H200 before the compiled parts 5-7 came; nothing is downloaded):
#   1. every test marked `gpu` (the method contract on CUDA, engine and metric device tests, DP²-VAE's stage-2
#      step compiled in mode reduce-overhead against the eager one),
#   2. the DP-SGD engines at batch 256 against a non-private step, with operator calls and syncs per step,
#   3. DP²-VAE stage 1 (encoder-iterations/s) and stage 2 (private vs non-private step) at the paper's widths,
#   4. GS-WGAN's vectorised discriminators,
#   5. whether torch.compile (CUDA graphs: mode reduce-overhead) pays for the engines' conv step, or why it fails,
#   6. whether it pays for DP²-VAE's stage-2 step (its `compile` parameter) at the paper's widths, with FLOPs and
#      operator calls / kernel launches per step,
#   7. whether it pays for GS-WGAN's main-phase iteration (its `compile` parameter), with FLOPs per iteration,
#   8. DP²-VAE's downstream classifiers (MLP, CNN: 5 fits trained together, epochs/s on 60,000 images, deterministic
#      kernels on and off; LR),
#   9. FID's statistics (the metric's own path) per batch size, deterministic kernels on and off (needs the
#      Inception weights: DPVAE_INCEPTION_WEIGHTS, as gpu-window.sh joins them).
#
#   benchmarks/gpu.sh [OUTDIR]        (default benchmarks/out/gpu-<date>; PY=python to choose the interpreter)
#   DEVICE=cpu benchmarks/gpu.sh      the same parts on the CPU at toy sizes (a check of the script: the CUDA
#                                     tests skip, each benchmark runs its --quick case)
#   PARTS="device dp2vae-compiled" benchmarks/gpu.sh   only the parts named (default: all, in the order below).
#                                     The limits add up to more than one 600 s device call: split them over calls.
#
# Each part has its own time limit and its own log in OUTDIR; a part that fails or runs out of time is reported
# and the others still run. The exit status is non-zero when any part failed. Needs the project's Python
# dependencies and, for the contract, the offline data mirror ($DPVAE_DATA_MIRROR: MNIST, Fashion-MNIST, Adult).
set -uo pipefail
cd "$(dirname "$0")/.."
OUTDIR=${1:-benchmarks/out/gpu-$(date -u +%Y%m%dT%H%M%SZ)}
PY=${PY:-python3}
DEVICE=${DEVICE:-cuda}
if [ "$DEVICE" = cuda ]; then
  engines=(--steps 20 --engines nonprivate opacus dpsgd termwise micro batch partial)
  dp2vae=(--widths 512,256 --batch 32 --encoders 100 --chunk 50 --iters 3 --steps 20 --repeats 3)
  gswgan=(--cases 100:64:32 --threads 2 --chunk 25 --iters 1 --repeats 2)
  compiled=(--steps 20 --models conv --engines nonprivate dpsgd --compile reduce-overhead)
  stage2=(--widths 512,256 --batch 32 --encoders 100 --steps 20 --repeats 3 --compile reduce-overhead)
  gswgan_main=(--discriminators 100 --model-dim 64 --batch 32 --critic-iters 5 --steps 20 --repeats 3 \
    --compile reduce-overhead)
  classifiers=(--images 60000 --epochs 3)
  fid=(--device cuda --images 4096 --batches 64,256,1024)
else
  engines=(--quick) dp2vae=(--quick) gswgan=(--cases 4:2:4 --threads 1 --chunk 2 --iters 1 --repeats 1)
  compiled=(--quick --models mlp --engines nonprivate dpsgd --compile default)
  stage2=(--quick --compile default)
  gswgan_main=(--discriminators 2 --model-dim 2 --batch 4 --critic-iters 1 --steps 1 --warmup 1 --repeats 1 \
    --compile default)
  classifiers=(--quick)
  fid=(--images 16 --batch 8 --repeats 1)
fi
PARTS=${PARTS:-device tests engines dp2vae gswgan compiled dp2vae-compiled gswgan-compiled classifiers fid}
mkdir -p "$OUTDIR"
export PYTHONPATH=src:tests${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
# cuBLAS' reproducible workspace for the whole pytest process (jobs set it themselves: dpvae.devices.repeatable)
export CUBLAS_WORKSPACE_CONFIG=${CUBLAS_WORKSPACE_CONFIG:-:4096:8}
failed=()

part() {   # part NAME SECONDS COMMAND...: run COMMAND under a time limit, its output in OUTDIR/NAME.log and here
  local name=$1 limit=$2 started=$SECONDS status
  shift 2
  [[ " $PARTS " == *" $name "* ]] || return 0
  echo "== $name (limit ${limit}s): $*"
  timeout "$limit" "$@" 2>&1 | tee "$OUTDIR/$name.log"
  status=${PIPESTATUS[0]}
  echo "== $name: exit $status after $((SECONDS - started)) s"
  [ "$status" -eq 0 ] || failed+=("$name")
}

part device 60 "$PY" -c "import sys, torch; from dpvae.devices import device_name; \
print('torch', torch.__version__, 'cuda', torch.version.cuda, '|', device_name(sys.argv[1]))" "$DEVICE"
mapfile -t gpu_tests < <(grep -rl --include='test_*.py' 'mark\.gpu' tests | sort)   # the files holding CUDA cases
part tests 330 "$PY" -m pytest -p no:cacheprovider -q -m gpu -o addopts="-ra --strict-markers --durations=10" \
  "${gpu_tests[@]}"
part engines 120 "$PY" benchmarks/dpsgd_step.py --device "$DEVICE" "${engines[@]}"
part dp2vae 100 "$PY" benchmarks/dp2vae_stage1.py --device "$DEVICE" "${dp2vae[@]}"
part gswgan 150 "$PY" benchmarks/gswgan_discriminators.py --device "$DEVICE" "${gswgan[@]}"
part compiled 120 "$PY" benchmarks/dpsgd_step.py --device "$DEVICE" "${compiled[@]}"
part dp2vae-compiled 180 "$PY" benchmarks/dp2vae_stage1.py --device "$DEVICE" --parts stage2 "${stage2[@]}"
part gswgan-compiled 240 "$PY" benchmarks/gswgan_main.py --device "$DEVICE" "${gswgan_main[@]}"
part classifiers 180 "$PY" benchmarks/image_classifiers.py --device "$DEVICE" "${classifiers[@]}"
part fid 150 "$PY" benchmarks/fid_features.py "${fid[@]}"
echo "== gpu.sh: ${#failed[@]} part(s) failed${failed[*]:+: ${failed[*]}}; logs in $OUTDIR"
[ ${#failed[@]} -eq 0 ]
