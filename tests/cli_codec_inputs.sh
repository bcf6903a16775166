#!/usr/bin/env bash
# Hostile input to the codec verbs (issue 28): every case exits 2 with one line on stderr within
# 10 s and writes no output file, or 0 where the input is valid; the codec verb's stdout/stderr
# contract and --decode --compare.
#   tests/cli_codec_inputs.sh NCCLZ_BINARY TEST_DATA_DIR FUZZ_DIR
set -u
NCCLZ=$1 DATA=$2 FUZZ=$3
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
passed=0 failed=0

ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }

# expect CODE DESCRIPTION -- command...: the exit status within 10 s and, for 2, one stderr line.
expect() {
  local want=$1 what=$2; shift 3
  timeout 10 "$@" >"$TMP/out" 2>"$TMP/err"
  local got=$? lines
  lines=$(wc -l <"$TMP/err")
  if [ "$got" -eq "$want" ] && { [ "$want" -ne 2 ] || [ "$lines" -eq 1 ]; }; then ok; else
    bad "$what: exit $got (want $want), stderr: $(head -c 300 "$TMP/err")"; fi
}

head -c 4000 "$DATA/trefht_member57_8x64x128.f32" >"$TMP/x.f32" # 1,000 elements
X=$TMP/x.f32

# --dims whose product overflows or differs, in every verb that takes them (a segfault or heap
# overflow before), and --dims the strict parser refuses.
for verb in codec model profile-data; do
  case $verb in
  codec) run=("$NCCLZ" codec --input "$X" --coder huffman --repeat 1) ;;
  model) run=("$NCCLZ" model --data "$X") ;;
  profile-data) run=("$NCCLZ" profile-data --input "$X" --out "$TMP/pd.json") ;;
  esac
  expect 2 "$verb: dims product overflows (3d)" -- "${run[@]}" --dims 3687103364x505754x39569 --quant eb:abs=0.1,lorenzo=3d
  expect 2 "$verb: dims product overflows (1d)" -- "${run[@]}" --dims 3687103364x505754x39569 --quant eb:abs=0.1,lorenzo=1d
  expect 2 "$verb: dims wrap to 0" -- "${run[@]}" --dims 2147483648x2147483648x4 --quant eb:abs=0.1,lorenzo=3d
  expect 2 "$verb: dims wrap to n" -- "${run[@]}" --dims 2147483648x2147483648x1004 --quant eb:abs=0.1,lorenzo=1d
  expect 2 "$verb: dims product differs" -- "${run[@]}" --dims 10x10x11 --quant eb:abs=0.1,lorenzo=3d
  for d in -18446744073709551615x1000 +10x100 " 10x100" "10x100 " 10x100x x1000 10xx100 0x1000 1x2x3x4 0x3E8; do
    expect 2 "$verb: --dims '$d'" -- "${run[@]}" --dims "$d" --quant eb:abs=0.1
  done
  for q in "eb:abs= 1" "eb:abs=1 " "eb:abs=nan" "eb:abs=0x1p-3" "qsgd:bits=+4,bucket=64" "qsgd:bits=4,bucket=0x40"; do
    expect 2 "$verb: --quant '$q'" -- "${run[@]}" --quant "$q"
  done
  expect 0 "$verb: valid dims" -- "${run[@]}" --dims 10x10x10 --quant eb:abs=0.1,lorenzo=3d
done
[ ! -e "$TMP/pd.json" ] || [ -s "$TMP/pd.json" ] && ok || bad "profile-data left an empty output"

expect 2 "codec: a newline in --dims" -- "$NCCLZ" codec --input "$X" --coder raw --dims $'10\nx100'
expect 2 "codec: a newline in --quant" -- "$NCCLZ" codec --input "$X" --coder raw --quant $'eb:abs=1\n'
expect 2 "codec: --repeat ' 3'" -- "$NCCLZ" codec --input "$X" --coder raw --repeat " 3"
expect 2 "codec: --segment +5" -- "$NCCLZ" codec --input "$X" --coder raw --segment +5
expect 2 "codec: --chunk -4M" -- "$NCCLZ" codec --input "$X" --coder raw --chunk -4M
expect 2 "profile-data: --frames with an empty item" -- "$NCCLZ" profile-data --input "$X" --quant eb:abs=0.1 \
  --frames 64K,,1M --out "$TMP/pd2.json"
