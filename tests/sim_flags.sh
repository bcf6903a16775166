#!/usr/bin/env bash
# `ncclz sim` from flags: one collective on one platform answered in one screen (docs/cli.md), bandwidths
# with their units, exact exit codes. Skips (77) when the build has no simulator.
#   tests/sim_flags.sh NCCLZ_BINARY TEST_DATA_DIR
set -u
NCCLZ=$1 DATA=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
passed=0 failed=0
if "$NCCLZ" sim --nodes 1 2>&1 | grep -q "no simulator"; then
  echo "SKIP: this build has no simulator (SimGrid not found)" >&2
  exit 77
fi

# expect CODE DESCRIPTION -- command...: the exit status and, for 2, one line on stderr.
expect() {
  local want=$1 what=$2; shift 3
  "$@" >"$TMP/out" 2>"$TMP/err"
  local got=$? lines
  lines=$(wc -l <"$TMP/err")
  if [ "$got" -eq "$want" ] && { [ "$want" -ne 2 ] || [ "$lines" -eq 1 ]; }; then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAIL: $what: exit $got (want $want), stderr: $(head -c 300 "$TMP/err")"; fi
}
check() { # check DESCRIPTION JQ_FILTER FILE
  if jq -e "$2" "$3" >/dev/null 2>&1; then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAIL: $1: $(head -c 400 "$3")"; fi
}

F=$DATA/trefht_member57_8x64x128.f32
expect 2 "--nic without a unit" -- "$NCCLZ" sim --nodes 2 --nic 200
expect 2 "--nic gb/s is not a unit" -- "$NCCLZ" sim --nodes 2 --nic 200gb/s
expect 2 "--scenario and flags" -- "$NCCLZ" sim --nodes 2 --scenario x.json
expect 2 "--coll unknown" -- "$NCCLZ" sim --nodes 2 --coll allsum
expect 2 "--size not whole bytes" -- "$NCCLZ" sim --nodes 2 --size 1.3K
expect 2 "--nodes 0" -- "$NCCLZ" sim --nodes 0
expect 2 "--compress off" -- "$NCCLZ" sim --nodes 2 --compress off
expect 2 "raw --data without --quant" -- "$NCCLZ" sim --nodes 2 --data "$F"
expect 2 "raw --data, --quant none" -- "$NCCLZ" sim --nodes 2 --data "$F" --quant none
expect 2 "missing --data file" -- "$NCCLZ" sim --nodes 2 --data "$TMP/none.f32" --quant eb:rel=1e-4
printf '\x00\x00\xc0\x7f' | cat "$DATA/resnet18_rank0_64k.f32" - >"$TMP/nan_last.f32" # a NaN past the 8 slices
expect 2 "NaN in the element the slices leave out" -- "$NCCLZ" sim --nodes 2 --data "$TMP/nan_last.f32" --quant qsgd:bits=8,bucket=512
expect 2 "neither --scenario nor flags" -- "$NCCLZ" sim

# The question of issue 27: 128 nodes x 8 GPUs, 200 Gb/s, 256 MiB AllReduce: one JSON object on stdout.
expect 0 "128 nodes, 200Gb/s" -- "$NCCLZ" sim --nodes 128 --gpus-per-node 8 --nic 200Gb/s --rails 8 --coll allreduce \
  --size 256M --json
cp "$TMP/out" "$TMP/a.json"
check "units and platform" '.nic_Gbps == 200 and .nic_GBps == 25 and .nic_gbps == 25 and .ranks == 1024 and .rails == 8
  and .bytes == 268435456 and .collective == "allreduce"' "$TMP/a.json"
check "speedup is plain / ncclz time" '(.speedup_vs_nccl - .plain.time_us / .ncclz.time_us | fabs) < 1e-9
  and .plain.time_us > 0 and .ncclz.wire_cr >= 1 and (.forced | length) == 2' "$TMP/a.json"
check "busbw in GB/s, twice" '.plain.busbw_GBps == .plain.busbw and .plain.busbw > 0' "$TMP/a.json"
if grep -q "speedup" "$TMP/err" && grep -q "plain NCCL" "$TMP/err"; then passed=$((passed + 1)); else
  failed=$((failed + 1)); echo "FAIL: the screen goes to stderr with --json"; fi

# 25GB/s is 200Gb/s: the same replay.
expect 0 "25GB/s" -- "$NCCLZ" sim --nodes 128 --gpus-per-node 8 --nic 25GB/s --rails 8 --size 256M --json
check "200Gb/s == 25GB/s" "(.plain.time_us == $(jq .plain.time_us "$TMP/a.json")) and (.ncclz.time_us == $(jq .ncclz.time_us "$TMP/a.json"))" "$TMP/out"

