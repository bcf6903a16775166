#!/usr/bin/env bash
# The executor's benchmarks and checks, in one script: build, the CPU-transport tests (threads and
# mpirun -np 4), `ncclz perf` runs, and (once the NCCL backend exists) the GPU rows on 2x H200 for
# NVLink and the NET socket path at default, 1x1 and 4x4 socket threads.
#
# Usage: bench/exec.sh [OUTDIR]   (default bench/results). Writes OUTDIR/exec-*.json and
# OUTDIR/exec-table.md. Environment: NCCLZ_DATA (full data set; default ../shared/data),
# CMAKE_PREFIX_PATH / LD_LIBRARY_PATH for cJSON on the GPU machine, BUILD (build dir).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-bench/results}
BUILD=${BUILD:-build-bench-exec}
DATA=${NCCLZ_DATA:-../shared/data}
PROFILE=${NCCLZ_PROFILE:-tests/data/profile_synthetic.json}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 # NVLink SHARP multicast stays off (KINDS.md)

cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DNCCLZ_SIM=OFF ${CMAKE_PREFIX_PATH:+-DCMAKE_PREFIX_PATH=$CMAKE_PREFIX_PATH} >/dev/null
cmake --build "$BUILD" -j"$(nproc)" --target ncclz test_exec test_exec_mpi >/dev/null
ctest --test-dir "$BUILD" -R exec --output-on-failure | tee "$OUT/exec-tests.log"
NCCLZ="$BUILD/ncclz"

MPIRUN=(mpirun --allow-run-as-root --bind-to none --oversubscribe)
GRAD="$DATA/gradients/resnet18_digits_step100_rank0.f32"
[ -f "$GRAD" ] || GRAD=tests/data/resnet18_rank0_64k.f32

table="$OUT/exec-table.md"
{
  echo "| backend | path | collective | compress | quant | size | busbw GB/s | cr | coders | #wrong |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
} >"$table"

# One perf run -> JSON, plus one table row per point.
perf() { # name path args...
  local name=$1 path=$2
  shift 2
  env "${ENVS[@]}" "$NCCLZ" perf "$@" --json "$OUT/exec-$name.json" 2>>"$OUT/exec-perf.log"
  python3 - "$OUT/exec-$name.json" "$path" >>"$table" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
for p in j["points"]:
    c = p["coders"]
    print(f"| {j['backend']} | {sys.argv[2]} | {j['collective']} | {j['compress']} | {j['quant']} | {p['size']} | "
          f"{p['busbw']:.3f} | {p['cr']:.2f} | {c['raw']}:{c['fixedlen']}:{c['huffman']} | {p['wrong']} |")
EOF
}

ENVS=(NCCLZ_BENCH=1) # per-path NCCL settings for the next perf runs

# CPU backend (threads): the same schedules and frames, any machine.
for comp in off fixedlen huffman auto; do
  q=qsgd:bits=8,bucket=512
  [ $comp = off ] && q=none
  perf "cpu-allreduce-$comp" threads -c allreduce -b 1M -e 16M -f 4 -g 2 -n 5 -w 1 \
    --compress $comp --quant $q --profile "$PROFILE" --data "$GRAD"
done
perf cpu-alltoall-auto threads -c alltoall -b 1M -e 16M -f 4 -g 2 -n 5 -w 1 --compress auto \
  --quant qsgd:bits=8,bucket=512 --profile "$PROFILE" --data "$GRAD"

# GPU rows: only when this build has the NCCL backend (exec/nccl_exec.cu).
if "$NCCLZ" perf --backend nccl -g 1 -b 1K -e 1K --compress off >/dev/null 2>&1; then
  for path in nvlink socket socket1x1 socket4x4; do
    ENVS=(NCCLZ_BENCH=1)
    case $path in
    socket*) ENVS+=(NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=lo) ;;
    esac
    [ $path = socket1x1 ] && ENVS+=(NCCL_SOCKET_NTHREADS=1 NCCL_NSOCKS_PERTHREAD=1)
    [ $path = socket4x4 ] && ENVS+=(NCCL_SOCKET_NTHREADS=4 NCCL_NSOCKS_PERTHREAD=4)
    for comp in off auto; do
      q=qsgd:bits=8,bucket=512
      [ $comp = off ] && q=none
      for coll in allreduce alltoall; do
        perf "gpu-$path-$coll-$comp" "$path" --backend nccl -c $coll -b 1M -e 1G -f 4 -g 2 \
          --compress $comp --quant $q --profile "$PROFILE" --data "$GRAD" --trace "$OUT/exec-trace-$path-$coll.json"
      done
    done
  done
  "${MPIRUN[@]}" -np 2 "$NCCLZ" perf --backend nccl -g 1 -c allreduce -b 1M -e 256M -f 4 --compress auto \
    --quant qsgd:bits=8,bucket=512 --profile "$PROFILE" --json "$OUT/exec-gpu-mpi-allreduce.json"
else
  echo "GPU rows skipped: this build has no NCCL backend yet (exec/nccl_exec.cu)" | tee -a "$OUT/exec-perf.log"
fi
cat "$table"
