#!/usr/bin/env bash
# `ncclz run`'s contract for hostile scenarios and output directories (docs/reports.md, "The output
# directory"): no field reaches a shell, a measure scenario is checked whole before anything runs,
# bad input exits 2 with one line and writes nothing, a report never writes through a symbolic
# link, two runs into one directory do not mix, and a report removes only its own earlier files.
#   tests/run_contract.sh NCCLZ_BINARY TEST_DATA_DIR
set -u
NCCLZ=$(realpath "$1") DATA=$(realpath "$2")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP" || exit 1
passed=0 failed=0
ok() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }
check() { if eval "$1"; then ok; else fail "$2"; fi; }
if "$NCCLZ" sim --nodes 1 2>&1 | grep -q "no simulator"; then # its measure runs end in a validate report
  echo "SKIP: this build has no simulator (SimGrid not found)" >&2
  exit 77
fi

# expect CODE DESCRIPTION -- command...: the exit status and, for 2, one line on stderr.
expect() {
  local want=$1 what=$2; shift 3
  "$@" >"$TMP/out" 2>"$TMP/err"
  local got=$?
  if [ "$got" -eq "$want" ] && { [ "$want" -ne 2 ] || [ "$(wc -l <"$TMP/err")" -eq 1 ]; }; then ok; else
    fail "$what: exit $got (want $want), stderr: $(tail -c 300 "$TMP/err")"; fi
}

# The CPU measure scenario with absolute paths, runs[0] changed by KEY=JSON arguments.
measure() {
  local patch='{}' a
  for a in "$@"; do patch=$(jq -cn --argjson p "$patch" --arg k "${a%%=*}" --argjson v "${a#*=}" '$p + {($k): $v}'); done
  jq --arg d "$DATA" --argjson p "$patch" \
    '.profile = $d + "/" + .profile | .runs[0].data_file = $d + "/" + .runs[0].data_file | .runs[0] += $p' \
    "$DATA/scenario_measure_cpu.json"
}

# 1. A quote in a field is only a quote: the reproducer exits 2 and runs nothing.
measure 'quant="qsgd:bits=8,bucket=512'"'"'; touch '"$TMP"'/pwned; echo '"'"'"' >inject.json
expect 2 "quant with a shell command" -- "$NCCLZ" run inject.json --out inject
check '[ ! -e pwned ] && [ ! -e inject ]' "the injected command ran or the report directory was created"
measure 'data_file="x$(touch '"$TMP"'/pwned2).f32"' >inject2.json
expect 2 "data_file with a command substitution" -- "$NCCLZ" run inject2.json --out inject2
check '[ ! -e pwned2 ] && [ ! -e inject2 ]' "data_file: a command ran or a directory was created"

# 2. Every field of a measure run is checked before the first ncclz perf starts.
n=0
while IFS='|' read -r field json; do
  n=$((n + 1))
  measure "$json" >"bad$n.json"
  expect 2 "measure $json" -- "$NCCLZ" run "bad$n.json" --out "bad$n"
  check 'grep -q "runs\[0\]\.$field" err && [ ! -e "bad$n" ] && ! grep -q " perf -c " err' \
    "measure $json: the message names runs[0].$field, nothing written: $(cat err)"
done <<'EOF'
quant|quant="qsgd:bits=99"
quant|quant="eb:abs=0.1,lorenzo=3d"
collective|collective="allreduce; id"
compress|compress=["off", "zstd"]
compress|compress=["off", "off"]
backend|backend="gpu"
data_file|data_file="no-such-file.f32"
env|env={"LD_PRELOAD": "/tmp/evil.so"}
env|env={"NCCL_DEBUG": "INFO\nNCCL_X=1"}
env|env={"NCCL_DEBUG": 3}
gpus|gpus=2.5
factor|factor=1
min_bytes|min_bytes="1.3K"
min_bytes|min_bytes="1G"
path|path="nowhere"
EOF

measure | jq '.paths.threads.gpus_per_node = 0' >badpaths.json
expect 2 "measure with a bad validate path" -- "$NCCLZ" run badpaths.json --out badpaths
check 'grep -q "paths.threads" err && ! grep -q " perf -c " err && [ ! -e badpaths ]' "bad paths: $(cat err)"

# 3. --out: empty, a symbolic link, an entry that is a link.
measure >ok.json
cat >cr.json <<EOF
{"kind": "cr-table", "data_dir": "$DATA", "nodes": [1, 2], "ranks_per_node": 2, "datasets": [{"label": "g",
 "quant": "qsgd:bits=8,bucket=512", "files": ["resnet18_rank0_64k.f32", "resnet18_rank1_64k.f32"]}]}
EOF
expect 2 "--out ''" -- "$NCCLZ" run ok.json --out ''
mkdir real && ln -s real linked
expect 2 "--out a symbolic link" -- "$NCCLZ" run ok.json --out linked
expect 2 "--out a symbolic link with a trailing /" -- "$NCCLZ" run ok.json --out linked//
check '[ -z "$(ls -A real)" ]' "a report was written through a linked --out"
touch afile
expect 2 "--out a regular file" -- "$NCCLZ" run cr.json --out afile
echo secret >target
mkdir victim && ln -s ../target victim/results.json
expect 2 "results.json a symbolic link" -- "$NCCLZ" run ok.json --out victim
check '[ "$(cat target)" = secret ] && [ -L victim/results.json ] && [ ! -e victim/index.html ]' \
  "the link's target was written, or part of the report was"
