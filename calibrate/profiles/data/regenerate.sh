#!/usr/bin/env bash
# Regenerates the data profiles of this folder from the reference data (docs/data-profile.md).
# Usage: calibrate/profiles/data/regenerate.sh DATA_DIR [NCCLZ_BINARY]
#   DATA_DIR holds gradients/ and scientific/ (the reference data's layout). The profiles record
#   their inputs relative to it ("gradients/resnet18_digits_step100_rank0.f32").
set -euo pipefail
D=${1:?usage: regenerate.sh DATA_DIR [NCCLZ_BINARY]}
NCCLZ=$(realpath "${2:-build/ncclz}")
OUT=$(cd "$(dirname "$0")" && pwd)
cd "$D"
G=gradients S=scientific
TREFHT=()
for m in 57 59 60 61 66 67 68 69; do TREFHT+=(--input "$S/trefht_member$m.f32"); done
"$NCCLZ" profile-data --input "$G/resnet18_digits_step100_rank0.f32" --input "$G/resnet18_digits_step100_rank1.f32" \
  --quant qsgd:bits=8,bucket=512 --out "$OUT/resnet18-qsgd8.json"
"$NCCLZ" profile-data --input "$G/gpt_bytes_pystdlib_step300_rank0.f32" --input "$G/gpt_bytes_pystdlib_step300_rank1.f32" \
  --quant qsgd:bits=8,bucket=512 --out "$OUT/gpt-qsgd8.json"
"$NCCLZ" profile-data "${TREFHT[@]}" --quant eb:rel=1e-4 --out "$OUT/cesm-trefht-rel1e-4.json"
"$NCCLZ" profile-data "${TREFHT[@]}" --dims 110x64x128 --quant eb:rel=1e-4,lorenzo=3d \
  --out "$OUT/cesm-trefht-rel1e-4-lorenzo3d.json"
# The single-member fields: each file cut into disjoint slices along its first dimension, one per
# rank (--ranks divides the levels), under the error bound with 3D (2D) Lorenzo; the NCEP fields'
# fill value (1e36, absent in these files) and the ocean's land points (9.97e36) kept exactly.
NCEP_FILL=9.999999616903162e+35
for v in T U V Z3; do
  "$NCCLZ" profile-data --input "$S/ncep_climo_$v.f32" --ranks 17 --dims 17x64x128 \
    --quant eb:rel=1e-4,lorenzo=3d,fill=$NCEP_FILL --out "$OUT/ncep-$v-rel1e-4-lorenzo3d.json"
done
"$NCCLZ" profile-data --input "$S/ncep_climo_OMEGA.f32" --ranks 4 --dims 12x64x128 \
  --quant eb:rel=1e-4,lorenzo=3d,fill=$NCEP_FILL --out "$OUT/ncep-OMEGA-rel1e-4-lorenzo3d.json"
"$NCCLZ" profile-data --input "$S/ncep_climo_SHUM.f32" --ranks 4 --dims 8x64x128 \
  --quant eb:rel=1e-4,lorenzo=3d,fill=$NCEP_FILL --out "$OUT/ncep-SHUM-rel1e-4-lorenzo3d.json"
"$NCCLZ" profile-data --input "$S/surface_tC.f32" --ranks 8 --dims 40x96x192 \
  --quant eb:rel=1e-4,lorenzo=3d --out "$OUT/surface-tC-rel1e-4-lorenzo3d.json"
"$NCCLZ" profile-data --input "$S/pop_ocean_t.f32" --ranks 8 --dims 384x320 \
  --quant eb:rel=1e-4,lorenzo=2d,fill=9.969209968386869e+36 --out "$OUT/pop-ocean-t-rel1e-4-lorenzo2d.json"
