#!/usr/bin/env bash
# GPU codecs on the GPU machine, in one go: build, GPU-vs-CPU identity tests, compute-sanitizer
# (memcheck, racecheck), then the benchmark of every coder x quantizer on 256 MiB of real data
# (tiled) in 4 MiB frames, with the copy roofline measured in the same run.
# Writes bench/results/codecs-<date>.json (and logs) under $OUT (or bench/results/), table last.
# Env: MIB (input size, default 256), SEGMENT (HUFFMAN symbols per segment; default the coder's 512,
# the executor's frames use 256), CODES (QSGD's codes between quantizer and RAW/FIXEDLEN: 8, the
# default, or 32, the executor's), SKIP_TESTS=1.
# Needs: .deps/*.deb (Debian's libcjson1/libcjson-dev) and .devdata/{trefht_member57,
# resnet18_digits_step100_rank0}.f32 copied from the reference data set described in tests/data/README.md (both git-ignored; carry them).
set -uo pipefail
export NCCL_NVLS_ENABLE=0
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
OUTDIR=${OUT:-$ROOT/bench/results}
mkdir -p "$OUTDIR"
B=${BUILD:-/tmp/ncclz-bench-build}
DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
# git does not work in the GPU machine's copy: pass NCCLZ_COMMIT (e.g. $(git rev-parse --short HEAD))
if [ -n "${NCCLZ_COMMIT:-}" ]; then
  COMMIT=$NCCLZ_COMMIT
else
  COMMIT=$(git -c safe.directory='*' rev-parse --short HEAD 2>/dev/null || echo unknown)
  if ! git -c safe.directory='*' diff --quiet 2>/dev/null; then COMMIT="$COMMIT+dirty"; fi
fi
SKIP_TESTS=${SKIP_TESTS:-0}

. "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$OUTDIR/gpu.txt"

echo "== build"
ncclz_device_build "$B" "$OUTDIR/build.log" test_gpu_codecs ncclz_codecs_cuda || exit 1
# bench_codecs: through bench/CMakeLists.txt when the root adds it, else directly with nvcc
if ! cmake --build "$B" --target bench_codecs >>"$OUTDIR/build.log" 2>&1; then
  nvcc -O3 -std=c++17 -arch=sm_90 -fmad=false -Iinclude bench/bench_codecs.cu "$B/codecs/libncclz_codecs_cuda.a" \
    "$B/codecs/libncclz_codecs.a" -lm -o "$B/bench_codecs" >>"$OUTDIR/build.log" 2>&1 || { tail -30 "$OUTDIR/build.log"; exit 1; }
fi

TEST_RC=skipped; MEM_RC=skipped; RACE_RC=skipped
if [ "$SKIP_TESTS" != 1 ]; then
  echo "== identity tests"
  timeout 300 "$B/tests/test_gpu_codecs" >"$OUTDIR/test.log" 2>&1; TEST_RC=$?
  grep -E "FAIL|passed" "$OUTDIR/test.log" | head -40
  echo "== compute-sanitizer"
  timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 "$B/tests/test_gpu_codecs" --quick >"$OUTDIR/memcheck.log" 2>&1; MEM_RC=$?
  timeout 200 compute-sanitizer --tool racecheck --error-exitcode 9 "$B/tests/test_gpu_codecs" --quick >"$OUTDIR/racecheck.log" 2>&1; RACE_RC=$?
  tail -n 3 "$OUTDIR/memcheck.log" "$OUTDIR/racecheck.log"
fi

echo "== benchmark"
JSON="$OUTDIR/codecs-${DATE%%T*}.json"
timeout 400 "$B/bench_codecs" --sci .devdata/trefht_member57.f32 --grad .devdata/resnet18_digits_step100_rank0.f32 \
  --mib "${MIB:-256}" --frame-mib 4 ${SEGMENT:+--segment $SEGMENT} ${CODES:+--codes $CODES} --runs 20 --json "$JSON" --commit "$COMMIT" --date "$DATE" >"$OUTDIR/bench.txt" 2>"$OUTDIR/bench.err"
BENCH_RC=$?
tail -5 "$OUTDIR/bench.err"
echo "tests=$TEST_RC memcheck=$MEM_RC racecheck=$RACE_RC bench=$BENCH_RC commit=$COMMIT date=$DATE"
cat "$OUTDIR/bench.txt"
