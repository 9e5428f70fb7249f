#!/usr/bin/env bash
# The whole ctest suite under AddressSanitizer and UndefinedBehaviorSanitizer: CI's second job (README
# "Reliability"). Builds ./build-asan (RelWithDebInfo, -fsanitize=address,undefined) and runs every test there; a
# report aborts the process that made it and so fails its test: a green run means zero reports.
# LeakSanitizer is off: Open MPI's plugins leak at exit and are unloaded by then, so their leaks cannot be told from
# ours by any suppression; out-of-bounds, use-after-free and undefined behaviour are all still fatal.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# Exported before building: gtest_discover_tests runs the test executables (some under mpiexec) at build time.
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
# Warnings are the first job's business (scripts/test.sh, -Werror): with the sanitizers GCC 12 reports
# maybe-uninitialized inside libstdc++'s <regex>, where nothing is.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOMMSIM_WERROR=OFF \
  -DCMAKE_CXX_FLAGS='-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined' \
  ${COMMSIM_CMAKE_ARGS:-} >/dev/null
cmake --build build-asan -j "$(nproc)"
ctest --test-dir build-asan --output-on-failure -j 2 --timeout 1200
