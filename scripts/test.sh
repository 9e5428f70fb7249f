#!/usr/bin/env bash
# The whole test suite: builds commsim (installing what is missing), then runs every test with ctest.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
COMMSIM_CMAKE_ARGS="-DCOMMSIM_WERROR=ON ${COMMSIM_CMAKE_ARGS:-}" scripts/bootstrap.sh
ctest --test-dir build --output-on-failure -j 2 --timeout 600
