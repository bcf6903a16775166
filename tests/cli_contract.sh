#!/usr/bin/env bash
# The command-line contract of `ncclz codec`, `ncclz perf` and every verb's options: --help exits 0,
# bad input exits 2 with one line on stderr, --json is one JSON object on stdout, a stream decodes
# back bit for bit.
#   tests/cli_contract.sh NCCLZ_BINARY TEST_DATA_DIR
set -u
NCCLZ=$1 DATA=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
passed=0 failed=0

# expect CODE DESCRIPTION -- command...: checks the exit status and, for 2, a single stderr line.
expect() {
  local want=$1 what=$2; shift 3
  "$@" >"$TMP/out" 2>"$TMP/err"
  local got=$? lines
  lines=$(wc -l <"$TMP/err")
  if [ "$got" -eq "$want" ] && { [ "$want" -ne 2 ] || [ "$lines" -eq 1 ]; }; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL: $what: exit $got (want $want), stderr: $(head -c 300 "$TMP/err")"
  fi
}

F=$DATA/trefht_member57_8x64x128.f32
expect 0 "codec --help" -- "$NCCLZ" codec --help
expect 0 "ncclz --help" -- "$NCCLZ" --help
expect 2 "unknown verb" -- "$NCCLZ" frobnicate
# every verb: an unknown option or a missing value is one line of ours (not getopt's own as well);
# sim where the build has the simulator (without SimGrid it only says so)
verbs="codec model profile-data perf calibrate run"
"$NCCLZ" sim --help >/dev/null 2>&1 && verbs="$verbs sim"
for verb in $verbs; do
  expect 2 "$verb: unknown option" -- "$NCCLZ" "$verb" --bogus
  if grep -qx "ncclz $verb: unknown option '--bogus' (ncclz $verb --help)" "$TMP/err"; then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAIL: $verb --bogus said: $(head -c 300 "$TMP/err")"; fi
done
case "$verbs" in *sim*) expect 2 "sim: --nodes without its value" -- "$NCCLZ" sim --nodes ;; esac
expect 2 "perf: -g without its value" -- "$NCCLZ" perf -g
expect 2 "missing --input" -- "$NCCLZ" codec --quant none --coder raw
expect 2 "missing file" -- "$NCCLZ" codec --input "$TMP/nope.f32" --quant none --coder raw
expect 2 "bad quant spec" -- "$NCCLZ" codec --input "$F" --quant eb:rel=abc --coder raw
expect 2 "bad coder" -- "$NCCLZ" codec --input "$F" --quant none --coder zstd
expect 2 "lorenzo 3d without dims" -- "$NCCLZ" codec --input "$F" --quant eb:rel=1e-4,lorenzo=3d --coder raw
expect 2 "fill values refused without fill=" -- "$NCCLZ" codec --input "$DATA/pop_ocean_t_384x320.f32" --quant eb:rel=1e-4 --coder huffman
expect 0 "fill values kept with fill=" -- "$NCCLZ" codec --input "$DATA/pop_ocean_t_384x320.f32" --dims 384x320 \
  --quant eb:rel=1e-4,lorenzo=2d,fill=9.97e36 --coder huffman --repeat 1
printf '\x00\x00\xc0\x7f' | cat "$F" - >"$TMP/nan.f32"   # one NaN appended
expect 2 "NaN under quantization" -- "$NCCLZ" codec --input "$TMP/nan.f32" --quant eb:abs=0.01 --coder raw
head -c 1001 "$F" >"$TMP/odd.f32"
expect 2 "not a whole number of elements" -- "$NCCLZ" codec --input "$TMP/odd.f32" --quant none --coder raw

# Lossless round trip through a stream file, and the JSON object on stdout.
expect 0 "encode to a stream" -- "$NCCLZ" codec --input "$F" --quant none --coder huffman --out "$TMP/s.ncz" --json --repeat 1
if jq -e '.lossless_ok and .output_bytes > 0 and (.coder_mix.huffman >= 1)' "$TMP/out" >/dev/null; then passed=$((passed + 1)); else
  failed=$((failed + 1)); echo "FAIL: --json object: $(head -c 300 "$TMP/out")"; fi
expect 0 "decode the stream" -- "$NCCLZ" codec --decode "$TMP/s.ncz" --output "$TMP/back.f32"
if cmp -s "$F" "$TMP/back.f32"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: decoded file differs"; fi

# Corrupt and truncated streams: exit 2, one line, nothing written.
cp "$TMP/s.ncz" "$TMP/bad.ncz"
printf '\xff' | dd of="$TMP/bad.ncz" bs=1 seek=200 conv=notrunc status=none
expect 2 "corrupt stream" -- "$NCCLZ" codec --decode "$TMP/bad.ncz" --output "$TMP/bad.out"
head -c 5000 "$TMP/s.ncz" >"$TMP/short.ncz"
expect 2 "truncated stream" -- "$NCCLZ" codec --decode "$TMP/short.ncz" --output "$TMP/short.out"
if [ ! -e "$TMP/bad.out" ] && [ ! -e "$TMP/short.out" ]; then passed=$((passed + 1)); else
  failed=$((failed + 1)); echo "FAIL: a corrupt stream left an output file"; fi

