#!/usr/bin/env bash
# The whole test suite: installs what is missing (clang, its libFuzzer runtime and clang-format too), builds commsim,
# checks that every C++ file is formatted by .clang-format and that the sources repeat themselves no more than the
# budget in scripts/check_duplicates.py, runs every test with ctest, then the loaders under libFuzzer for 30 s each
# in their own build (build-fuzz).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
COMMSIM_FUZZ=1 COMMSIM_CMAKE_ARGS="-DCOMMSIM_WERROR=ON ${COMMSIM_CMAKE_ARGS:-}" scripts/bootstrap.sh
scripts/check_format.sh
python3 scripts/check_duplicates.py
ctest --test-dir build --output-on-failure -j 2 --timeout 600
scripts/fuzz.sh 30
