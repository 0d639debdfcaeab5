#!/usr/bin/env bash
# The FID Inception weights (91.3 MiB; 77.2 MiB gzipped: the zeroed fc layer) on a CUDA machine of this workplace,
# where one call carries at most 64 MiB, the repository's own files included (6.9 MiB on 4 Dec 2026, and growing
# with every record): gzip them here (`-n`: the same bytes every time) and split the stream into parts that travel
# in consecutive calls (the machine keeps ignored folders between calls while it stays warm, 30 s); join, unzip and
# check them there.
#   here:   workflow/campaigns/gpu-inception.sh split [MiB]     -> .devinc1/, .devinc2/ (ignored), default 39 MiB each
#   device: call k carries .devinc<k> (call 1 also .whl, call 2 the data when it is MNIST: the calls and their sizes
#           in gpu_queue.py's docstring), back to back; the call that runs FID first does
#           workflow/campaigns/gpu-inception.sh join /tmp/inception.pth && export DPVAE_INCEPTION_WEIGHTS=/tmp/inception.pth
# `join` refuses parts that do not add up to the published sha256 (dpvae.eval.fid.WEIGHTS_SHA256), naming it.
# Before 4 Dec 2026 the parts were the raw file's (46 MiB each): with the repository grown to 6.9 MiB, call 1
# (.whl + part 1) was 30 KB under the limit.
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
    gzip -n -c "$source" | split -b "${2:-39}M" -d -a 1 - "$tmp/part"
    for part in "$tmp"/part*; do
      k=$(( ${part##*part} + 1 ))
      mkdir -p ".devinc$k" && mv "$part" ".devinc$k/$NAME.gz.part$k"
    done
    rmdir "$tmp"
    ls -la .devinc*/ ;;
  join)
    dest=${2:?"gpu-inception: join DEST"}
    parts=$(ls .devinc*/"$NAME".gz.part* 2> /dev/null | sort -V || true)
    [ -n "$parts" ] || { echo "gpu-inception: no .devinc<k>/$NAME.gz.part<k> here (made by split, carried by the calls)" >&2; exit 2; }
    cat $parts | gunzip -c > "$dest.tmp" 2> /dev/null || true  # a part missing: the checksum below says so
    got=$(sha256sum "$dest.tmp" | cut -d' ' -f1)
    [ "$got" = "$SHA" ] || { rm -f "$dest.tmp"; echo "gpu-inception: joined parts have sha256 $got, not $SHA (a part missing: carry every .devinc<k>)" >&2; exit 2; }
    mv "$dest.tmp" "$dest"; echo "$dest" ;;
  *) echo "usage: $0 split [MiB] | join DEST" >&2; exit 2 ;;
esac