mkdir victim2 && ln -s ../target victim2/table1.csv
expect 2 "a table's CSV a symbolic link" -- "$NCCLZ" run cr.json --out victim2
check '[ "$(cat target)" = secret ] && [ ! -e victim2/index.html ] && grep -q "table1.csv. is a symbolic link" err' \
  "table1.csv's target was written: $(cat err)"

# 4. A valid run: every file the manifest lists is there, and nothing is written outside --out
# (the plots' scratch files stay in the report's staging directory).
mkdir scratch
expect 0 "measure on the CPU transport" -- env TMPDIR="$TMP/scratch" "$NCCLZ" run ok.json --out rep
check '[ -z "$(ls -A scratch)" ]' "files left in TMPDIR: $(ls -A scratch)"
check '[ "$(head -1 rep/.ncclz-manifest)" = "ncclz report files" ] && [ -z "$(ls -a rep | grep ncclz-tmp)" ]' \
  "no manifest, or the staging directory was left"
check 'tail -n +2 rep/.ncclz-manifest | while read -r f; do [ -f "rep/$f" ] || exit 1; done' "a listed file is missing"
check 'jq -e "[.data_inputs[] | select(.what == \"measurement\") | .path | startswith(\"rep/measure-\")] | all" rep/results.json >/dev/null' \
  "measurement inputs do not name their place in the report"

# 5. A report of another kind into the same directory removes the measure report's files, keeps
# the user's, and never follows a manifest entry out of the directory.
echo mine >rep/notes.txt
echo mine >rep/mine.csv
echo keep >outside.csv
printf '../outside.csv\n/etc/passwd\nnotes.txt\n' >>rep/.ncclz-manifest
expect 0 "cr-table into the measure report's directory" -- "$NCCLZ" run cr.json --out rep
check '[ ! -e rep/measure-0-off.json ] && [ ! -e rep/validate_points.csv ] && [ -e rep/table1.csv ]' \
  "files of the earlier report stayed: $(ls rep)"
check '[ -e rep/notes.txt ] && [ -e rep/mine.csv ] && [ "$(cat outside.csv)" = keep ]' "a user file was removed"

# 6. A failed run leaves the previous report as it was.
cp rep/results.json before.json
echo '{"kind": "cr-table", "nodes": [1], "datasets": [{"label": "a", "files": ["nope.f32"]}]}' >badcr.json
expect 2 "a bad cr-table into the report's directory" -- "$NCCLZ" run badcr.json --out rep
check 'cmp -s before.json rep/results.json && [ -e rep/table1.csv ] && [ -z "$(ls -a rep | grep ncclz-tmp)" ]' \
  "the failed run changed the previous report"

# 7. Two runs into one directory: the second is refused while the first holds the lock, and the
# directory ends with the first's whole report.
printf '#!/bin/sh\nsleep 2\nexec gnuplot "$@"\n' >slowplot
chmod +x slowplot
NCCLZ_GNUPLOT=$TMP/slowplot "$NCCLZ" run cr.json --out two >/dev/null 2>first.err &
first=$!
for _ in $(seq 50); do [ -n "$(ls -a two 2>/dev/null | grep ncclz-tmp)" ] && break; sleep 0.1; done
expect 2 "a second run into a directory being written" -- "$NCCLZ" run ok.json --out two
check 'grep -q "another ncclz run is writing" err' "the second run's message: $(cat err)"
wait $first
rc_first=$?
check '[ $rc_first -eq 0 ] && [ -e two/table1.csv ] && [ ! -e two/validate_points.csv ]' "the first run: $(cat first.err)"

# 8. A staging directory a killed run left behind is removed by the next run.
mkdir rep/.ncclz-tmp-dead && echo x >rep/.ncclz-tmp-dead/index.html
expect 0 "a run after a killed one" -- "$NCCLZ" run cr.json --out rep
check '[ ! -e rep/.ncclz-tmp-dead ]' "the dead run's staging directory stayed"

# 9. results.json is UTF-8: a name that is not is refused, one that is comes through whole.
printf '{"kind": "cr-table", "name": "bad \xff\xfe", "nodes": [1], "datasets": []}' >latin.json
expect 2 "a name that is not UTF-8" -- "$NCCLZ" run latin.json --out latin
check 'grep -q "scenario: not valid UTF-8 at line 1" err && [ ! -e latin ]' "message: $(cat err)"
for bad in '\xc0\xaf' '\xed\xa0\x80' '\xf4\x90\x80\x80' '\xe2\x82'; do
  printf "{\"kind\": \"cr-table\", \"description\": \"x${bad}y\", \"nodes\": [1], \"datasets\": []}" >bad8.json
  expect 2 "description with $bad" -- "$NCCLZ" run bad8.json --out bad8
done
long=$(printf '\303\251%.0s' $(seq 300)) # 300 x U+00E9, 600 bytes: cut to fit 255
sed "s/\"kind\"/\"name\": \"$long\", \"kind\"/" cr.json >long.json
expect 0 "a long UTF-8 name" -- "$NCCLZ" run long.json --out long
check 'iconv -f UTF-8 -t UTF-8 long/results.json >/dev/null 2>&1 && jq -e ".name | startswith(\"\u00e9\u00e9\")" long/results.json >/dev/null' \
  "the cut name is not UTF-8"

echo "run_contract: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
