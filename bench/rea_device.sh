#!/usr/bin/env bash
# On the GPU machine: the REA device selector against the host path on every frame of the real
# data slices, and the cost of planning against GPU encoding (tests/test_gpu_rea.cu).
#   bash bench/rea_device.sh      (needs .deps/*.deb: Debian's libcjson1 and libcjson-dev)
set -uo pipefail
export NCCL_NVLS_ENABLE=0
OUTDIR=${OUT:-bench/results}
B=/tmp/ncclz-rea
mkdir -p /tmp/deps "$OUTDIR"
for f in .deps/*.deb; do dpkg -x "$f" /tmp/deps; done
sed -i 's#"/usr"#"/tmp/deps/usr"#g; s#"/usr/#"/tmp/deps/usr/#g' /tmp/deps/usr/lib/x86_64-linux-gnu/cmake/cJSON/*.cmake
export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
cmake -S . -B "$B" -DNCCLZ_SIM=OFF -DNCCLZ_MPI=OFF -DCMAKE_PREFIX_PATH=/tmp/deps/usr \
  -DcJSON_DIR=/tmp/deps/usr/lib/x86_64-linux-gnu/cmake/cJSON >"$OUTDIR/rea-build.log" 2>&1 &&
  cmake --build "$B" -j"$(nproc)" --target test_gpu_rea >>"$OUTDIR/rea-build.log" 2>&1 ||
  { tail -30 "$OUTDIR/rea-build.log"; exit 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUTDIR/rea-device.txt"
"$B/tests/test_gpu_rea" 2>&1 | tee "$OUTDIR/rea-device.log"
