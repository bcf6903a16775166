#!/usr/bin/env bash
# One call on the GPU machine: build, then the STEPS asked for, each only while the call's time
# allows (the device tool stops a call at 600 s). Prints a short summary last; writes under $OUT
# (or bench/results/device-DATE/), at most 8 files (what the device tool brings back):
#   tests.log            GPU identity tests (codecs, REA selector + planning cost, executor) and
#                        the GPU line; compute-sanitizer's last lines are appended
#   codecs-DATE.json     bench/codecs.sh's benchmark (every coder x quantizer, 256 MiB, 4 MiB frames)
#   codecs.txt           its table
#   kernels.txt          ncu: time of every kernel of one 4 MiB frame, encoded and decoded alone,
#                        and of a batch of 64 frames (256 MiB)
#   kernels-decode.txt   ncu: the HUFFMAN decoder's stall reasons and hot spots on that frame
#   kernels-sci.txt      ncu (step kernels-sci): kernel times over the TREFHT batch, wide alphabets
#   kernels-detail.txt   ncu (step ncu): speed of light, occupancy and stall reasons of NCU_KERNEL
#   calibrate.log        the calibration's progress and residual table
#   h200-x2.json         the profile (calibrate/profiles/h200-x2.json when it passes)
#   h200-x2-points.json  its measured points (ncclz calibrate --from-points refits them)
#   check.txt            ncclz calibrate --check of that profile: a fresh, second measurement
#   calibrate-codecs.log (step calibrate-codecs, one GPU) ncclz calibrate --codecs-only: the codec
#                        curves measured again, every other point kept from $CAL_BASE; it writes
#                        h200-x2.json and h200-x2-points.json (the merged points) as above
#   codec-latency.json   bench_latency (step latency): one call per frame size, every coder x
#                        quantizer, and the quantizer passes on 256 MiB; latency.txt its table,
#                        latency-nopdl.txt the same with NCCLZ_CUDA_PDL=0
#                        (LAT_NOPDL=1), latency-chain.txt RAW and FIXEDLEN on the chain of kernels
#                        (bench_latency --chain)
#   latency-kernels.txt  ncu (step latency-ncu): every kernel of one call on a 1 MiB frame
#   quant-kernels.txt    ncu (step quant-ncu): speed of light and stalls of the quantizer kernels
#   latency-ab.txt       (step latency-ab) FIXEDLEN one call: the one-kernel path's variants and the
#                        chain
#   latency-warm.txt     (step latency-warm) ncu's time of every kernel of one FIXEDLEN call, 64 KiB
#                        and 1 MiB, warm caches, one kernel and chain
# STEPS (default "tests calibrate check memcheck"; also "codecs", "kernels", "ncu", "quant-ncu", "latency-ab",
#   "latency-warm", "calibrate-codecs"):
#   tests      $TESTS (default test_gpu_huffbook test_gpu_codecs test_gpu_rea test_gpu_exec
#              test_calibrate_fit), each within 240 s
#   codecs     bench/codecs.sh without its own tests (needs .devdata: carry it)
#   kernels    ncu over `ncclz codec --device gpu` on one 4 MiB frame of the ResNet gradients
#   kernels-sci  ncu kernel times of HUFFMAN and FIXEDLEN over 256 MiB of TREFHT (REL 1e-4, none)
#   ncu        ncu's detail sections of the kernels matching NCU_KERNEL (kernels-detail.txt)
#   latency    bench/bench_latency (needs .devdata: carry it)
#   latency-ncu  ncu kernel times of `ncclz codec --device gpu` on one 1 MiB frame (TREFHT at REL
#              1e-4 with and without 3D Lorenzo, the gradients at QSGD 8/512; fixedlen, huffman, auto)
#   exec       bench/exec.sh (ncclz perf on every path and launch mode; exec-DATE.json and
#              exec-table.md), the measurements the validate scenario compares the simulator with
#   calibrate-codecs  ncclz calibrate --codecs-only --base $CAL_BASE (default the shipped points) on
#              GPU 0, instead of calibrate (CAL_QUICK=1: --quick)
#   calibrate, check, memcheck (compute-sanitizer memcheck, then racecheck, of each test in SANITIZE,
#              default test_gpu_codecs, run with --quick (racecheck: test_gpu_codecs --race, one case of
#              each kernel family); test_gpu_rea takes --quick too; SANITIZE_TOOLS
#              names the tools, default "memcheck racecheck")
# Env: BUILD (build dir), PATHS (default: all five), SWEEPS (default 3), CHECK_SWEEPS (the check's;
# default SWEEPS: more sweeps steady the socket rows' medians), LIMIT_S (default 570).
# Needs: .deps/*.deb (Debian's libcjson1/libcjson-dev; git-ignored: carry it).
set -uo pipefail
export NCCL_NVLS_ENABLE=0
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
OUTDIR=${OUT:-$ROOT/bench/results/device-$(date -u +%F)}
mkdir -p "$OUTDIR"
B=${BUILD:-/tmp/ncclz-device-build}
PATHS=${PATHS:-nvlink,shm,socket,socket1x1,socket4x4}
SWEEPS=${SWEEPS:-3}
CHECK_SWEEPS=${CHECK_SWEEPS:-$SWEEPS}
LIMIT_S=${LIMIT_S:-570}
STEPS=" ${STEPS:-tests calibrate check memcheck} "
T0=$(date +%s)
left() { echo $((LIMIT_S - ($(date +%s) - T0))); }
want() { [[ "$STEPS" == *" $1 "* ]]; }

