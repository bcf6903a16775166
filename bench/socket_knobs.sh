#!/usr/bin/env bash
# Is the compressed AllReduce on the default socket path bound by NCCL's point-to-point over the
# socket rather than by the codecs? Plain NCCL's ring AllReduce moves 1 GiB per rank at ~3.5 GB/s
# there, while the executor's ncclSend/ncclRecv of ~540 KB frames move its 139 MB at ~2.3 GB/s
# (the same call is codec-bound, and faster, on the 1x1 path).
# NCCL's knobs for point-to-point over the network (they leave the plain collective alone):
# channels per network peer and the p2p network chunk size. Each run: auto against plain NCCL in
# the same process (--vs-plain), ResNet-18 gradients, 1 GiB AllReduce, default socket path.
# Usage (GPU machine, carry .deps and .devdata): bash bench/socket_knobs.sh; writes $OUT/knobs.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
ncclz_bench_binary || exit 1
Q=qsgd:bits=8,bucket=512
for knob in "" NCCL_NCHANNELS_PER_NET_PEER=4 NCCL_NCHANNELS_PER_NET_PEER=8 NCCL_P2P_NET_CHUNKSIZE=524288 \
  "NCCL_NCHANNELS_PER_NET_PEER=8 NCCL_P2P_NET_CHUNKSIZE=524288"; do
  echo "== ${knob:-defaults}"
  timeout 90 env $(ncclz_path_env socket) $knob "$B/ncclz" perf -g 2 -c allreduce -b 1G -e 1G -n 3 -w 2 --warm-s 1 \
    --vs-plain --compress auto --quant $Q --data .devdata/resnet18_digits_step100_rank0.f32 2>&1 | grep -vE "^#  "
done 2>&1 | tee "$OUTDIR/knobs.txt"
