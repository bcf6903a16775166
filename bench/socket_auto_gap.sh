#!/usr/bin/env bash
# Why is auto slower than forced HUFFMAN on the socket path at 1 GiB when both send HUFFMAN
# frames only (measured in separate processes)? Runs auto and
# huffman twice each, alternated, each against plain NCCL in the same process (--vs-plain), with
# a traced call, on the ResNet-18 gradients, 256 MiB and 1 GiB AllReduce over the default socket.
# Usage (GPU machine, carry .deps and .devdata): bash bench/socket_auto_gap.sh; writes $OUT/gap.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
OUTDIR=${OUT:-/tmp}
B=${BUILD:-/tmp/ncclz-device-build}
ncclz_device_build "$B" "$OUTDIR/build.log" ncclz || exit 1
rm -f "$OUTDIR/build.log"
Q=qsgd:bits=8,bucket=512
for k in 1 2; do
  for c in auto huffman; do
    echo "== $c (round $k)"
    timeout 60 env $(ncclz_path_env socket) "$B/ncclz" perf -g 2 -c allreduce -b 256M -e 1G -f 4 -n 3 -w 2 --warm-s 1 \
      --vs-plain --compress $c --quant $Q --data .devdata/resnet18_digits_step100_rank0.f32 --trace "$OUTDIR/trace-$c-$k.json"
  done
done 2>&1 | grep -vE "^#  " | tee "$OUTDIR/gap.txt"
rm -f "$OUTDIR"/trace-*.json
