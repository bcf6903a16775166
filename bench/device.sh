#!/usr/bin/env bash
# One call on the 2x H200 machine: build, the GPU tests, then `ncclz calibrate` and its check,
# then compute-sanitizer, each step only while the call's time allows (the device tool stops a
# call at 600 s). Prints a short summary last; writes under $OUT (or bench/results/device-DATE/):
#   tests.log            GPU identity tests (codecs, REA selector, executor) and the GPU line
#   memcheck.log         compute-sanitizer memcheck of test_gpu_codecs --quick
#   calibrate.log        the calibration's progress and residual table
#   h200-x2.json         the profile (calibrate/profiles/h200-x2.json when it passes)
#   h200-x2-points.json  its measured points (ncclz calibrate --from-points refits them)
#   check.json/.txt      ncclz calibrate --check of that profile: a fresh, second measurement
#   build.log            only when the build failed
# Env: BUILD (build dir), PATHS (default: all five), SWEEPS (default 3), LIMIT_S (default 570).
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
LIMIT_S=${LIMIT_S:-570}
T0=$(date +%s)
left() { echo $((LIMIT_S - ($(date +%s) - T0))); }

. "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
LOG="$OUTDIR/tests.log"
{ date -u +%FT%TZ; echo "commit ${NCCLZ_COMMIT:-unknown}"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >"$LOG"

echo "== build"
ncclz_device_build "$B" "$OUTDIR/build.log" ncclz test_calibrate_fit test_gpu_codecs test_gpu_rea test_gpu_exec || exit 1
rm -f "$OUTDIR/build.log"

declare -A RC
run_test() { # name timeout command...
  local name=$1 t=$2; shift 2
  echo "== $name" >>"$LOG"
  timeout "$t" "$@" >>"$LOG" 2>&1
  RC[$name]=$?
  echo "== $name rc=${RC[$name]}" >>"$LOG"
}
echo "== GPU tests"
run_test test_gpu_codecs 240 "$B/tests/test_gpu_codecs"
run_test test_gpu_rea 60 "$B/tests/test_gpu_rea"
run_test test_gpu_exec 120 "$B/tests/test_gpu_exec"
run_test test_calibrate_fit 60 "$B/tests/test_calibrate_fit"
grep -E "FAIL|passed|skip" "$LOG" | head -30

CAL_RC=skipped
if [ "$(left)" -gt 300 ]; then
  echo "== calibrate -g 2 --paths $PATHS --sweeps $SWEEPS ($(left) s left)"
  START=$(date +%s)
  timeout $(($(left) - 20)) "$B/ncclz" calibrate -g 2 --paths "$PATHS" --sweeps "$SWEEPS" --out "$OUTDIR/h200-x2.json" \
    --points-out "$OUTDIR/h200-x2-points.json" 2>"$OUTDIR/calibrate.log"
  CAL_RC=$?
  echo "calibrate rc=$CAL_RC in $(($(date +%s) - START)) s" | tee -a "$OUTDIR/calibrate.log"
  tr '\r' '\n' <"$OUTDIR/calibrate.log" | grep -E "worst residual|wrote|lambda" | tail -8
fi

CHECK_RC=skipped
if [ -f "$OUTDIR/h200-x2.json" ] && [ "$(left)" -gt 100 ]; then
  echo "== calibrate --check ($(left) s left)"
  START=$(date +%s)
  timeout $(($(left) - 10)) "$B/ncclz" calibrate --check "$OUTDIR/h200-x2.json" -g 2 --paths "$PATHS" \
    --sweeps "$SWEEPS" --out "$OUTDIR/check.json" >"$OUTDIR/check.txt" 2>&1
  CHECK_RC=$?
  echo "check rc=$CHECK_RC in $(($(date +%s) - START)) s" | tee -a "$OUTDIR/check.txt"
fi

MEM_RC=skipped
if [ "$(left)" -gt 60 ]; then
  echo "== compute-sanitizer memcheck ($(left) s left)"
  timeout $(($(left) - 5)) compute-sanitizer --tool memcheck --error-exitcode 9 "$B/tests/test_gpu_codecs" --quick \
    >"$OUTDIR/memcheck.log" 2>&1
  MEM_RC=$?
  tail -n 3 "$OUTDIR/memcheck.log"
fi

echo "== summary ($(($(date +%s) - T0)) s)"
for t in test_gpu_codecs test_gpu_rea test_gpu_exec test_calibrate_fit; do echo "$t rc=${RC[$t]}"; done
echo "calibrate rc=$CAL_RC check rc=$CHECK_RC memcheck rc=$MEM_RC"
[ -f "$OUTDIR/check.txt" ] && grep '^#' "$OUTDIR/check.txt" | tail -4
exit 0
