#!/usr/bin/env bash
# Is the NET socket path's run-to-run spread (the 4x4 path's AllReduce switching between two
# levels ~2x apart) a matter of where the CPU threads run? Runs plain NCCL AllReduce
# (ncclz perf --compress off, 2 GPUs, one process) REPEAT times per socket setting, unbound and
# bound with taskset to the CPUs nvidia-smi names as GPU 0's affinity, and prints each run's
# 64 MiB and 256 MiB busbw. Usage: BUILD=DIR bench/socket_noise.sh [REPEAT]   (GPU machine)
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
NCCLZ=${BUILD:-/tmp/ncclz-device-build}/ncclz
REPEAT=${1:-4}
nvidia-smi topo -m 2>&1 | head -8
CPUS=$(nvidia-smi topo -m 2>/dev/null | awk '$1 == "GPU0" { for (i = 2; i <= NF; i++) if ($i ~ /^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$/ && $i ~ /-/) { print $i; exit } }')
echo "# GPU0 CPU affinity: ${CPUS:-unknown}; nproc $(nproc); taskset: $(command -v taskset || echo none)"
run() { # LABEL SETTING-ENV... -- prefix...
  local label=$1; shift
  for i in $(seq "$REPEAT"); do
    line=$("$@" "$NCCLZ" perf -g 2 -c allreduce -b 64M -e 256M -f 4 -n 5 -w 2 --compress off 2>&1 |
      awk '$1 ~ /^[0-9]+$/ { printf "%s=%s GB/s ", $1 / 1048576 "M", $8 }')
    echo "$label run $i: $line"
  done
}
for setting in default 1x1 4x4; do
  path=socket
  [ $setting != default ] && path=socket$setting
  envs=(env $(ncclz_path_env $path))
  run "$setting unbound" "${envs[@]}"
  [ -n "$CPUS" ] && command -v taskset >/dev/null && run "$setting taskset $CPUS" "${envs[@]}" taskset -c "$CPUS"
done
