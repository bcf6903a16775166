#!/usr/bin/env bash
# Installs the Debian 12 packages ncclz needs (apt-get when root; otherwise prints the exact line).
# Sourced by scripts/main.sh and scripts/test.sh.
NCCLZ_DEB_PACKAGES="build-essential cmake pkg-config clang libcjson-dev libsimgrid-dev libopenmpi-dev openmpi-bin gnuplot-nox jq"

ncclz_install_deps() {
  local missing=()
  for p in $NCCLZ_DEB_PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -eq 0 ]; then
    echo "ncclz: installing ${missing[*]}" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "ncclz: missing Debian packages; run:" >&2
    echo "  sudo apt-get install -y ${missing[*]}" >&2
    return 1
  fi
}

# Configures and builds into $1 with extra cmake arguments after it.
ncclz_build() {
  local dir=$1; shift
  cmake -S "$(dirname "${BASH_SOURCE[0]}")/.." -B "$dir" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null &&
    cmake --build "$dir" -j"$(nproc)"
}
