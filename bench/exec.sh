#!/usr/bin/env bash
# The executor's checks and benchmarks in one script: build, the CPU-transport tests, the GPU tests
# (test_gpu_exec, 2 GPUs), then `ncclz perf` on the GPUs: AllReduce and AlltoAll, 1 MiB..1 GiB,
# plain NCCL (--compress off) against compressed (ResNet-18 gradients, qsgd:bits=8,bucket=512,
# auto), over NVLink and over the NET socket path (default, 1x1 and 4x4 socket threads), in both
# launch modes (-g 2 threads; mpirun -np 2 ... -g 1). Without GPUs it runs the CPU backend rows.
#
# Usage: bench/exec.sh [OUTDIR]   (default bench/results). Writes OUTDIR/exec-<date>.json (device,
# NCCL version, commit, date, every run's points), OUTDIR/exec-table.md (every row),
# OUTDIR/exec-summary.md (the README's table: bench/exec_summary.py) and logs.
# Environment: NCCLZ_COMMIT (git does not work in the GPU machine's copy), BUILD, QUICK=1 (fewer
# sizes), FORCED=0 (without the fixed-coder runs), EXEC_LIMIT_S (time budget: runs that would pass
# it are skipped and listed in exec-skipped.txt, the summary is still written), ONLY=REGEX (runs whose name matches), SKIP_TESTS=1, NCCLZ_PROFILE (the REA's profile for
# auto; default calibrate/profiles/h200-x2.json, the measured one every verb has built in).
# Needs on the GPU machine: .deps/*.deb (Debian's libcjson) and .devdata/resnet18_digits_step100_rank0.f32.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
OUT=${1:-bench/results}
mkdir -p "$OUT"
B=${BUILD:-/tmp/ncclz-exec-build}
PROFILE=${NCCLZ_PROFILE:-calibrate/profiles/h200-x2.json}
DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
# EXEC_LIMIT_S: the script's time budget. A run that might not finish in what is left is skipped
# (and said), so that the summary below is always written: a call stopped from outside loses it.
DEADLINE=$(($(date +%s) + ${EXEC_LIMIT_S:-100000}))
fits() { # NAME TIMEOUT: 0 when a run of TIMEOUT seconds still fits the budget
  if [ $(($(date +%s) + $2 + 15)) -gt "$DEADLINE" ]; then
    echo "$1 skipped: ${2} s would pass EXEC_LIMIT_S" | tee -a "$OUT/exec-skipped.txt"
    return 1
  fi
}
COMMIT=${NCCLZ_COMMIT:-$(git -c safe.directory='*' rev-parse --short HEAD 2>/dev/null || echo unknown)}
export NCCL_NVLS_ENABLE=0 # NVLink SHARP multicast stays off (KINDS.md), for every program here
export OMPI_MCA_rmaps_base_oversubscribe=1

. "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c GPU || true)
GRAD=.devdata/resnet18_digits_step100_rank0.f32
[ -f "$GRAD" ] || GRAD=tests/data/resnet18_rank0_64k.f32

echo "== build ($NGPU GPUs)"
TARGETS="ncclz test_exec test_exec_mpi test_exec_stress"
[ "$NGPU" -ge 1 ] && TARGETS="$TARGETS test_gpu_exec"
build() { # SRC
  { cmake -S "$1" -B "$B" -DCMAKE_BUILD_TYPE=Release -DNCCLZ_SIM=OFF -DNCCLZ_MPI=ON ${DEPS:-} &&
    cmake --build "$B" -j"$(nproc)" --target $TARGETS; } >>"$OUT/exec-build.log" 2>&1
}
: >"$OUT/exec-build.log"
if ! build "$ROOT"; then
  # Another layer in progress in this working tree (report/, `ncclz run`) may not build without
  # the simulator: build a copy without it, so the executor's numbers do not wait on it.
  echo "full build failed; building without report/ and ncclz run" | tee -a "$OUT/exec-build.log"
  rm -rf /tmp/ncclz-src "$B" && mkdir -p /tmp/ncclz-src
  tar --exclude='./build*' --exclude=./.devdata --exclude=./report --exclude=./cli/cmd_run.c -cf - . | tar -xf - -C /tmp/ncclz-src
  sed -i '/cli_run/d' /tmp/ncclz-src/cli/main.c /tmp/ncclz-src/cli/cli.h
  build /tmp/ncclz-src || { tail -30 "$OUT/exec-build.log"; exit 1; }
fi
NCCLZ="$B/ncclz"

echo "== tests"
if [ "$NGPU" -lt 2 ] || [ "${CPU_TESTS:-0}" = 1 ]; then # CI runs them; the GPU machine's time is for GPUs
  (cd "$B" && timeout 300 ctest -R "test_exec" --output-on-failure) >"$OUT/exec-tests.log" 2>&1
  echo "cpu tests rc=$?"; grep -E "tests passed|Failed|FAIL" "$OUT/exec-tests.log" | head -5