[ ! -e "$TMP/pd2.json" ] && ok || bad "a refused profile-data wrote its output"
expect 0 "profile-data: a frame size far beyond the data (was out of memory)" -- "$NCCLZ" profile-data --input "$X" \
  --quant eb:abs=0.1 --frames 64K,1000000000000000 --out "$TMP/pd3.json"

# Hostile streams (tests/fuzz/regress/stream: header fields out of range with their checksums
# recomputed): exit 2, one line, no output file. The seed streams decode (exit 0).
n=0
for f in "$FUZZ"/regress/stream/*; do
  rm -f "$TMP/dec.out"
  expect 2 "--decode $(basename "$f")" -- "$NCCLZ" codec --decode "$f" --output "$TMP/dec.out"
  [ ! -e "$TMP/dec.out" ] && ok || bad "--decode $(basename "$f") wrote an output file"
  n=$((n + 1))
done
[ "$n" -ge 20 ] && ok || bad "only $n hostile streams found in $FUZZ/regress/stream"
for f in "$FUZZ"/corpus/stream/*; do
  expect 0 "--decode $(basename "$f")" -- "$NCCLZ" codec --decode "$f" --output "$TMP/dec.out"
done

# fill=0 matches -0.0, which comes back as the fill value +0.0: within the bound, not a failed round trip.
printf '\x00\x00\x00\x80\x00\x00\x80\x3f\x00\x00\x00\x00' >"$TMP/negzero.f32"
expect 0 "fill=0 with -0.0 in the data" -- "$NCCLZ" codec --input "$TMP/negzero.f32" --quant eb:abs=0.25,fill=0 --coder raw --repeat 1

# The codec verb's output: the table on stdout without --json (so `> file` captures it); with
# --json, one JSON object on stdout and the table on stderr.
expect 0 "codec table" -- "$NCCLZ" codec --input "$X" --quant eb:abs=0.1 --coder huffman --repeat 1 --out "$TMP/s.nczs"
grep -q "lossless" "$TMP/out" && [ ! -s "$TMP/err" ] && ok || bad "the table is not on stdout alone"
expect 0 "codec --json" -- "$NCCLZ" codec --input "$X" --quant eb:abs=0.1 --coder huffman --repeat 1 --json
[ "$(wc -l <"$TMP/out")" -eq 1 ] && jq -e '.bound_ok' "$TMP/out" >/dev/null && grep -q "lossless" "$TMP/err" && ok ||
  bad "--json: object on stdout, table on stderr"
expect 0 "codec --help" -- "$NCCLZ" codec --help
grep -q "default none" "$TMP/out" && ok || bad "--help does not say that --quant defaults to none"

# --decode --compare: within the stream's bound (0), beyond it (1), another size (2), misplaced (2).
expect 0 "--compare with the original" -- "$NCCLZ" codec --decode "$TMP/s.nczs" --output "$TMP/y.f32" --compare "$X"
grep -q "max_abs_err" "$TMP/out" && ok || bad "--compare does not report max_abs_err"
expect 0 "--compare --json" -- "$NCCLZ" codec --decode "$TMP/s.nczs" --output "$TMP/y.f32" --compare "$X" --json
jq -e '.bound_ok and .max_abs_err <= .error_bound and .error_bound == 0.1' "$TMP/out" >/dev/null && ok ||
  bad "--compare --json: $(head -c 300 "$TMP/out")"
cp "$X" "$TMP/x2.f32"
printf '\x00\x00\x80\x3f' | dd of="$TMP/x2.f32" bs=1 seek=400 conv=notrunc status=none # one element moved to 1.0
expect 1 "--compare beyond the bound" -- "$NCCLZ" codec --decode "$TMP/s.nczs" --output "$TMP/y.f32" --compare "$TMP/x2.f32"
head -c 3996 "$X" >"$TMP/short.f32"
expect 2 "--compare with another size" -- "$NCCLZ" codec --decode "$TMP/s.nczs" --output "$TMP/y.f32" --compare "$TMP/short.f32"
expect 2 "--compare without --decode" -- "$NCCLZ" codec --input "$X" --coder raw --compare "$X"
"$NCCLZ" codec --input "$X" --quant none --coder fixedlen --repeat 1 --out "$TMP/n.nczs" >/dev/null
expect 0 "--compare lossless" -- "$NCCLZ" codec --decode "$TMP/n.nczs" --output "$TMP/y.f32" --compare "$X"
expect 1 "--compare lossless, one element off" -- "$NCCLZ" codec --decode "$TMP/n.nczs" --output "$TMP/y.f32" --compare "$TMP/x2.f32"

echo "cli_codec_inputs: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
