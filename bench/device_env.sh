# Sourced by the bench/*.sh scripts on the GPU machine (which has no cJSON and no git history).
#  - unpacks Debian's libcjson packages from .deps/ into /tmp/deps and sets DEPS, the cmake
#    arguments that find them (apt-get download libcjson1 libcjson-dev into .deps/ beforehand);
#  - keeps NVLink multicast off for every program.
export NCCL_NVLS_ENABLE=0
DEPS=""
if ls .deps/*.deb >/dev/null 2>&1 && ! [ -f /usr/include/cjson/cJSON.h ]; then
  mkdir -p /tmp/deps
  for f in .deps/*.deb; do dpkg -x "$f" /tmp/deps; done
  # Debian's cmake config names absolute /usr paths: point them at the unpacked prefix.
  sed -i 's#"/usr"#"/tmp/deps/usr"#g; s#"/usr/#"/tmp/deps/usr/#g' /tmp/deps/usr/lib/x86_64-linux-gnu/cmake/cJSON/*.cmake
  export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
  DEPS="-DCMAKE_PREFIX_PATH=/tmp/deps/usr -DcJSON_DIR=/tmp/deps/usr/lib/x86_64-linux-gnu/cmake/cJSON"
fi

# ncclz_path_env PATH: the NCCL variables of a measured path (nvlink, socket, socket1x1,
# socket4x4; as calibrate/fit.c sets them), VAR=VALUE words for env or export.
ncclz_path_env() {
  case $1 in socket*) echo NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=lo ;; esac
  case $1 in
  socket1x1) echo NCCL_SOCKET_NTHREADS=1 NCCL_NSOCKS_PERTHREAD=1 ;;
  socket4x4) echo NCCL_SOCKET_NTHREADS=4 NCCL_NSOCKS_PERTHREAD=4 ;;
  esac
}

# ncclz_device_build BUILD_DIR LOG TARGET...: configures (no simulator, no MPI, cJSON from DEPS)
# and builds the targets into a fresh LOG; on failure prints the log's tail and returns 1.
ncclz_device_build() {
  local dir=$1 log=$2; shift 2
  : >"$log"
  { cmake -S . -B "$dir" -DNCCLZ_SIM=OFF -DNCCLZ_MPI=OFF $DEPS && cmake --build "$dir" -j"$(nproc)" --target "$@"; } \
    >>"$log" 2>&1 || { tail -30 "$log"; return 1; }
}

# ncclz_bench_binary: for a one-off device benchmark, sets OUTDIR ($OUT, else /tmp) and B ($BUILD,
# else /tmp/ncclz-device-build) and builds ncclz there when it is missing; returns 1 if that fails.
ncclz_bench_binary() {
  OUTDIR=${OUT:-/tmp}
  B=${BUILD:-/tmp/ncclz-device-build}
  [ -x "$B/ncclz" ] || { ncclz_device_build "$B" "$OUTDIR/build.log" ncclz || return 1; rm -f "$OUTDIR/build.log"; }
}
