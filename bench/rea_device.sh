#!/usr/bin/env bash
# On the GPU machine: the REA device selector against the host path on every frame of the real
# data slices, and the cost of planning against GPU encoding (tests/test_gpu_rea.cu).
#   bash bench/rea_device.sh      (needs .deps/*.deb: Debian's libcjson1 and libcjson-dev)
set -uo pipefail
OUTDIR=${OUT:-bench/results}
B=/tmp/ncclz-rea
mkdir -p "$OUTDIR"
. "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
ncclz_device_build "$B" "$OUTDIR/rea-build.log" test_gpu_rea || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUTDIR/rea-device.txt"
"$B/tests/test_gpu_rea" 2>&1 | tee "$OUTDIR/rea-device.log"
