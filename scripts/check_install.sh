#!/usr/bin/env bash
# `cmake --install` of a build into a fresh prefix, then what a user of the installed tree does:
# ncclz --version, the exported symbols, the examples built out of tree with find_package(ncclz)
# and with pkg-config, and run (each checks its own result: error within the bound).
# usage: scripts/check_install.sh BUILD_DIR [WORK_DIR]   (CC and CFLAGS are used for the examples)
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 BUILD_DIR [WORK_DIR]" >&2; exit 2; }
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd)
work=${2:-$(mktemp -d)}
prefix=$work/prefix
rm -rf "$prefix" "$work/examples-cmake" "$work/examples-pc"
mkdir -p "$work/examples-pc"
fail() { echo "FAIL: $*" >&2; exit 1; }

echo "== cmake --install $build --prefix $prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null
for f in bin/ncclz include/ncclz/codecs.h include/ncclz/exec.h include/ncclz/version.h; do
  [ -e "$prefix/$f" ] || fail "$f is not installed"
done
lib=$(find "$prefix" -name libncclz.so | head -1)
pc=$(find "$prefix" -name ncclz.pc | head -1)
[ -n "$lib" ] && [ -n "$pc" ] && [ -n "$(find "$prefix" -name ncclzConfigVersion.cmake)" ] ||
  fail "libncclz.so, ncclz.pc or the CMake package is missing"
# No installed header may include a header that is not installed.
for inc in $(sed -n 's/^#include "\(.*\)".*/\1/p' "$prefix"/include/ncclz/*.h | sort -u); do
  [ -e "$prefix/include/$inc" ] || fail "an installed header includes \"$inc\", which is not installed"
done

export PKG_CONFIG_PATH=$(dirname "$pc")
version=$(pkg-config --modversion ncclz)
header=$(sed -n 's/^#define NCCLZ_VERSION_STRING "\(.*\)"/\1/p' "$prefix/include/ncclz/version.h")
[ "$version" = "$header" ] || fail "ncclz.pc says $version, version.h says $header"
got=$("$prefix/bin/ncclz" --version)
case "$got" in "ncclz $version "*) echo "$got" ;; *) fail "ncclz --version: '$got', expected ncclz $version" ;; esac

echo "== exported symbols"
"$src/tests/exported_symbols.sh" "$prefix" "$src"

echo "== examples with find_package(ncclz)"
cmake -S "$src/examples" -B "$work/examples-cmake" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/examples-cmake" -j2 >/dev/null
ex=$work/examples-cmake
"$ex/codec_roundtrip"
"$ex/allreduce_threads"
if [ -x "$ex/allreduce_mpi" ]; then
  # Two processes, the MPI transport: the multi-process path a cluster job takes.
  OMPI_MCA_rmaps_base_oversubscribe=1 mpirun --allow-run-as-root --oversubscribe -np 2 "$ex/allreduce_mpi"
fi
if [ -x "$ex/allreduce_nccl" ]; then
  rc=0
  "$ex/allreduce_nccl" || rc=$?
  [ $rc = 0 ] || [ $rc = 77 ] || fail "allreduce_nccl exited $rc"
fi

echo "== codec_roundtrip with pkg-config"
# shellcheck disable=SC2046,SC2086
${CC:-cc} ${CFLAGS:-} -std=c11 -Wall -Wextra -Werror -o "$work/examples-pc/codec_roundtrip" "$src/examples/codec_roundtrip.c" \
  $(pkg-config --cflags --libs ncclz) -lm -Wl,-rpath,"$(pkg-config --variable=libdir ncclz)"
out=$("$work/examples-pc/codec_roundtrip")
echo "$out"
case "$out" in "ncclz $version: "*) ;; *) fail "the pkg-config build reports another version: $out" ;; esac
if command -v "${CXX:-c++}" >/dev/null; then
  echo "== the installed headers as C++"
  for h in "$prefix"/include/ncclz/*.h; do echo "#include \"ncclz/$(basename "$h")\""; done >"$work/examples-pc/all.cpp"
  # shellcheck disable=SC2046
  "${CXX:-c++}" -std=c++17 -Wall -Wextra -Werror -fsyntax-only $(pkg-config --cflags ncclz) "$work/examples-pc/all.cpp"
fi
echo "ok: installed tree in $prefix works (library $version)"
