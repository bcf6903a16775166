#!/usr/bin/env bash
# `ncclz calibrate` on the GPU machine, in one go: build (cJSON from .deps/ like bench/codecs.sh),
# run the calibration on 2 GPUs and print the fit residuals. Writes under $OUT (or bench/results/):
#   h200-x2.json         the profile (copy to calibrate/profiles/h200-x2.json when it passes)
#   h200-x2-points.json  the measured points (ncclz calibrate --from-points refits them anywhere)
#   calibrate.log        stderr of the run (progress, residual table)
#   check.json, check-points.json, check.txt   with CHECK=PROFILE: `ncclz calibrate --check PROFILE`
#                        instead (a fresh, second measurement of the plain collectives against it)
# Env: QUICK=1 for --quick, PATHS (default nvlink,shm,socket), NGPUS (default 2), BUILD (build dir),
#      CHECK=PROFILE.json, SWEEPS (default 3), TESTS (GPU tests to build and run first, into
#      tests.log: e.g. TESTS=test_gpu_rea).
# Needs: .deps/*.deb (Debian's libcjson1/libcjson-dev; git-ignored: carry it).
set -uo pipefail
export NCCL_NVLS_ENABLE=0
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
OUTDIR=${OUT:-$ROOT/bench/results}
mkdir -p "$OUTDIR"
B=${BUILD:-/tmp/ncclz-calibrate-build}
NGPUS=${NGPUS:-2}
PATHS=${PATHS:-nvlink,shm,socket}
QUICK=${QUICK:-0}

. "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$OUTDIR/gpu.txt"

echo "== build"
ncclz_device_build "$B" "$OUTDIR/build.log" ncclz test_calibrate_fit ${TESTS:-} || exit 1
"$B/tests/test_calibrate_fit" || exit 1
for t in ${TESTS:-}; do
  { echo "== $t"; timeout 120 "$B/tests/$t"; echo "== $t rc=$?"; } >>"$OUTDIR/tests.log" 2>&1
  grep -E "^== |planning|FAIL" "$OUTDIR/tests.log" | tail -8
done

Q=(); [ "$QUICK" = 1 ] && Q=(--quick)
if [ -n "${CHECK:-}" ]; then
  echo "== calibrate --check $CHECK -g $NGPUS --paths $PATHS --sweeps ${SWEEPS:-3} ${Q[*]}"
  START=$(date +%s)
  timeout 900 "$B/ncclz" calibrate --check "$CHECK" -g "$NGPUS" --paths "$PATHS" --sweeps "${SWEEPS:-3}" "${Q[@]}" \
    --points-out "$OUTDIR/check-points.json" --out "$OUTDIR/check.json" >"$OUTDIR/check.txt" 2>&1
  RC=$?
  echo "check rc=$RC in $(($(date +%s) - START)) s"

  # the summary, and the rows that miss 8% (the whole table is in check.txt)
  awk '/^#/ || ($8 != "-" && ($8 > 8 || $8 < -8))' "$OUTDIR/check.txt" | tail -60
  exit $RC
fi

echo "== calibrate -g $NGPUS --paths $PATHS ${Q[*]}"
START=$(date +%s)
timeout 900 "$B/ncclz" calibrate -g "$NGPUS" --paths "$PATHS" "${Q[@]}" ${SWEEPS:+--sweeps "$SWEEPS"} --out "$OUTDIR/h200-x2.json" \
  --points-out "$OUTDIR/h200-x2-points.json" 2>"$OUTDIR/calibrate.log"
RC=$?
END=$(date +%s)
# the residual table (progress lines use \r; keep the last state of each)
tr '\r' '\n' <"$OUTDIR/calibrate.log" | grep -vE '^# (codecs|nvlink|shm|socket)' | grep -v '^\s*$'
echo "calibrate rc=$RC in $((END - START)) s"
if [ -f "$OUTDIR/h200-x2.json" ] && command -v python3 >/dev/null; then
  python3 - "$OUTDIR/h200-x2.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
f = p["fit"]
print("worst residual >= 1 MiB: %.2f%% (%s), within 5%%: %s" % (100 * f["worst_resid_1m"], f["worst"], f["within_tolerance"]))
for h, t in p["transports"].items():
    print("transport %-6s alpha %8.2f us  beta %8.2f GB/s" % (h, t["alpha_us"], t["beta_gbps"]))
if f.get("notes"):
    print("notes:", f["notes"])
PY
fi
exit $RC
