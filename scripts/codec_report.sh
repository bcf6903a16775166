#!/usr/bin/env bash
# The codec report: CR of every coder on every file of a data set, beside the order-0 entropy
# bound and the optimal (unlimited) Huffman code of the same symbols, plus max error vs bound.
#   scripts/codec_report.sh DATA_DIR OUT_DIR
# DATA_DIR holds either scientific/fields.json + gradients/*.f32 (the full data set layout) or a
# flat fields.json with "fields" and "gradients" (tests/data). Runs `ncclz codec --json` on each
# (file, quantizer, coder) into OUT_DIR/codec.jsonl, then `ncclz run` on a "codec" scenario
# writes the page: OUT_DIR/index.html, results.json, codec_cr.csv and codec_cr.svg (docs/reports.md).
set -euo pipefail
DATA=$1
OUT=$2
NCCLZ=${NCCLZ:-build/ncclz}
mkdir -p "$OUT"
: >"$OUT/codec.jsonl"
ERR=$(mktemp)
trap 'rm -f "$ERR"' EXIT

if [ -f "$DATA/scientific/fields.json" ]; then
  FIELDS_DIR=$DATA/scientific GRAD_DIR=$DATA/gradients
  GRADS=$(cd "$GRAD_DIR" && ls *.f32)
else
  FIELDS_DIR=$DATA GRAD_DIR=$DATA
  GRADS=$(jq -r '.gradients[]' "$DATA/fields.json")
fi

progress() { [ -t 2 ] && printf '\r%-70s' "$*" >&2 || true; }

run() { # file dims spec
  for coder in raw fixedlen huffman; do
    progress "$(basename "$1") $3 $coder"
    "$NCCLZ" codec --input "$1" ${2:+--dims "$2"} --quant "$3" --coder "$coder" --repeat 1 --json \
      2>"$ERR" >>"$OUT/codec.jsonl" || { echo; echo "ncclz: FAILED on $1 $3 $coder: $(tail -1 "$ERR")"; } >&2
  done
}

# "-" stands for "no fill value": read would merge an empty field into the next tab.
jq -r '.fields[] | [.file, (.dims|map(tostring)|join("x")), ((.fill_value // "-") | tostring), (.dims|length)] | @tsv' \
  "$FIELDS_DIR/fields.json" | while IFS=$'\t' read -r file dims fill nd; do
  fillopt=""
  [ "$fill" != "-" ] && fillopt=",fill=$fill"
  run "$FIELDS_DIR/$file" "$dims" "eb:rel=1e-4$fillopt"
  run "$FIELDS_DIR/$file" "$dims" "eb:rel=1e-4,lorenzo=${nd}d$fillopt"
done
for g in $GRADS; do
  run "$GRAD_DIR/$g" "" "qsgd:bits=8,bucket=512"
  run "$GRAD_DIR/$g" "" "qsgd:bits=4,bucket=512"
done
progress ""; [ -t 2 ] && echo >&2

# The page, like every other report: a "codec" scenario over the results.
cat >"$OUT/codec-scenario.json" <<JSON
{"kind": "codec", "name": "Compression ratio of each coder on $DATA",
 "description": "ncclz codec on every field (REL 1e-4, with and without Lorenzo) and gradient (QSGD 8 and 4 bits) of $DATA, with each coder; the entropy bound and the optimal Huffman code are of the same symbols, without headers or tables.",
 "results": "codec.jsonl"}
JSON
"$NCCLZ" run "$OUT/codec-scenario.json" --out "$OUT"
