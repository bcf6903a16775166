#!/usr/bin/env bash
# The installed libncclz exports exactly the public API:
#  - every dynamic symbol it defines is ncclz + capital letter and is declared in an installed header;
#  - every function the installed headers declare is exported, except, in a build without CUDA,
#    the GPU-only ones (defined in a .cu file of the source tree).
# usage: exported_symbols.sh PREFIX SOURCE_ROOT   (PREFIX: a `cmake --install` tree with ncclz.pc)
set -euo pipefail
prefix=$1 src=$2
lib=$(find "$prefix" -name libncclz.so | head -1)
pc=$(find "$prefix" -name ncclz.pc | head -1)
[ -n "$lib" ] && [ -n "$pc" ] || { echo "FAIL: no libncclz.so / ncclz.pc under $prefix"; exit 1; }
pcdir=$(dirname "$pc")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

nm -D --defined-only "$lib" | awk '{print $NF}' | sort -u >"$tmp/exported"
# Declarations: the installed headers preprocessed with the build's flags, one statement a line,
# names followed by "(" outside static inline functions and function-pointer members.
for h in "$prefix"/include/ncclz/*.h; do echo "#include \"ncclz/$(basename "$h")\""; done >"$tmp/all.c"
# shellcheck disable=SC2046
cc -E -P $(PKG_CONFIG_PATH=$pcdir pkg-config --cflags ncclz) "$tmp/all.c" | tr '\n' ' ' |
  sed 's/;/;\n/g; s/{/{\n/g; s/}/}\n/g' | grep -v '^[[:space:]]*static' |
  grep -oE '\bncclz[A-Z][A-Za-z0-9_]*[[:space:]]*\([^*]' | sed -E 's/[[:space:]]*\(.$//' | sort -u >"$tmp/declared"

n=$(wc -l <"$tmp/exported")
bad=$(grep -vE '^ncclz[A-Z][A-Za-z0-9_]*$' "$tmp/exported" || true)
[ -z "$bad" ] || { echo "FAIL: exported symbols outside the ncclz* API:"; echo "$bad" | head -20; fail=1; }
undeclared=$(comm -23 "$tmp/exported" "$tmp/declared")
[ -z "$undeclared" ] || { echo "FAIL: exported but declared in no installed header:"; echo "$undeclared"; fail=1; }
cuda=0
[ -f "$prefix/include/ncclz/codecs_cuda.h" ] && cuda=1
for s in $(comm -13 "$tmp/exported" "$tmp/declared"); do
  if [ $cuda = 0 ] && grep -rqE "^[a-zA-Z].*\b$s\(" --include='*.cu' "$src"; then continue; fi
  echo "FAIL: $s is declared in an installed header but not exported"
  fail=1
done
[ $fail = 0 ] && echo "ok: $n exported symbols, all ncclz* and declared in include/ncclz/ ($(wc -l <"$tmp/declared") declared)"
exit $fail
