#!/usr/bin/env bash
# How many comm lanes (ncclzConfig.comm_lanes: units' NCCL groups alternate over that many
# communicators and streams) does the socket path want? With one lane the 1 GiB AllReduce's frames
# move slower than plain NCCL's ring; more lanes close the gap (docs/executor.md, comm lanes).
# Runs --comm-lanes $LANES (default 1 2 4) alternated, twice, each against plain NCCL in the same process
# (--vs-plain), ResNet-18 gradients, AllReduce and AlltoAll 64 MiB..1 GiB, on the default, 1x1
# and 4x4 socket settings, traced (NCCL busy and exposed codec time per size).
# Usage (GPU machine, carry .deps and .devdata): bash bench/comm_lanes.sh; writes $OUT/lanes.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
ncclz_bench_binary || exit 1
Q=qsgd:bits=8,bucket=512
for path in ${PATHS:-socket socket1x1 socket4x4}; do
  for k in 1 2; do
    for lanes in ${LANES:-1 2 4}; do
      for coll in allreduce alltoall; do
        echo "== $path $coll --comm-lanes $lanes (round $k)"
        timeout 90 env $(ncclz_path_env $path) "$B/ncclz" perf -g 2 -c $coll -b 64M -e 1G -f 16 -n 3 -w 2 --warm-s 1 \
          --vs-plain --compress auto --quant $Q --comm-lanes $lanes --data .devdata/resnet18_digits_step100_rank0.f32 \
          --trace "$OUTDIR/trace.json" 2>&1 | grep -vE "^#  "
      done
    done
  done
done 2>&1 | tee "$OUTDIR/lanes.txt"
rm -f "$OUTDIR"/trace.json*