# Error-bounded stream: decoded values within the bound (checked by the encoder's own report).
expect 0 "eb stream" -- "$NCCLZ" codec --input "$F" --dims 8x64x128 --quant eb:rel=1e-4,lorenzo=3d --coder fixedlen --json --repeat 1
if jq -e '.bound_ok and .max_abs_err <= .error_bound' "$TMP/out" >/dev/null; then passed=$((passed + 1)); else
  failed=$((failed + 1)); echo "FAIL: eb bound: $(head -c 300 "$TMP/out")"; fi

# ncclz perf's options (the cpu backend, so anywhere): sizes, and what needs the nccl backend.
expect 0 "perf --help" -- "$NCCLZ" perf --help
expect 2 "perf -b not a size" -- "$NCCLZ" perf --backend cpu -b foo -e 1M
expect 2 "perf --chunk not a size" -- "$NCCLZ" perf --backend cpu --chunk 1.3K
expect 2 "perf --vs-plain needs nccl" -- "$NCCLZ" perf --backend cpu --vs-plain
expect 2 "perf --warm-s needs nccl" -- "$NCCLZ" perf --backend cpu --warm-s 1
expect 2 "perf --stress negative" -- "$NCCLZ" perf --backend cpu --stress -1
# integers are whole and in range: atoi would have run "-g 2x" on 2 GPUs and "--comm-lanes 4x" on 4 lanes
expect 2 "perf -g 2x" -- "$NCCLZ" perf --backend cpu -g 2x
expect 2 "perf -n 0" -- "$NCCLZ" perf --backend cpu -n 0
expect 2 "perf --comm-lanes 4x" -- "$NCCLZ" perf --backend cpu --comm-lanes 4x
expect 2 "codec --segment 12a" -- "$NCCLZ" codec --input "$F" --quant none --coder huffman --segment 12a
expect 2 "codec --repeat abc" -- "$NCCLZ" codec --input "$F" --quant none --coder raw --repeat abc
expect 2 "profile-data --ranks 2x" -- "$NCCLZ" profile-data --input "$F" --quant none --ranks 2x --out "$TMP/dp.json"
expect 2 "calibrate --sweeps 0" -- "$NCCLZ" calibrate --sweeps 0
expect 0 "perf 1.5K..3KiB" -- "$NCCLZ" perf --backend cpu -g 2 -b 1.5K -e 3KiB -f 2 -n 1 -w 0
# --data: one file at per-rank offsets, or a file per rank (rank r reads file r mod N)
G0="$DATA/resnet18_rank0_64k.f32" G1="$DATA/resnet18_rank1_64k.f32"
expect 0 "perf --data one file per rank" -- "$NCCLZ" perf --backend cpu -g 2 -b 64K -e 64K -n 1 -w 0 \
  --compress huffman --quant qsgd:bits=8,bucket=512 --data "$G0,$G1"
expect 2 "perf --data a missing second file" -- "$NCCLZ" perf --backend cpu -g 2 -b 64K -e 64K --data "$G0,$G1.missing"
expect 2 "perf --data an empty list" -- "$NCCLZ" perf --backend cpu -g 2 -b 64K -e 64K --data ,
# A configuration the first call would refuse is refused before it: exit 2, one line, no table row.
P="perf --backend cpu -g 2 -b 1K -e 1K -n 1 -w 0"
expect 2 "perf Lorenzo (perf has no --dims)" -- "$NCCLZ" $P --quant eb:abs=0.1,lorenzo=1d
expect 2 "perf --chunk 3" -- "$NCCLZ" $P --chunk 3
expect 2 "perf --final-bound with qsgd" -- "$NCCLZ" $P --quant qsgd:bits=8,bucket=512 --final-bound 0.1
for v in abc -1 nan 0 inf 1e400 " 1"; do
  expect 2 "perf --final-bound '$v'" -- "$NCCLZ" $P --quant eb:abs=0.1 --final-bound "$v"
done
for v in 1 abc nan -2; do expect 2 "perf -f '$v'" -- "$NCCLZ" $P -f "$v"; done
for v in +2 " 2" 2.0 -0; do expect 2 "perf -g '$v'" -- "$NCCLZ" $P -g "$v"; done
expect 2 "perf --warm-s nan" -- "$NCCLZ" $P --warm-s nan
expect 2 "perf NaN in --data, quantized" -- "$NCCLZ" $P --quant eb:abs=0.01 --data "$TMP/nan.f32"
printf '\x00\x00\x80\x7f' >"$TMP/inf.f32"   # +Inf
expect 2 "perf Inf in --data, qsgd" -- "$NCCLZ" $P --quant qsgd:bits=8,bucket=512 --data "$TMP/inf.f32"
expect 0 "perf --final-bound with eb" -- "$NCCLZ" $P --quant eb:abs=0.5 --final-bound 0.1

echo "cli_contract: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
