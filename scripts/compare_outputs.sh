#!/usr/bin/env bash
# Writes what `commsim simulate --json` gives for every shipped scenario (as shipped, and with each generic algorithm
# on a topology without a library model, where `auto` is the argmin of the closed forms), and `commsim recommend`'s
# stdout for two of them, into DIR. Run it with the binary before and after a change and `diff -r` the two folders
# to show that a change which should not move a prediction moves none. It runs scripts/plan_diff.sh into DIR/plans.
# usage: scripts/compare_outputs.sh COMMSIM DIR   (from the source root)
set -uo pipefail
commsim=$1
out=$2
mkdir -p "$out"
run() {  # name, then the command's arguments: stdout, stderr and exit status all kept
  local name=$1
  shift
  "$commsim" "$@" > "$out/$name.out" 2> "$out/$name.err"
  echo "exit $?" >> "$out/$name.err"
}
for scenario in scenarios/*.json; do
  name=$(basename "$scenario" .json)
  run "$name.simulate" simulate "$scenario" --json "$out/$name.simulate.json"
  for algo in auto tree hd 2d-ring ring; do
    for nodes in 4 64; do
      run "$name.$algo.$nodes" simulate "$scenario" --set topology=../topologies/emulated-cpu-cluster.json \
        --set nodes=$nodes --set strategy.algorithm=$algo --json "$out/$name.$algo.$nodes.json"
    done
  done
  run "$name.hierarchical" simulate "$scenario" --set topology=../topologies/emulated-cpu-cluster.json \
    --set nodes=64 --set strategy.use_hierarchical_allreduce=true --json "$out/$name.hierarchical.json"
done
# recommend on an NCCL topology and on one with the generic closed forms (the search's speed on stderr is left out).
"$commsim" recommend scenarios/resnet50-dgx-a100.json --jobs 1 > "$out/resnet50-dgx-a100.recommend.txt" 2> /dev/null
"$commsim" recommend scenarios/emulated-tiny.json --jobs 1 > "$out/emulated-tiny.recommend.txt" 2> /dev/null
# Everything a Plan decides, over the step kinds the shipped scenarios leave out (traces, NCCL launch program too).
"$(dirname "$0")/plan_diff.sh" "$commsim" "$out/plans" > /dev/null
