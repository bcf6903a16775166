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

# ncclz_device_build BUILD_DIR LOG TARGET...: configures (no simulator, no MPI, cJSON from DEPS)
# and builds the targets into a fresh LOG; on failure prints the log's tail and returns 1.
ncclz_device_build() {
  local dir=$1 log=$2; shift 2
  : >"$log"
  { cmake -S . -B "$dir" -DNCCLZ_SIM=OFF -DNCCLZ_MPI=OFF $DEPS && cmake --build "$dir" -j"$(nproc)" --target "$@"; } \
    >>"$log" 2>&1 || { tail -30 "$log"; return 1; }
}
