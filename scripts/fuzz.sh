#!/usr/bin/env bash
# Fuzzes commsim's input loaders with libFuzzer (harnesses in fuzz/), in its own build directory build-fuzz/ (clang,
# ASan, UBSan), so the main build is untouched.
#   scripts/fuzz.sh                 30 s per loader: what scripts/test.sh runs
#   scripts/fuzz.sh 600             10 minutes per loader (the long run the README reports)
#   scripts/fuzz.sh 600 scenario    one loader: topology, scenario, model, suite, baseline, compare, nccl_log,
#                                   trace, interference
# COMMSIM_FUZZ_NICE=19 runs the fuzzers at the lowest CPU priority (a shared machine).
# Seeds are the shipped files (gathered into build-fuzz/seeds/LOADER); what libFuzzer adds goes to build-fuzz/corpus/LOADER and a crashing
# input to build-fuzz/crashes/LOADER/. Exits 1 if any loader crashed, leaked, hung (> 10 s) or ran out of memory.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
seconds=${1:-30}
shift || true
loaders=("$@")
((${#loaders[@]})) || loaders=(topology scenario model suite baseline compare nccl_log trace interference)

# What each loader starts from: the shipped files of its kind and the bad-input catalogue's files.
seeds_topology=(topologies validate/suites/topologies tests/data/astra-fc8.json tests/data/star8.json
                tests/data/two-level-2x4.json tests/data/bad)
seeds_scenario=(scenarios/resnet50-dgx-a100.json scenarios/gpt3-175b-dgx-a100.json scenarios/resnet50-cloud-p3.json
                scenarios/emulated-tiny.json scenarios/emulated-resnet50-1gbe.json validate/suites/scenarios tests/data/bad)
seeds_model=(scenarios/models validate/suites/models tests/data/training tests/data/bad)
seeds_suite=(validate/suites/smoke.json validate/suites/emulated.json tests/data/bad)
seeds_baseline=(baselines tests/data/bad)
seeds_compare=(scenarios/demo-techniques.json tests/data/bad)
seeds_nccl_log=(tests/data/nccl-tuning)
seeds_trace=(tests/data/trace)
seeds_interference=(reports/gpu/h100/interference.json)
# The seeds' file names and the JSON dictionary: NCCL logs, and no dictionary, for the log reader.
pattern_nccl_log='*.log' no_dict_nccl_log=1

cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ -DCOMMSIM_FUZZ=ON \
  -DBUILD_TESTING=OFF -DCOMMSIM_MPI=OFF -DCOMMSIM_NCCL=OFF ${COMMSIM_FUZZ_CMAKE_ARGS:-} >/dev/null
cmake --build build-fuzz -j "$(nproc)" --target "${loaders[@]/#/fuzz_}"

failed=()
for loader in "${loaders[@]}"; do
  seeds_var="seeds_${loader}[@]"
  corpus=build-fuzz/corpus/$loader crashes=build-fuzz/crashes/$loader seeds=build-fuzz/seeds/$loader
  rm -rf "$seeds"
  mkdir -p "$corpus" "$crashes" "$seeds"
  pattern_var="pattern_${loader}" no_dict_var="no_dict_${loader}"
  dict=(-dict=fuzz/json.dict)
  [[ -n "${!no_dict_var:-}" ]] && dict=()
  find "${!seeds_var}" -name "${!pattern_var:-*.json}" -type f -exec cp -t "$seeds" --backup=numbered {} +
  echo "fuzz: $loader for ${seconds} s" >&2
  # The harness's scratch files: libFuzzer ends with _Exit, which skips their removal at exit, so this script does it.
  scratch=build-fuzz/tmp/$loader
  mkdir -p "$scratch"
  if ! TMPDIR="$PWD/$scratch" nice -n "${COMMSIM_FUZZ_NICE:-0}" "build-fuzz/fuzz/fuzz_$loader" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=131072 \
      "${dict[@]}" -print_final_stats=1 -artifact_prefix="$crashes/" "$corpus" "$seeds" \
      >"build-fuzz/fuzz-$loader.log" 2>&1; then
    failed+=("$loader")
    grep -m1 -E "ERROR|SUMMARY|deadly|timeout|out-of-memory" "build-fuzz/fuzz-$loader.log" >&2 || true
  fi
  rm -rf "$scratch"
  grep -E "^stat::number_of_executed_units|^stat::new_units_added" "build-fuzz/fuzz-$loader.log" | tr '\n' ' ' >&2
  echo >&2
done
if ((${#failed[@]})); then
  echo "fuzz: ${failed[*]} failed: inputs in build-fuzz/crashes/, logs in build-fuzz/fuzz-LOADER.log" >&2
  exit 1
fi
echo "fuzz: ${loaders[*]}: no crash in ${seconds} s each" >&2
