#!/usr/bin/env bash
# The tests: installs what is missing, builds with -Werror, runs every CTest test.
# GPU tests are built when nvcc is present and skip with a message where there is no GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
ncclz_install_deps
ncclz_build build -DNCCLZ_WERROR=ON
rc=0
ctest --test-dir build --output-on-failure -j"$(nproc)" || rc=$?
# CTest prints "Skipped" without the reason: each skipped test's "SKIP: ..." line from its log.
awk '/^[0-9]+\/[0-9]+ Testing: / { name = $3 } /^SKIP: / { print "skipped " name ": " substr($0, 7) }' \
  build/Testing/Temporary/LastTest.log >&2 || true
exit "$rc"
