#!/usr/bin/env bash
# The whole test suite: builds commsim (installing what is missing), then runs every test with ctest.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
COMMSIM_CMAKE_ARGS="-DCOMMSIM_WERROR=ON ${COMMSIM_CMAKE_ARGS:-}" scripts/bootstrap.sh
ctest --test-dir build --output-on-failure -j 2 --timeout 600
# The loaders under libFuzzer, 30 s each, in their own build (build-fuzz), when clang and its libFuzzer runtime are
# here (COMMSIM_FUZZ=1 scripts/bootstrap.sh installs them).
if command -v clang++ >/dev/null && [ -f "$(clang++ --print-runtime-dir)/libclang_rt.fuzzer-$(uname -m).a" ]; then
  scripts/fuzz.sh 30
else
  echo "commsim: clang or libFuzzer missing: fuzzing skipped (COMMSIM_FUZZ=1 scripts/bootstrap.sh installs them)" >&2
fi
