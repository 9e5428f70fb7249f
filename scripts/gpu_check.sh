#!/usr/bin/env bash
# The NCCL backend's checks on a machine with one or more NVIDIA GPUs, in one run whose every output lands in OUT_DIR:
#   1. the GPU, its driver and the NCCL the program loads;
#   2. the backend's GPU tests (build/hw/nccl/commsim_nccl_tests: each strategy end to end with the check pass, and
#      the microbenchmark's check of every collective);
#   3. `commsim bench --backend nccl` (nccl-tests' all_reduce_perf table, JSON for calibrate);
#   4. the single-GPU scenario (tests/data/gpu/resnet50-one-h100.json) with each strategy, predicted
#      (`commsim simulate --json`) and measured (`commsim run --backend nccl --check --json`) side by side
#      (scripts/gpu_compare.py writes the table);
#   5. a measured run's Kineto trace, read back by `commsim model from-trace`.
# Usage: scripts/gpu_check.sh [BUILD_DIR] [OUT_DIR]   (defaults: build, gpu-check)
# The build must have the NCCL backend (configure with -DCOMMSIM_NCCL=ON). When libnccl.so.2 is not where the build
# found it, NCCL_LIB_DIR names its folder; otherwise the script looks in the CUDA toolkit and in Python's NCCL wheel.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build=${1:-build}
out=${2:-gpu-check}
mkdir -p "$out"
commsim=$build/cli/commsim
status=0

note() { printf '== %s\n' "$*" | tee -a "$out/summary.txt"; }

nccl_dirs() {
  [[ -n "${NCCL_LIB_DIR:-}" ]] && echo "$NCCL_LIB_DIR"
  echo /usr/local/cuda/lib64 /usr/lib/x86_64-linux-gnu
  python3 -c 'import nvidia, os; [print(os.path.join(p, "nccl", "lib")) for p in nvidia.__path__]' 2>/dev/null
}
if ldd "$commsim" | grep -q 'libnccl.so.2 => not found'; then
  for dir in $(nccl_dirs); do
    if [[ -e $dir/libnccl.so.2 ]]; then
      export LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
      break
    fi
  done
fi

note "GPU, driver, libraries"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee -a "$out/summary.txt"
ldd "$commsim" | grep -E 'nccl|cudart' | tee -a "$out/summary.txt"

note "GPU tests (commsim_nccl_tests)"
timeout 150 "$build/hw/nccl/commsim_nccl_tests" --gtest_output="xml:$out/nccl_tests.xml" >"$out/nccl_tests.log" 2>&1 ||
  status=1
grep -E '^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \]|tests ran' "$out/nccl_tests.log" | tee -a "$out/summary.txt"

note "bench --backend nccl (allreduce, 8 B .. 1 GiB)"
NCCL_DEBUG=INFO timeout 60 "$commsim" bench --backend nccl --max-bytes 1G --json "$out/bench.json" \
  >"$out/bench.log" 2>&1 || status=1
grep -E 'NCCL version|^#|^ +[0-9]' "$out/bench.log" | grep -v 'NCCL INFO' | tee -a "$out/summary.txt"
grep -m1 'NCCL version' "$out/bench.log" | tee -a "$out/summary.txt"

note "scenario runs: predicted and measured"
scenario=tests/data/gpu/resnet50-one-h100.json
# name|--set field|--set field...
strategies=(
  'plain'
  'fp16-2streams|strategy.nccl_comm_num=2|strategy.comm_dtype=fp16'
  'hierarchical-bf16|strategy.use_hierarchical_allreduce=true|strategy.comm_dtype=bf16'
  'dgc|strategy.dgc={"rampup_begin_step":0,"rampup_step":1,"sparsity":[0.99]}'
  'localsgd|strategy.localsgd={"k_steps":2,"begin_step":0}'
  'zero3-fp16|strategy.sharding={"stage":3}|strategy.comm_dtype=fp16'
  'fp8|strategy.comm_dtype=fp8'
)
for entry in "${strategies[@]}"; do
  IFS='|' read -r -a fields <<<"$entry"
  name=${fields[0]}
  sets=()
  for field in "${fields[@]:1}"; do sets+=(--set "$field"); done
  "$commsim" simulate "$scenario" "${sets[@]}" --json "$out/predicted-$name.json" >/dev/null 2>"$out/predicted-$name.err" ||
    status=1
  timeout 60 "$commsim" run --backend nccl "$scenario" "${sets[@]}" --warmup 2 --check \
    --json "$out/measured-$name.json" >"$out/measured-$name.log" 2>&1 || status=1
  tail -n 1 "$out/measured-$name.log" | sed "s/^/$name: /" | tee -a "$out/summary.txt"
done
python3 scripts/gpu_compare.py "$out" | tee -a "$out/summary.txt"

note "a measured run's Kineto trace (commsim model from-trace reads it back)"
timeout 60 "$commsim" run --backend nccl "$scenario" --steps 3 --trace "$out/measured-kineto.json" \
  --trace-format kineto >"$out/measured-kineto.log" 2>&1 || status=1
"$commsim" model from-trace "$out/measured-kineto.json" --batch 64 -o "$out/measured-kineto-model.json" 2>&1 |
  tee -a "$out/summary.txt" || status=1
exit $status