. "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
LOG="$OUTDIR/tests.log"
{ date -u +%FT%TZ; echo "commit ${NCCLZ_COMMIT:-unknown}"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >"$LOG"

echo "== build (steps:$STEPS)"
TESTS=${TESTS:-test_gpu_huffbook test_gpu_codecs test_gpu_rea test_gpu_exec test_calibrate_fit}
EXTRA=""; { want latency || want latency-ab; } && EXTRA=bench_latency
BUILD_TESTS=""; { want tests || want memcheck; } && BUILD_TESTS=$TESTS # the steps that run them
ncclz_device_build "$B" "$OUTDIR/build.log" ncclz $BUILD_TESTS $EXTRA || exit 1
rm -f "$OUTDIR/build.log"

declare -A RC
run_test() { # name timeout command...
  local name=$1 t=$2; shift 2
  echo "== $name" >>"$LOG"
  timeout "$t" "$@" >>"$LOG" 2>&1
  RC[$name]=$?
  echo "== $name rc=${RC[$name]}" >>"$LOG"
}
if want tests; then
  echo "== GPU tests"
  for t in $TESTS; do run_test $t 240 "$B/tests/$t"; done
  grep -E "FAIL|passed|skip|planning|differ|frame [0-9]+:" "$LOG" | head -40
fi

CODECS_RC=skipped
if want codecs && [ "$(left)" -gt 200 ]; then
  echo "== codecs benchmark ($(left) s left)"
  TMP=$(mktemp -d)
  OUT=$TMP BUILD=$B SKIP_TESTS=1 timeout $(($(left) - 10)) bash bench/codecs.sh >"$TMP/run.txt" 2>&1
  CODECS_RC=$?
  cp "$TMP"/codecs-*.json "$OUTDIR/" 2>/dev/null
  { tail -3 "$TMP/run.txt"; cat "$TMP/bench.txt" 2>/dev/null; } >"$OUTDIR/codecs.txt"
  tail -n 25 "$OUTDIR/codecs.txt"
fi

# 256 MiB of the ResNet gradients, tiled (64 frames of 4 MiB), for the ncu steps; made once
# (a whole file of that size is reused, a cut one remade).
batch256m() {
  [ "$(stat -c %s /tmp/batch256m.f32 2>/dev/null)" = 268435456 ] ||
    for i in 1 2 3 4 5 6 7; do cat .devdata/resnet18_digits_step100_rank0.f32; done | head -c 268435456 >/tmp/batch256m.f32
}

# The same size of the TREFHT field, tiled.
sci256m() {
  [ "$(stat -c %s /tmp/sci256m.f32 2>/dev/null)" = 268435456 ] ||
    for i in $(seq 75); do cat .devdata/trefht_member57.f32; done | head -c 268435456 >/tmp/sci256m.f32
}

# ncu_times LABEL TIMEOUT ARGS...: every kernel launch of `ncclz codec --device gpu ARGS` under
# ncu as "LABEL/kernel ns" lines (gpu__time_duration); its status is the pipeline's.
ncu_times() {
  local label=$1 t=$2
  shift 2
  timeout "$t" ncu --clock-control none ${NCU_CACHE:+--cache-control $NCU_CACHE} --metrics gpu__time_duration.sum --csv --print-units base \
    "$B/ncclz" codec --device gpu "$@" 2>&1 | grep -E '^"' |
    awk -F'","' -v L="$label" 'NR > 1 { k = $5; sub(/\(.*/, "", k); sub(/^void /, "", k); gsub(/[ ,"]/, "_", k);
                                       v = $NF; gsub(/[",]/, "", v); print L "/" k, v }'
}
# mean_times WIDTH: the mean time of each kernel in the "LABEL/kernel ns" lines on stdin, sorted.
mean_times() {
  awk -v w="$1" '{ t[$1] += $2; n[$1]++ }
    END { for (k in t) printf "%-" w "s %5d launches %10.1f us mean\n", k, n[k], t[k] / n[k] / 1e3 }' | sort
}

KERNELS_RC=skipped
if want kernels && [ "$(left)" -gt 60 ]; then
  echo "== ncu: one 4 MiB frame ($(left) s left)"
  head -c 4194304 .devdata/resnet18_digits_step100_rank0.f32 >/tmp/frame4m.f32
  # huffman-seg256: the executor's frames (256-symbol segments, NCCLZ_FRAME_HUFFMAN_SEGMENT)
  for coder in huffman huffman-seg256 fixedlen; do
    seg=(); [ $coder = huffman-seg256 ] && seg=(--segment 256)
    echo "# ncclz codec --device gpu --coder ${coder%-seg256} ${seg[*]} --quant qsgd:bits=8,bucket=512, 4 MiB = 1 frame, --repeat 2"
    ncu_times $coder 120 --input /tmp/frame4m.f32 --quant qsgd:bits=8,bucket=512 --coder ${coder%-seg256} \
      "${seg[@]}" --repeat 2
    KERNELS_RC=$?
  done >"$OUTDIR/kernels.txt"
  mean_times 28 <"$OUTDIR/kernels.txt"
  # The same kernels over a batch of 64 frames (256 MiB tiled from the gradients), as
  # bench/codecs.sh times them: which kernel bounds the batched throughput.
  batch256m
  for coder in huffman fixedlen; do
    ncu_times $coder-batch64 150 --input /tmp/batch256m.f32 --quant qsgd:bits=8,bucket=512 --coder $coder --repeat 1
  done >>"$OUTDIR/kernels.txt"
  grep batch64 "$OUTDIR/kernels.txt" | mean_times 36
  # Where the single-frame HUFFMAN decoder waits: stall reasons (cycles per issued instruction) and
  # the sampled hot spots, one launch.
  timeout 120 ncu --clock-control none -k regex:k_hf_decode -c 1 --section WarpStateStats --section SourceCounters \
    --section Occupancy --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio' \
    "$B/ncclz" codec --device gpu --input /tmp/frame4m.f32 --quant qsgd:bits=8,bucket=512 --coder huffman --repeat 1 \
    >"$OUTDIR/kernels-decode.txt" 2>&1
  grep -E "stalled_[a-z_]*_per_issue_active.ratio +[0-9]" "$OUTDIR/kernels-decode.txt" | awk '$NF > 0.5' | sort -k3 -n -r | head -8
fi

# The same per-kernel ncu times over 256 MiB of the TREFHT field (tiled, 64 frames of 4 MiB) with
# quantizations whose alphabets are wide (REL 1e-4 without prediction; raw floats): where the
# HUFFMAN code book and decoder table kernels stand against the coder (kernels-sci.txt).
KSCI_RC=skipped
if want kernels-sci && [ "$(left)" -gt 60 ]; then
  echo "== ncu: the TREFHT batch, wide alphabets ($(left) s left)"
  sci256m
  for q in eb:rel=1e-4 none; do
    for coder in huffman fixedlen; do
      ncu_times $q/$coder 150 --input /tmp/sci256m.f32 --quant $q --coder $coder --repeat 1
      KSCI_RC=$?
    done
  done >"$OUTDIR/kernels-sci.txt"
  mean_times 44 <"$OUTDIR/kernels-sci.txt"
fi

# ncu's detail (speed of light, occupancy, stall reasons, hot spots) of the first launch of each
# kernel NCU_KERNEL names (regexes joined by |, default k_fl_encode|k_fl_decode; one ncu run each,
# since the codec verb encodes more than once before it decodes) over a 256 MiB batch coded with
# NCU_CODER (default fixedlen): the gradients with QSGD 8-bit (NCU_DATA=grad, the default) or the
# TREFHT field with NCU_QUANT (NCU_DATA=sci; default eb:rel=1e-4; NCU_DIMS=8192x64x128 for a
# Lorenzo spec, the shape bench_codecs gives it): where a kernel's time goes.
NCU_RC=skipped
if want ncu && [ "$(left)" -gt 60 ]; then
  echo "== ncu detail: ${NCU_KERNEL:=k_fl_encode|k_fl_decode} (${NCU_CODER:=fixedlen}, ${NCU_DATA:=grad}; $(left) s left)"
  if [ "$NCU_DATA" = sci ]; then sci256m; NCU_IN=/tmp/sci256m.f32 NCU_Q=${NCU_QUANT:-eb:rel=1e-4}
  else batch256m; NCU_IN=/tmp/batch256m.f32 NCU_Q=qsgd:bits=8,bucket=512; fi
  : >"$OUTDIR/kernels-detail.txt"
  IFS='|' read -ra NCU_KERNELS <<<"$NCU_KERNEL"
  for k in "${NCU_KERNELS[@]}"; do
    timeout 150 ncu --clock-control none -k "regex:$k" -c 1 --section SpeedOfLight --section Occupancy \
      --section LaunchStats --section WarpStateStats --section SourceCounters \
      --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio' \
      "$B/ncclz" codec --device gpu --input $NCU_IN --quant $NCU_Q ${NCU_DIMS:+--dims $NCU_DIMS} --coder "$NCU_CODER" --repeat 1 \
      >>"$OUTDIR/kernels-detail.txt" 2>&1
    NCU_RC=$?
    [ "$NCU_RC" = 0 ] && [ "$(left)" -gt 60 ] || break
  done
  grep -E "^  [a-z_]+.*\(|Duration|Throughput|Achieved Occupancy|Registers Per|Theoretical Occ|stalled_[a-z_]*_per_issue_active.ratio +[0-9]" \
    "$OUTDIR/kernels-detail.txt" | awk '!/stalled/ || $NF > 0.3' | head -60
fi

LAT_RC=skipped
if want latency && [ "$(left)" -gt 60 ]; then
  echo "== latency ($(left) s left)"
  timeout $(($(left) - 10)) "$B/bench_latency" --sci .devdata/trefht_member57.f32 \
    --grad .devdata/resnet18_digits_step100_rank0.f32 --json "$OUTDIR/codec-latency.json" \
    --commit "${NCCLZ_COMMIT:-unknown}" --date "$(date -u +%FT%TZ)" >"$OUTDIR/latency.txt" 2>&1
  LAT_RC=$?
  cat "$OUTDIR/latency.txt"
  # the same on the chain of kernels (--chain: no one-kernel call), RAW and FIXEDLEN
  for c in raw fixedlen; do
    [ "$(left)" -gt 30 ] && timeout 60 "$B/bench_latency" --sci .devdata/trefht_member57.f32 \
      --grad .devdata/resnet18_digits_step100_rank0.f32 --chain --only $c
  done >"$OUTDIR/latency-chain.txt" 2>&1
  grep -E "raw|fixedlen" "$OUTDIR/latency-chain.txt"
  # the same without programmatic dependent launch (codecs/cuda/internal.cuh, nz_launch)
  if [ "${LAT_NOPDL:-0}" = 1 ] && [ "$(left)" -gt 130 ]; then
    NCCLZ_CUDA_PDL=0 timeout 120 "$B/bench_latency" --sci .devdata/trefht_member57.f32 \
      --grad .devdata/resnet18_digits_step100_rank0.f32 --quant-mib 16 >"$OUTDIR/latency-nopdl.txt" 2>&1
    head -n 49 "$OUTDIR/latency-nopdl.txt"
  fi
fi

# FIXEDLEN one call on one frame, one kernel against its variants: CTAs of 2 (default), 4 and 8
# warps (NCCLZ_CUDA_ONE_WARPS), no programmatic dependent launch, the chain (--chain)
# (latency-ab.txt).
AB_RC=skipped
if want latency-ab && [ "$(left)" -gt 60 ]; then
  echo "== latency A/B ($(left) s left)"
  lat() { timeout 60 "$B/bench_latency" --sci .devdata/trefht_member57.f32 --grad .devdata/resnet18_digits_step100_rank0.f32 --only fixedlen "$@"; }
  { echo "# 2 warps"; lat; echo "# 4 warps"; NCCLZ_CUDA_ONE_WARPS=4 lat; echo "# 8 warps"; NCCLZ_CUDA_ONE_WARPS=8 lat
    echo "# 2 warps, NCCLZ_CUDA_PDL=0"; NCCLZ_CUDA_PDL=0 lat; echo "# chain"; lat --chain; } >"$OUTDIR/latency-ab.txt" 2>&1
  AB_RC=$?
  grep -E "^#|fixedlen|floor" "$OUTDIR/latency-ab.txt"
fi

# ncu's time of every kernel of one FIXEDLEN call (`ncclz codec --device gpu`, --repeat 1) on one
# frame of 64 KiB and 1 MiB, with the caches kept warm as in a call (--cache-control none): the one
# kernel path and the chain (NCCLZ_CUDA_ONE=0) (latency-warm.txt).
WARM_RC=skipped
if want latency-warm && [ "$(left)" -gt 60 ]; then
  echo "== ncu, warm caches: one FIXEDLEN frame ($(left) s left)"
  for kb in 64 1024; do
    head -c $((kb * 1024)) .devdata/trefht_member57.f32 >/tmp/sci$kb.f32
    head -c $((kb * 1024)) .devdata/resnet18_digits_step100_rank0.f32 >/tmp/grad$kb.f32
  done
  for one in 1 0; do
    for kb in 64 1024; do
      for q in qsgd:bits=8,bucket=512 eb:rel=1e-4; do
        [ "$(left)" -gt 30 ] || break
        in=/tmp/grad$kb.f32; [ "${q%%:*}" = eb ] && in=/tmp/sci$kb.f32
        NCCLZ_CUDA_ONE=$one NCU_CACHE=none ncu_times "one=$one/${kb}KiB/$q" 60 --input $in --quant $q --coder fixedlen --repeat 1
        WARM_RC=$?
      done
    done
  done >"$OUTDIR/latency-warm.txt"
  mean_times 60 <"$OUTDIR/latency-warm.txt"
fi

# ncu's speed of light and stall reasons of the quantizer kernels on 256 MiB: QSGD 8/512 on the
# gradients, REL 1e-4 + 3D Lorenzo on TREFHT (8192x64x128): what bounds each pass.
QNCU_RC=skipped
if want quant-ncu && [ "$(left)" -gt 90 ]; then
  echo "== ncu: the quantizers ($(left) s left)"
  batch256m; sci256m
  for q in qsgd eb3d; do
    if [ $q = qsgd ]; then args=(--input /tmp/batch256m.f32 --quant qsgd:bits=8,bucket=512); k='k_qsgd_fused|k_qsgd_dequant'
    else args=(--input /tmp/sci256m.f32 --quant eb:rel=1e-4,lorenzo=3d --dims 8192x64x128); k='k_eb_range|k_eb_lz_|k_lz_'; fi
    [ "$(left)" -gt 45 ] || break
    timeout $(($(left) - 20)) ncu --clock-control none -k "regex:$k" -c 5 --section SpeedOfLight --section Occupancy \
      --section WarpStateStats --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,sm__inst_executed_pipe_.*\.avg\.pct_of_peak_sustained_active' \
      "$B/ncclz" codec --device gpu "${args[@]}" --coder fixedlen --repeat 1 2>&1
    QNCU_RC=$?
  done >"$OUTDIR/quant-kernels.txt"
  grep -E "^  [a-z_]+.*\(|Duration|Memory Throughput|Compute \(SM\) Throughput|stalled_[a-z_]*_per_issue_active.ratio +[0-9]|pipe_[a-z_0-9]*.avg.pct.* +[0-9]" \
    "$OUTDIR/quant-kernels.txt" | awk '!/stalled|pipe_/ || $NF > 5' | head -80
fi

LNCU_RC=skipped
if want latency-ncu && [ "$(left)" -gt 60 ]; then
  echo "== ncu: one 1 MiB frame ($(left) s left)"
  head -c 1048576 .devdata/trefht_member57.f32 >/tmp/sci1m.f32
  head -c 1048576 .devdata/resnet18_digits_step100_rank0.f32 >/tmp/grad1m.f32
  for q in eb:rel=1e-4 eb:rel=1e-4,lorenzo=3d qsgd:bits=8,bucket=512; do
    in=/tmp/sci1m.f32; dims=(--dims 32x64x128); [ "${q%%:*}" = qsgd ] && in=/tmp/grad1m.f32 dims=()
    for coder in fixedlen huffman auto; do
      [ "$(left)" -gt 40 ] || break
      ncu_times "$q/$coder" 60 --input $in --quant $q "${dims[@]}" --coder $coder --repeat 1
      LNCU_RC=$?
    done
  done >"$OUTDIR/latency-kernels.txt"
  mean_times 52 <"$OUTDIR/latency-kernels.txt"
fi

EXEC_RC=skipped
if want exec && [ "$(left)" -gt 300 ]; then
  echo "== executor benchmark ($(left) s left)"
  TMP=$(mktemp -d)
  BUILD=$B SKIP_TESTS=1 EXEC_LIMIT_S=$(($(left) - 30)) timeout $(($(left) - 10)) bash bench/exec.sh "$TMP" >"$TMP/run.txt" 2>&1
  EXEC_RC=$?
  cp "$TMP"/exec-*.json "$TMP/exec-table.md" "$TMP/exec-stress.txt" "$TMP/exec-perf.log" "$OUTDIR/" 2>/dev/null
  [ -f "$TMP/exec-skipped.txt" ] && cat "$TMP/exec-skipped.txt"
  tail -n 30 "$TMP/run.txt"
fi

CAL_RC=skipped
if want calibrate && [ "$(left)" -gt 300 ]; then
  echo "== calibrate -g 2 --paths $PATHS --sweeps $SWEEPS ($(left) s left)"
  START=$(date +%s)
  timeout $(($(left) - 20)) "$B/ncclz" calibrate -g 2 --paths "$PATHS" --sweeps "$SWEEPS" --out "$OUTDIR/h200-x2.json" \
    --points-out "$OUTDIR/h200-x2-points.json" 2>"$OUTDIR/calibrate.log"
  CAL_RC=$?
  echo "calibrate rc=$CAL_RC in $(($(date +%s) - START)) s" | tee -a "$OUTDIR/calibrate.log"
  tr '\r' '\n' <"$OUTDIR/calibrate.log" | grep -E "worst residual|wrote|lambda" | tail -8
fi

CALC_RC=skipped
Q=(); NEED=120; [ "${CAL_QUICK:-0}" = 1 ] && Q=(--quick) NEED=30 # the codec curves took 80 s on H200, --quick less
if want calibrate-codecs && [ "$(left)" -gt $NEED ]; then
  CAL_BASE=${CAL_BASE:-calibrate/profiles/h200-x2-points.json}
  echo "== calibrate --codecs-only --base $CAL_BASE ${Q[*]} ($(left) s left)"
  START=$(date +%s)
  timeout $(($(left) - 10)) "$B/ncclz" calibrate --codecs-only --base "$CAL_BASE" "${Q[@]}" --out "$OUTDIR/h200-x2.json" \
    --points-out "$OUTDIR/h200-x2-points.json" 2>"$OUTDIR/calibrate-codecs.log"
  CALC_RC=$?
  echo "calibrate-codecs rc=$CALC_RC in $(($(date +%s) - START)) s" | tee -a "$OUTDIR/calibrate-codecs.log"
  tr '\r' '\n' <"$OUTDIR/calibrate-codecs.log" | grep -E "measured in|^  (fixedlen|huffman)/|worst residual|wrote"
fi

CHECK_RC=skipped
if want check && [ -f "$OUTDIR/h200-x2.json" ] && [ "$(left)" -gt 100 ]; then
  echo "== calibrate --check ($(left) s left)"
  START=$(date +%s)
  timeout $(($(left) - 10)) "$B/ncclz" calibrate --check "$OUTDIR/h200-x2.json" -g 2 --paths "$PATHS" \
    --sweeps "$CHECK_SWEEPS" >"$OUTDIR/check.txt" 2>&1
  CHECK_RC=$?
  echo "check rc=$CHECK_RC in $(($(date +%s) - START)) s" | tee -a "$OUTDIR/check.txt"
fi

MEM_RC=skipped RACE_RC=skipped
if want memcheck && [ "$(left)" -gt 60 ]; then
  MEM_RC=0 RACE_RC=0
  for t in ${SANITIZE:-test_gpu_codecs}; do
    for tool in ${SANITIZE_TOOLS:-memcheck racecheck}; do
      [ "$(left)" -gt 40 ] || { echo "== compute-sanitizer $tool $t: no time left" | tee -a "$LOG"; continue; }
      echo "== compute-sanitizer $tool $t ($(left) s left)"
      mode=--quick; [ $tool = racecheck ] && [ $t = test_gpu_codecs ] && mode=--race # racecheck is far slower
      timeout $(($(left) - 5)) compute-sanitizer --tool $tool --error-exitcode 9 "$B/tests/$t" $mode >/tmp/$tool.log 2>&1
      rc=$?
      { echo "== compute-sanitizer $tool $t $mode rc=$rc"; tail -n 3 /tmp/$tool.log; } | tee -a "$LOG"
      if [ $tool = memcheck ]; then [ $rc -eq 0 ] || MEM_RC=$rc; else [ $rc -eq 0 ] || RACE_RC=$rc; fi
    done
  done
fi

echo "== summary ($(($(date +%s) - T0)) s)"
for t in $TESTS; do echo "$t rc=${RC[$t]:-skipped}"; done
echo "latency rc=$LAT_RC latency-ab rc=$AB_RC latency-warm rc=$WARM_RC latency-ncu rc=$LNCU_RC quant-ncu rc=$QNCU_RC"
echo "codecs rc=$CODECS_RC kernels rc=$KERNELS_RC kernels-sci rc=$KSCI_RC ncu rc=$NCU_RC exec rc=$EXEC_RC calibrate rc=$CAL_RC calibrate-codecs rc=$CALC_RC check rc=$CHECK_RC memcheck rc=$MEM_RC racecheck rc=$RACE_RC"
grep -E "planning" "$LOG" | tail -3
[ -f "$OUTDIR/check.txt" ] && grep '^#' "$OUTDIR/check.txt" | tail -4
exit 0
