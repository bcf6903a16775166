#!/usr/bin/env bash
# Renders a bench/results/codecs-*.json (from bench/codecs.sh on the GPU machine) as the README's
# markdown table. Throughputs are input GB/s; "% roof" is the coder's share of the copy roofline
# BW/(1+1/CR) measured in the same run.
#   bench/codecs_table.sh bench/results/codecs-<date>.json
set -euo pipefail
jq -r '
  "Device \(.device), CUDA runtime \(.cuda_runtime), NCCL \(.nccl), commit \(.commit), \(.date); \(.input_bytes/1048576) MiB of real data in \(.frame_bytes/1048576) MiB frames, median of \(.runs) runs.\n",
  "| data | quantizer | coder | CR | encode (quantize + code) | decode (decode + dequantize) | coder encode | coder decode | roofline | coder encode / roof | coder decode / roof | checks |",
  "|---|---|---|---|---|---|---|---|---|---|---|---|",
  (.rows[] | "| \(.data) | `\(.quant)` | \(.coder) | \(.cr*100|round/100) | \(.encode_gbps|round) | \(.decode_gbps|round) | \(.coder_encode_gbps|round) | \(.coder_decode_gbps|round) | \(.roofline_gbps|round) | \(.coder_encode_gbps/.roofline_gbps*100|round)% | \(.coder_decode_gbps/.roofline_gbps*100|round)% | \(if .ok then "ok" else "FAIL" end) |")
' "$1"
