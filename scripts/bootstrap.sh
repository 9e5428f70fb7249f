#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks, then configures and builds commsim in ./build.
# Sourced by scripts/demo.sh and scripts/test.sh; safe to run again (it only installs what is missing).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

packages=(cmake ninja-build g++ nlohmann-json3-dev libcli11-dev libgtest-dev libbenchmark-dev
          openmpi-bin libopenmpi-dev iproute2 python3 python3-jsonschema
          chromium zlib1g-dev)  # zlib: gzipped traces; the report tests render pages in headless Chromium (PNG)
# COMMSIM_FUZZ=1 (the test command): also clang and its libFuzzer runtime, for scripts/fuzz.sh, and clang-format 14,
# for scripts/check_format.sh.
[ "${COMMSIM_FUZZ:-0}" = 1 ] && packages+=(clang libclang-rt-14-dev clang-format-14)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "commsim: installing ${missing[*]}" >&2
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release ${COMMSIM_CMAKE_ARGS:-} >/dev/null
cmake --build build -j "$(nproc)"