fi
if [ "$NGPU" -ge 2 ] && [ "${SKIP_TESTS:-0}" != 1 ]; then
  timeout 150 "$B/tests/test_gpu_exec" >"$OUT/exec-gpu-tests.log" 2>&1
  echo "gpu tests rc=$?"; grep -E "passed|FAIL|SKIP" "$OUT/exec-gpu-tests.log" | head -20
fi

RUNS="$OUT/exec-runs"
rm -rf "$RUNS"; mkdir -p "$RUNS"
MPIRUN=(mpirun --allow-run-as-root --bind-to none -np 2 -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH)

# One perf run: NAME PATH LAUNCH TIMEOUT args... (PATH selects the NCCL environment).
perf() {
  local name=$1 path=$2 launch=$3 tmo=$4
  shift 4
  [[ "$name" =~ ${ONLY:-.} ]] || return 0 # ONLY=REGEX: a subset of the runs
  fits "$name" "$tmo" || return 0
  local envs=(NCCL_NVLS_ENABLE=0)
  envs+=($(ncclz_path_env "$path"))
  echo "== $name ($path, $launch)" >>"$OUT/exec-perf.log"
  if [ "$launch" = mpi ]; then
    local xs=()
    for e in "${envs[@]}"; do xs+=(-x "$e"); done
    timeout "$tmo" "${MPIRUN[@]}" "${xs[@]}" "$NCCLZ" perf -g 1 "$@" --json "$RUNS/$name.json" >>"$OUT/exec-perf.log" 2>&1
  else
    timeout "$tmo" env "${envs[@]}" "$NCCLZ" perf -g 2 "$@" --json "$RUNS/$name.json" >>"$OUT/exec-perf.log" 2>&1
  fi
  local rc=$?
  echo "$name rc=$rc"
  [ -f "$RUNS/$name.json" ] && python3 - "$RUNS/$name.json" "$path" "$name" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1])); j["path"] = sys.argv[2]; j["name"] = sys.argv[3]
json.dump(j, open(sys.argv[1], "w"))
EOF
}

# One --stress run: NAME PATH LAUNCH TIMEOUT args...; its summary line goes to the log and here.
stress() {
  local name=$1 path=$2 launch=$3 tmo=$4
  shift 4
  [[ "$name" =~ ${ONLY:-.} ]] || return 0
  fits "$name" "$tmo" || return 0
  echo "== $name ($path, $launch)" >>"$OUT/exec-perf.log"
  if [ "$launch" = mpi ]; then
    timeout "$tmo" "${MPIRUN[@]}" "$NCCLZ" perf -g 1 "$@" >"$RUNS/$name.txt" 2>&1
  else
    timeout "$tmo" "$NCCLZ" perf -g 2 "$@" >"$RUNS/$name.txt" 2>&1
  fi
  echo "$name rc=$? $(grep -h '# stress' "$RUNS/$name.txt")" | tee -a "$OUT/exec-stress.txt"
  cat "$RUNS/$name.txt" >>"$OUT/exec-perf.log"
}

Q=qsgd:bits=8,bucket=512
SIZES=(-b 1M -e 1G -f 4)
[ "${QUICK:-0}" = 1 ] && SIZES=(-b 1M -e 1G -f 32)
if [ "$NGPU" -ge 2 ]; then
  for coll in allreduce alltoall; do
    perf "nvlink-$coll-off" nvlink threads 45 -c $coll "${SIZES[@]}" -n 50 -w 5 --warm-s 0.3 --compress off --data "$GRAD"
    perf "nvlink-$coll-auto" nvlink threads 60 -c $coll "${SIZES[@]}" -n 50 -w 5 --warm-s 0.3 --vs-plain --compress auto --quant $Q \
      --profile "$PROFILE" --data "$GRAD" --trace "$RUNS/trace-nvlink-$coll.json"
  done
  for path in socket socket1x1 socket4x4; do
    for coll in allreduce alltoall; do
      perf "$path-$coll-off" $path threads 70 -c $coll "${SIZES[@]}" -n 5 -w 2 --warm-s 1 --compress off --data "$GRAD"
      # --vs-plain: plain NCCL in rounds alternated with auto in the same process; the socket's
      # speed drifts by tens of percent between runs.
      perf "$path-$coll-auto" $path threads 100 -c $coll "${SIZES[@]}" -n 3 -w 2 --warm-s 1 --vs-plain --compress auto --quant $Q \
        --profile "$PROFILE" --data "$GRAD" --trace "$RUNS/trace-$path-$coll.json"
    done
  done
  # auto with every frame planned on the GPU (--rea-frames), on the default socket path
  for coll in allreduce alltoall; do
    perf "socket-$coll-auto-frames" socket threads 100 -c $coll "${SIZES[@]}" -n 3 -w 2 --warm-s 1 --vs-plain --compress auto \
      --rea-frames --quant $Q --profile "$PROFILE" --data "$GRAD" --trace "$RUNS/trace-socket-$coll-frames.json"
  done
  # The MPI launch mode.
  perf mpi-nvlink-allreduce-off nvlink mpi 45 -c allreduce "${SIZES[@]}" -n 50 -w 5 --warm-s 0.3 --compress off --data "$GRAD"
  perf mpi-nvlink-allreduce-auto nvlink mpi 60 -c allreduce "${SIZES[@]}" -n 50 -w 5 --warm-s 0.3 --vs-plain --compress auto \
    --quant $Q --profile "$PROFILE" --data "$GRAD"
  perf mpi-socket-allreduce-off socket mpi 70 -c allreduce -b 1M -e 1G -f 32 -n 5 -w 2 --warm-s 1 --compress off --data "$GRAD"
  perf mpi-socket-allreduce-auto socket mpi 90 -c allreduce -b 1M -e 1G -f 32 -n 3 -w 2 --warm-s 1 --vs-plain --compress auto \
    --quant $Q --profile "$PROFILE" --data "$GRAD"
  # 1000 calls of random collectives, roots and counts in each launch mode (no hang, no wrong
  # element); REA plans for the NET path so that frames of every coder travel (over NVLink: quick).
  for launch in threads mpi; do
    stress "stress-$launch" nvlink $launch 120 --stress 1000 --compress auto --hint net --quant $Q \
      --profile "$PROFILE" --data "$GRAD"
  done
  # The fixed coders (what auto chooses between) on every path, 4 MiB to 1 GiB: with the plain
  # runs above they rank the coders at each size, which the validate scenario's best-coder
  # agreement compares with the simulator's ranking.
  [ "${FORCED:-1}" = 1 ] && for path in nvlink socket socket1x1 socket4x4; do
    for coll in allreduce alltoall; do
      for coder in fixedlen huffman; do
        perf "$path-$coll-$coder" $path threads 60 -c $coll -b 4M -e 1G -f 4 -n 3 -w 1 --warm-s 0.5 \
          --compress $coder --quant $Q --data "$GRAD"
      done
    done
  done
