#!/usr/bin/env bash
# Why does `ncclz perf --compress off` time the NET socket path's plain AllReduce ~1.3-1.6x slower
# than `ncclz calibrate` does? Alternates, in
# one call, perf with the ResNet gradients (as bench/exec.sh), perf with its synthetic input,
# perf timing single calls (-n 1), and calibrate --check's socket sweep (its own harness), and
# prints each run's 64 and 256 MiB times. Usage: BUILD=DIR bench/socket_harness.sh (GPU machine)
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
export $(ncclz_path_env socket)
NCCLZ=${BUILD:-/tmp/ncclz-device-build}/ncclz
GRAD=.devdata/resnet18_digits_step100_rank0.f32
perf() { # LABEL args...
  local label=$1; shift
  "$NCCLZ" perf -g 2 -c allreduce -b 64M -e 256M -f 4 --compress off "$@" 2>&1 |
    awk -v l="$label" '$1 ~ /^[0-9]+$/ { printf "%s %s MiB %.0f us\n", l, $1 / 1048576, $6 }'
}
for rep in 1 2; do
  perf "perf --data -n 5 -w 2 --warm-s 1" -n 5 -w 2 --warm-s 1 --data "$GRAD"
  perf "perf synthetic -n 5 -w 2 --warm-s 1" -n 5 -w 2 --warm-s 1
  perf "perf --data -n 1 -w 2" -n 1 -w 2 --data "$GRAD"
  "$NCCLZ" calibrate --check calibrate/profiles/h200-x2.json -g 2 --paths socket --sweeps 1 2>/dev/null |
    awk '$1 == "socket" && $2 == "allreduce" && ($3 == 67108864 || $3 == 268435456) { printf "calibrate --check %s MiB %.0f us\n", $3 / 1048576, $5 }'
done
