#!/usr/bin/env bash
# Fuzzing (docs/fuzzing.md): builds every libFuzzer target with clang and -DNCCLZ_FUZZ=ON in
# build-fuzz, and runs each for FUZZ_SECONDS (default 60) on top of its seed corpus and its
# regression inputs (tests/fuzz/corpus/NAME, tests/fuzz/regress/NAME). Prints per target the
# executions and the coverage (cov: edges, ft: features) of libFuzzer's final stats, and fails
# on any finding (crash, sanitizer report, leak, an input running past 10 s or 2 GB); the
# reproducer is left in build-fuzz/fuzz-artifacts/.
#   scripts/fuzz.sh [NAME...]     (default: every target registered with ncclz_fuzz_target)
set -euo pipefail
cd "$(dirname "$0")/.."
B=${FUZZ_BUILD_DIR:-build-fuzz}
SECS=${FUZZ_SECONDS:-60}
# A fixed seed and a cap on the inputs make a run repeatable: a CI run explores the same inputs as
# (or a prefix of) a run made before it with the same settings. FUZZ_SEED=0 draws a new seed.
SEED=${FUZZ_SEED:-1}
RUNS=${FUZZ_RUNS:-500000}
command -v clang++ >/dev/null || { echo "fuzz.sh: clang and clang++ are needed (apt-get install clang)" >&2; exit 2; }
# clang++ too: a target that links the simulator links as C++ (sim/comm_landed.cpp), with -fsanitize=fuzzer
cmake -S . -B "$B" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNCCLZ_FUZZ=ON -DNCCLZ_CUDA=OFF \
  -DNCCLZ_WERROR=ON >/dev/null
if [ $# -gt 0 ]; then targets=("$@"); else mapfile -t targets <"$B/fuzz_targets.txt"; fi
[ ${#targets[@]} -gt 0 ] || { echo "fuzz.sh: no fuzz targets registered" >&2; exit 1; }
cmake --build "$B" -j"$(nproc)" --target "${targets[@]/#/fuzz_}"

mkdir -p "$B/fuzz-artifacts"
failed=()
printf '%-14s %12s %8s %8s %8s  %s\n' target executions exec/s cov ft result
for t in "${targets[@]}"; do
  work="$B/fuzz-corpus/$t" log="$B/fuzz-artifacts/$t.log"
  mkdir -p "$work" # new inputs go here, not into the tree
  dirs=("$work" "tests/fuzz/corpus/$t")
  [ -d "tests/fuzz/regress/$t" ] && dirs+=("tests/fuzz/regress/$t")
  rc=0
  "$B/tests/fuzz/fuzz_$t" -seed="$SEED" -runs="$RUNS" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$B/fuzz-artifacts/$t-" "${dirs[@]}" >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  result=ok
  if [ "$rc" -ne 0 ]; then result="FINDING (exit $rc; $log)"; failed+=("$t"); fi
  printf '%-14s %12s %8s %8s %8s  %s\n' "$t" "${execs:-?}" "${speed:-?}" "${cov:-?}" "${ft:-?}" "$result"
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: findings in ${failed[*]}; reproduce with $B/tests/fuzz/fuzz_NAME ARTIFACT" >&2
  for t in "${failed[@]}"; do grep -m3 -E "ERROR|SUMMARY|fuzz_[a-z_]+:" "$B/fuzz-artifacts/$t.log" >&2 || true; done
  exit 1
fi