# Out-of-range NIC: a warning on stderr, still an answer.
expect 0 "3.2Tb/s" -- "$NCCLZ" sim --nodes 2 --nic 3.2Tb/s --size 1M
if grep -q "warning: platform.nic: 3.2 Tb/s" "$TMP/err" && grep -q "speedup" "$TMP/out"; then passed=$((passed + 1)); else
  failed=$((failed + 1)); echo "FAIL: 3.2 Tb/s warning: $(cat "$TMP/err")"; fi

# A raw file: its data profile on the fly (8 slices summed), and a data-profile JSON.
expect 0 "raw --data" -- "$NCCLZ" sim --nodes 8 --nic 100Gb/s --size 1G --data "$F" --quant eb:rel=1e-4,lorenzo=3d \
  --dims 8x64x128 --json
check "raw data profiled" '(.data | test("8 ranks summed")) and .ncclz.time_us > 0' "$TMP/out"
"$NCCLZ" profile-data --input "$F" --ranks 4 --dims 8x64x128 --quant eb:rel=1e-4,lorenzo=3d --frames 64K --out "$TMP/dp.json" 2>/dev/null
expect 0 "data-profile --data" -- "$NCCLZ" sim --nodes 8 --nic 100Gb/s --size 1G --data "$TMP/dp.json" --json
check "data profile used" '(.data | test("data profile")) and .ncclz.time_us > 0' "$TMP/out"

# A scenario whose nic_gbps (GB/s) looks like Gb/s: a warning that names the unit.
echo '{"kind":"what-if","platform":{"nodes":2,"nic_gbps":200},"sweep":{"bytes":["1M"]}}' >"$TMP/s.json"
expect 0 "scenario nic_gbps 200" -- "$NCCLZ" sim --scenario "$TMP/s.json" --json
check "scenario JSON units" '.points[0].nic_GBps == 200 and .points[0].nic_Gbps == 1600 and .points[0].busbw_GBps > 0' "$TMP/out"
if grep -q "nic_gbps is in GB/s" "$TMP/err"; then passed=$((passed + 1)); else
  failed=$((failed + 1)); echo "FAIL: nic_gbps warning: $(cat "$TMP/err")"; fi

# Alltoall on 1024 x 8 takes its reduced replay, from flags and from a scenario (docs/simulator.md).
expect 0 "alltoall 1024 x 8" -- "$NCCLZ" sim --nodes 1024 --gpus-per-node 8 --nic 100Gb/s --coll alltoall --size 1G \
  --compress fixedlen --json
check "alltoall reduced" '.fidelity == "reduced" and .ranks == 8192 and .ncclz.time_us > 0 and .plain.time_us > 0' "$TMP/out"
echo '{"kind":"what-if","data":{"cr":{"fixedlen":4,"huffman":6}},"platform":{"nodes":1024,"gpus_per_node":8,
  "nic_gbps":12.5},"sweep":{"collective":["alltoall"],"bytes":["1G"],"compress":["off","fixedlen","auto"]}}' >"$TMP/a2a.json"
expect 0 "alltoall scenario 1024 x 8" -- "$NCCLZ" sim --scenario "$TMP/a2a.json" --json
check "alltoall scenario reduced" '(.points | length) == 3 and ([.points[] | select(.fidelity == "reduced" and .time_us > 0)]
  | length) == 3' "$TMP/out"

# A scenario's own "profile" (relative to the scenario file) is the one replayed, as `ncclz run` takes it;
# --profile overrides it; a profile that is not a string, or cannot be read, is one line and exit 2.
mkdir -p "$TMP/sc"
cp "$DATA/profile_synthetic.json" "$TMP/sc/p.json"
echo '{"kind":"what-if","profile":"p.json","platform":{"nodes":2},"sweep":{"bytes":["1M"]}}' >"$TMP/sc/own.json"
expect 0 "scenario's own profile" -- "$NCCLZ" sim --scenario "$TMP/sc/own.json" --json
check "scenario's own profile used" '(.profile | endswith("sc/p.json")) and .points[0].time_us > 0' "$TMP/out"
expect 0 "--profile over the scenario's" -- "$NCCLZ" sim --profile "$DATA/profile_synthetic.json" --scenario "$TMP/sc/own.json" --json
check "--profile used" '(.profile | endswith("data/profile_synthetic.json"))' "$TMP/out"
echo '{"kind":"what-if","profile":3,"platform":{"nodes":2},"sweep":{"bytes":["1M"]}}' >"$TMP/sc/num.json"
expect 2 "scenario profile not a path" -- "$NCCLZ" sim --scenario "$TMP/sc/num.json"
echo '{"kind":"what-if","profile":"none.json","platform":{"nodes":2},"sweep":{"bytes":["1M"]}}' >"$TMP/sc/gone.json"
expect 2 "scenario profile missing" -- "$NCCLZ" sim --scenario "$TMP/sc/gone.json"

echo "sim_flags: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
