#!/usr/bin/env bash
# `ncclz perf --backend cpu` under mpirun: one 3-rank run over the MPI transport (one table, one
# JSON file with nranks 3), and ranks started with different options refused with exit 2 and a
# line on every rank, before any call.
#   tests/perf_mpi.sh MPIEXEC NCCLZ_BINARY TEST_DATA_DIR
set -u
MPIEXEC=$1 NCCLZ=$2 DATA=$3
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
passed=0 failed=0
MPI=("$MPIEXEC" --allow-run-as-root --oversubscribe)
P=(perf --backend cpu -g 1 -b 4K -e 64K -f 4 -n 2 -w 1)

ok() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }

# run CODE DESCRIPTION -- mpirun arguments...: the exit status, stderr in $TMP/err.
run() {
  local want=$1 what=$2; shift 3
  timeout 120 "${MPI[@]}" "$@" >"$TMP/out" 2>"$TMP/err"
  local got=$?
  if [ "$got" -eq "$want" ]; then ok; else fail "$what: exit $got (want $want): $(head -c 400 "$TMP/err")"; fi
}

# Every one of n ranks printed its one-line refusal holding $2.
refused_on_every_rank() {
  local n=$1 text=$2 what=$3 got
  got=$(grep -c "^ncclz perf: .*$text" "$TMP/err")
  if [ "$got" -ge "$n" ] && ! grep -q '^ *[0-9]\+ \+[0-9]\+ \+f32' "$TMP/err"; then ok; else
    fail "$what: $got of $n ranks said '$text' (or a table row was printed): $(head -c 400 "$TMP/err")"; fi
}

run 0 "3 ranks over MPI" -- -np 3 "$NCCLZ" "${P[@]}" --quant qsgd:bits=8,bucket=512 --compress huffman --json "$TMP/r.json"
if [ "$(grep -c '^# ncclz perf: allreduce, 3 ranks' "$TMP/err")" -eq 1 ] &&
   jq -e '.nranks == 3 and .launch == "mpi" and (.points | length) == 3 and all(.points[]; .wrong == 0 and .cr > 1)' \
     "$TMP/r.json" >/dev/null; then ok; else fail "one 3-rank table and JSON: $(head -c 400 "$TMP/err")"; fi

run 0 "3 ranks, --stress" -- -np 3 "$NCCLZ" perf --backend cpu -g 1 --stress 6 --compress fixedlen --quant eb:abs=0.01
if grep -q '# stress: 6 calls .* on 3 ranks, fixedlen, 0 wrong elements$' "$TMP/err"; then ok; else
  fail "stress over MPI: $(head -c 400 "$TMP/err")"; fi

run 2 "different --quant per rank" -- -np 1 "$NCCLZ" "${P[@]}" --quant eb:abs=0.1 : \
  -np 2 "$NCCLZ" "${P[@]}" --quant eb:abs=0.2
refused_on_every_rank 3 "different options" "different --quant"

run 2 "different --data per rank" -- -np 2 "$NCCLZ" "${P[@]}" --data "$DATA/resnet18_rank0_64k.f32" : \
  -np 1 "$NCCLZ" "${P[@]}" --data "$DATA/resnet18_rank1_64k.f32"
refused_on_every_rank 3 "different options" "different --data"

run 2 "a bad option on one rank" -- -np 1 "$NCCLZ" "${P[@]}" --quant eb:abs=oops : -np 2 "$NCCLZ" "${P[@]}"
refused_on_every_rank 2 "another rank refused its options" "bad option on rank 0"
refused_on_every_rank 1 "abs='oops'" "bad option on rank 0, its own message"

run 2 "-g 2 under mpirun" -- -np 3 "$NCCLZ" perf --backend cpu -g 2 -b 4K -e 4K
refused_on_every_rank 3 "under mpirun: -g 1" "-g 2 under mpirun"

echo "perf_mpi: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