else
  perf cpu-allreduce-auto threads threads 300 --backend cpu -c allreduce -b 1M -e 16M -f 4 -n 3 -w 1 \
    --compress auto --quant $Q --profile "$PROFILE" --data "$GRAD"
fi

# Everything into one JSON and one table (speedup against the plain run of the same path and size).
DEVICE=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
NCCLV=$(grep -h "NCCL version" "$OUT/exec-perf.log" 2>/dev/null | head -1)
NCCLV=${NCCLV:-$(grep -m1 -ho "define NCCL_VERSION_CODE [0-9]*" /usr/include/nccl.h 2>/dev/null)}
python3 - "$RUNS" "$OUT" "${DATE}" "$COMMIT" "${DEVICE:-none}" "${NCCLV:-unknown}" <<'EOF'
import glob, json, os, sys
runs_dir, out, date, commit, device, nccl = sys.argv[1:7]
runs = [json.load(open(f)) for f in sorted(glob.glob(os.path.join(runs_dir, "*.json"))) if "trace-" not in f]
res = {"date": date, "commit": commit, "device": device, "nccl": nccl, "runs": runs}
path = os.path.join(out, "exec-%s.json" % date[:10])
json.dump(res, open(path, "w"), indent=1)
plain = {}
for r in runs:
    if r["compress"] == "off":
        for p in r["points"]:
            plain[(r["path"], r.get("launch"), r["collective"], p["size"])] = p
rows = ["| path | launch | collective | compress | size | time us | busbw GB/s | plain busbw | speedup | vs plain (same process) | wire CR | 0.7xCR | coders r:f:h | exposed | #wrong |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
for r in runs:
    for p in r["points"]:
        b = plain.get((r["path"], r.get("launch"), r["collective"], p["size"])) or plain.get((r["path"], "threads", r["collective"], p["size"]))
        sp = b["time_us"] / p["time_us"] if b and p["time_us"] > 0 else float("nan")
        wcr = p["raw_bytes"] / p["wire_bytes"] if p.get("wire_bytes") else 1.0
        c = p["coders"]
        ex = "%.1f%%" % (100 * p["exposed_frac"]) if "exposed_frac" in p else ""
        vp = "%.3f" % p["vs_plain"] if "vs_plain" in p else ""
        rows.append(f"| {r['path']} | {r.get('launch','')} | {r['collective']} | {r['compress']} | {p['size']>>20} MiB | {p['time_us']:.0f} | "
                    f"{p['busbw']:.2f} | {b['busbw'] if b else float('nan'):.2f} | {sp:.2f} | {vp} | {wcr:.2f} | {0.7*wcr:.2f} | "
                    f"{c['raw']}:{c['fixedlen']}:{c['huffman']} | {ex} | {p['wrong']} |")
open(os.path.join(out, "exec-table.md"), "w").write("\n".join(rows) + "\n")
print("\n".join(rows)); print("wrote", path)
EOF
[ "$NGPU" -ge 2 ] && python3 bench/exec_summary.py "$OUT/exec-${DATE:0:10}.json" >"$OUT/exec-summary.md" # the README's table
grep -h "# trace" "$OUT/exec-perf.log" | tail -20
grep -hiE "error|fail" "$OUT/exec-perf.log" | head -20
exit 0 # the runs' own status is in their lines above and in exec-perf.log
