#!/usr/bin/env bash
# The main job: installs what is missing, builds (CPU only: no GPU is needed), and writes
#   out/whatif-1024/index.html   1024 nodes x 8 H200, NICs 25..400 Gb/s: speedup over NCCL
#   out/tune-default/index.html  REA thresholds recommended for a workload mix, with regret
#   out/codec-report/index.html  CR of every coder on a data set, file by file
# from the shipped H200 profile.
#   scripts/main.sh [DATA_DIR]
# DATA_DIR (the codec report's data) defaults to $NCCLZ_DATA, else the bundled slices (tests/data).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
ncclz_install_deps
ncclz_build build-cpu -DNCCLZ_CUDA=OFF
DATA=${1:-${NCCLZ_DATA:-tests/data}}
build-cpu/ncclz run scenarios/whatif-1024.json --out out/whatif-1024
build-cpu/ncclz run scenarios/tune-default.json --out out/tune-default
NCCLZ=build-cpu/ncclz scripts/codec_report.sh "$DATA" out/codec-report
echo "ncclz: reports in out/whatif-1024/index.html, out/tune-default/index.html, out/codec-report/index.html" >&2
