#!/usr/bin/env bash
# The FID Inception weights (91.3 MiB) on a CUDA machine of this workplace, where one call carries at most 64 MiB:
# split them here into parts that travel in consecutive calls (the machine keeps ignored folders between calls while
# it stays warm, 30 s), join and check them there.
#   here:   workflow/campaigns/gpu-inception.sh split [MiB]     -> .devinc1/, .devinc2/, ... (ignored), default 46 MiB each
#   device: call k carries .devinc<k> (with 46 MiB parts: call 1 also .whl, call 2 the data when it is MNIST; the
#           repository itself is ~3.5 MiB of each call), back to back; the call that runs FID first does
#           workflow/campaigns/gpu-inception.sh join /tmp/inception.pth && export DPVAE_INCEPTION_WEIGHTS=/tmp/inception.pth
# `join` refuses parts that do not add up to the published sha256 (dpvae.eval.fid.WEIGHTS_SHA256), naming it.
set -euo pipefail
cd "$(dirname "$0")/../.."
NAME=pt_inception-2015-12-05-fc-zeroed.pth
SHA=$(sed -n 's/^WEIGHTS_SHA256 = "\([0-9a-f]*\)"$/\1/p' src/dpvae/eval/fid.py)
case "${1:-}" in
  split)
    source="${DPVAE_INCEPTION_WEIGHTS:-${DPVAE_DATA_MIRROR:-../shared/data}/inception/$NAME}"
    [ -f "$source" ] || { echo "gpu-inception: $source: no such file (set DPVAE_INCEPTION_WEIGHTS or DPVAE_DATA_MIRROR)" >&2; exit 2; }
    rm -rf .devinc[0-9]*
    tmp=$(mktemp -d)
    split -b "${2:-46}M" -d -a 1 "$source" "$tmp/part"
    for part in "$tmp"/part*; do
      k=$(( ${part##*part} + 1 ))
      mkdir -p ".devinc$k" && mv "$part" ".devinc$k/$NAME.part$k"
    done
    rmdir "$tmp"
    ls -la .devinc*/ ;;
  join)
    dest=${2:?"gpu-inception: join DEST"}
    cat $(ls .devinc*/"$NAME".part* | sort -V) > "$dest.tmp"
    got=$(sha256sum "$dest.tmp" | cut -d' ' -f1)
    [ "$got" = "$SHA" ] || { rm -f "$dest.tmp"; echo "gpu-inception: joined parts have sha256 $got, not $SHA (a part missing: carry every .devinc<k>)" >&2; exit 2; }
    mv "$dest.tmp" "$dest"; echo "$dest" ;;
  *) echo "usage: $0 split [MiB] | join DEST" >&2; exit 2 ;;
esac
