#!/usr/bin/env bash
# The tests: installs what is missing, builds with -Werror, runs every CTest test.
# GPU tests are built when nvcc is present and skip with a message where there is no GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
ncclz_install_deps
ncclz_build build -DNCCLZ_WERROR=ON
ctest --test-dir build --output-on-failure -j"$(nproc)"
