#!/usr/bin/env bash
# The whole test suite: installs what is missing (clang and its libFuzzer runtime too), builds commsim, runs every
# test with ctest, then the loaders under libFuzzer for 30 s each in their own build (build-fuzz).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
COMMSIM_FUZZ=1 COMMSIM_CMAKE_ARGS="-DCOMMSIM_WERROR=ON ${COMMSIM_CMAKE_ARGS:-}" scripts/bootstrap.sh
ctest --test-dir build --output-on-failure -j 2 --timeout 600
scripts/fuzz.sh 30
