#!/usr/bin/env bash
# The main job: installs what is missing, builds, and writes the codec report for a data set.
#   scripts/main.sh [DATA_DIR] [OUT_DIR]
# DATA_DIR defaults to $NCCLZ_DATA, else the bundled test slices (tests/data).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
ncclz_install_deps
ncclz_build build
DATA=${1:-${NCCLZ_DATA:-tests/data}}
OUT=${2:-out/report}
NCCLZ=build/ncclz scripts/codec_report.sh "$DATA" "$OUT"
cat "$OUT/codec-table.md"
