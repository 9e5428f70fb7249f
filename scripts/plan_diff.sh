#!/usr/bin/env bash
# Writes everything a Plan decides, for the shipped scenarios and variants covering each step kind, into OUTDIR:
# `simulate --json` (analytical and flow), the Chrome and Kineto traces of steps 0..2 and the NCCL launch program
# (`run --backend nccl --dry-run`, where the build has it). Run it with the commsim of two commits and compare:
#   scripts/plan_diff.sh build-before/cli/commsim /tmp/before
#   scripts/plan_diff.sh build/cli/commsim /tmp/after
#   diff -r /tmp/before /tmp/after && echo identical
set -euo pipefail
commsim=$(realpath "$1")
out=$2
mkdir -p "$out"
cd "$(dirname "$0")/.."

base=scenarios/resnet50-cloud-p3.json
cases=()
for f in scenarios/*.json; do
  grep -q '"variants"' "$f" || cases+=("$(basename "$f" .json)|$f|")
done
# The step kinds and options the shipped scenarios leave out, on one of them.
cases+=(
  "no-fusion|$base|strategy.fusion={\"mode\":\"none\"}"
  "index-fusion|$base|strategy.fusion={\"mode\":\"index\",\"indices\":[20,100]}"
  "hierarchy|$base|strategy.use_hierarchical_allreduce=true;strategy.hierarchical_allreduce_leaders=4"
  "hierarchy-groups|$base|strategy.use_hierarchical_allreduce=true;strategy.hierarchical_allreduce_group_size=4"
  "fp16-2streams|$base|strategy.comm_dtype=fp16;strategy.nccl_comm_num=2"
  "dgc|$base|strategy.dgc={\"rampup_begin_step\":2,\"rampup_step\":4,\"sparsity\":[0.75,0.9,0.99,0.999]}"
  "dgc-bf16|$base|strategy.comm_dtype=bf16;strategy.dgc={\"rampup_begin_step\":0,\"rampup_step\":1,\"sparsity\":[0.999]}"
  "localsgd|$base|strategy.localsgd={\"k_steps\":4,\"begin_step\":2}"
  "localsgd-fp16|$base|strategy.comm_dtype=fp16;strategy.localsgd={\"k_steps\":3,\"begin_step\":0}"
  "sharded2|$base|strategy.sharding={\"stage\":2}"
  "sharded3-prefetch|$base|strategy.nccl_comm_num=2;strategy.sharding={\"stage\":3,\"prefetch_buckets\":1}"
  "stragglers|$base|strategy.stragglers={\"compute_cv\":0.05,\"slow_ranks\":{\"3\":1.3},\"seed\":7}"
  "stragglers-localsgd|$base|strategy.localsgd={\"k_steps\":4,\"begin_step\":0};strategy.stragglers={\"compute_cv\":0.1}"
)
for c in "${cases[@]}"; do
  IFS='|' read -r name file sets <<<"$c"
  args=()
  IFS=';' read -ra list <<<"$sets"
  for s in "${list[@]}"; do args+=(--set "$s"); done
  for fidelity in analytical flow; do
    "$commsim" simulate "$file" "${args[@]}" --fidelity $fidelity --json "$out/$name.$fidelity.json" \
      --trace "$out/$name.$fidelity.trace.json" >/dev/null
  done
  "$commsim" simulate "$file" "${args[@]}" --trace "$out/$name.kineto.json" --trace-format kineto >/dev/null
  if "$commsim" run --help 2>/dev/null | grep -q -- --dry-run; then
    "$commsim" run --backend nccl --dry-run "$file" "${args[@]}" >"$out/$name.nccl.txt" 2>&1 || true
  fi
done
echo "$(ls "$out" | wc -l) files in $out"
