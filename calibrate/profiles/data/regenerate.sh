#!/usr/bin/env bash
# Regenerates the data profiles of this folder from the reference data (docs/data-profile.md).
# Usage: calibrate/profiles/data/regenerate.sh DATA_DIR [NCCLZ_BINARY]
#   DATA_DIR holds gradients/ and scientific/ as ../shared/data does.
set -euo pipefail
D=${1:?usage: regenerate.sh DATA_DIR [NCCLZ_BINARY]}
NCCLZ=${2:-build/ncclz}
OUT=$(cd "$(dirname "$0")" && pwd)
G=$D/gradients S=$D/scientific
TREFHT=()
for m in 57 59 60 61 66 67 68 69; do TREFHT+=(--input "$S/trefht_member$m.f32"); done
"$NCCLZ" profile-data --input "$G/resnet18_digits_step100_rank0.f32" --input "$G/resnet18_digits_step100_rank1.f32" \
  --quant qsgd:bits=8,bucket=512 --out "$OUT/resnet18-qsgd8.json"
"$NCCLZ" profile-data --input "$G/gpt_bytes_pystdlib_step300_rank0.f32" --input "$G/gpt_bytes_pystdlib_step300_rank1.f32" \
  --quant qsgd:bits=8,bucket=512 --out "$OUT/gpt-qsgd8.json"
"$NCCLZ" profile-data "${TREFHT[@]}" --quant eb:rel=1e-4 --out "$OUT/cesm-trefht-rel1e-4.json"
"$NCCLZ" profile-data "${TREFHT[@]}" --dims 110x64x128 --quant eb:rel=1e-4,lorenzo=3d \
  --out "$OUT/cesm-trefht-rel1e-4-lorenzo3d.json"
