#!/usr/bin/env bash
# Counts the sm_90 SASS instructions of one CUDA source's kernels, and their opcode mix: how a
# kernel change moves its instruction count, on a machine without a GPU.
#   scripts/sass_count.sh SOURCE.cu [KERNEL_REGEX]    (from the repository root)
# Compiles SOURCE with the codecs' flags (-O3 -fmad=false, the include paths of build-cuda/ or
# $BUILD) and dumps it with cuobjdump: the toolkit's, else $CUOBJDUMP, else one taken from
# NVIDIA's nvidia-cuda-cuobjdump and -nvdisasm wheels into ~/.cache/ncclz-cuobjdump (pip and network
# needed).
# Prints "instructions calls kernel" a kernel (calls: CALL.REL, the out-of-line subroutines such as
# a 64-bit division); with KERNEL_REGEX (a mangled name's part, e.g. 'k_qsgd_fusedILi4EaE') also
# the opcode mix of the kernels that match.
set -euo pipefail
src=${1:?usage: scripts/sass_count.sh SOURCE.cu [KERNEL_REGEX]}
pick=${2:-}
build=${BUILD:-build-cuda}
[ -f "$src" ] || { echo "sass_count: no such file: $src" >&2; exit 1; }
[ -d "$build/include" ] || { echo "sass_count: $build/include missing: configure a CUDA build first (BUILD=dir)" >&2; exit 1; }

find_cuobjdump() {
  for c in "${CUOBJDUMP:-}" "$(command -v cuobjdump || true)" "$(dirname "$(command -v nvcc)")/cuobjdump"; do
    [ -n "$c" ] && [ -x "$c" ] && { echo "$c"; return; }
  done
  local cache=$HOME/.cache/ncclz-cuobjdump
  if ! [ -x "$cache/nvidia/cu13/bin/cuobjdump" ]; then # it runs nvdisasm, from its own wheel
    mkdir -p "$cache"
    python3 -m pip download -q --no-deps -d "$cache" nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm >&2
    (cd "$cache" && for w in nvidia_cuda_*.whl; do python3 -m zipfile -e "$w" .; done)
    chmod +x "$cache"/nvidia/cu13/bin/*
  fi
  echo "$cache/nvidia/cu13/bin/cuobjdump"
}
dump=$(find_cuobjdump)
export NVDISASM_PATH=${NVDISASM_PATH:-$(dirname "$dump")}
obj=$(mktemp --suffix=.o)
trap 'rm -f "$obj" "$obj.sass"' EXIT
nvcc -x cu -c "$src" -o "$obj" -O3 -DNDEBUG -fmad=false -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L \
  -I"$build/include" -Iinclude --generate-code=arch=compute_90,code=sm_90
"$dump" -sass "$obj" > "$obj.sass"
awk '/Function : / { name = $3; next }
  /\/\*[0-9a-f]+\*\/ / && name != "" { n[name]++; if ($0 ~ /CALL\.REL/) c[name]++ }
  END { for (k in n) printf "%7d %4d %s\n", n[k], c[k] + 0, k }' "$obj.sass" | sort -k3
[ -z "$pick" ] && exit 0
echo "opcode mix of /$pick/:"
awk -v pick="$pick" '/Function : / { on = $3 ~ pick; next }
  on && /\/\*[0-9a-f]+\*\/ / {
    op = $0; sub(/^[ \t]*\/\*[0-9a-f]+\*\/[ \t]+/, "", op); sub(/^@!?U?P[T0-9]+[ \t]+/, "", op); sub(/[ ;].*/, "", op)
    mix[op]++
  }
  END { for (o in mix) printf "%7d %s\n", mix[o], o }' "$obj.sass" | sort -rn
