#!/usr/bin/env bash
# The codec report: CR of every coder on every file of a data set, beside the order-0 entropy
# bound and the optimal (unlimited) Huffman code of the same symbols, plus max error vs bound.
#   scripts/codec_report.sh DATA_DIR OUT_DIR
# DATA_DIR holds either scientific/fields.json + gradients/*.f32 (the full data set layout) or a
# flat fields.json with "fields" and "gradients" (tests/data). Writes OUT_DIR/codec.jsonl (one
# `ncclz codec --json` object per line), OUT_DIR/codec-table.md and OUT_DIR/codec-cr.svg.
set -euo pipefail
DATA=$1
OUT=$2
NCCLZ=${NCCLZ:-build/ncclz}
mkdir -p "$OUT"
: >"$OUT/codec.jsonl"

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
      2>"$OUT/last.err" >>"$OUT/codec.jsonl" || { echo; echo "ncclz: FAILED on $1 $3 $coder: $(tail -1 "$OUT/last.err")"; } >&2
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

# One row per (file, quant): the three coders side by side.
jq -s -r '
  group_by([.input, .quant]) | map({
    file: (.[0].input | split("/") | last), quant: .[0].quant,
    q: .[0].cr_quant, ent: .[0].entropy_cr, opt: .[0].huffman_opt_cr, ideal: .[0].fixedlen_ideal_cr,
    raw: (map(select(.coder=="raw"))[0].cr), fl: (map(select(.coder=="fixedlen"))[0].cr),
    hf: (map(select(.coder=="huffman"))[0].cr),
    ok: (all(.lossless_ok and .bound_ok)),
    err: (map(.max_abs_err/(if .error_bound>0 then .error_bound else 1 end)) | max)}) |
  ("| file | quantizer | quant only | RAW | FIXEDLEN | HUFFMAN | entropy bound | optimal Huffman | HUFFMAN / optimal | FIXEDLEN / ideal widths | max err / bound | round trip |",
   "|---|---|---|---|---|---|---|---|---|---|---|---|",
   (.[] | "| \(.file) | `\(.quant)` | \(.q*100|round/100) | \(.raw*100|round/100) | \(.fl*100|round/100) | \(.hf*100|round/100) | \(.ent*100|round/100) | \(.opt*100|round/100) | \(.hf/.opt*1000|round/10)% | \(.fl/.ideal*1000|round/10)% | \(.err*1000|round/1000) | \(if .ok then "ok" else "FAIL" end) |"))
' "$OUT/codec.jsonl" >"$OUT/codec-table.md"

# CR per file for each coder, as a bar chart.
jq -s -r 'group_by([.input, .quant]) | .[] |
  "\(.[0].input|split("/")|last|sub("\\.f32$";""))[\(.[0].quant|sub(",fill=[^,]*";"")|sub("eb:rel=1e-4";"rel")|sub(",bucket=512";"")|sub("qsgd:bits=";"q"))]\t\(map(select(.coder=="fixedlen"))[0].cr)\t\(map(select(.coder=="huffman"))[0].cr)\t\(.[0].huffman_opt_cr)"' \
  "$OUT/codec.jsonl" >"$OUT/codec-cr.tsv"
gnuplot <<GP
set terminal svg size 1200,560 dynamic font "sans,10" noenhanced
set output "$OUT/codec-cr.svg"
set title "Compression ratio per coder (input bytes / frame bytes)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set datafile separator "\t"
set xtics rotate by -45 scale 0 font ",8"
set bmargin 14
set ylabel "CR"
set key outside top center horizontal
set grid ytics
plot "$OUT/codec-cr.tsv" using 2:xtic(1) title "FIXEDLEN", "" using 3 title "HUFFMAN", "" using 4 title "optimal Huffman (no tables)"
GP
echo "ncclz: wrote $OUT/codec-table.md, $OUT/codec.jsonl and $OUT/codec-cr.svg" >&2
