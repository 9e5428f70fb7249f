#!/usr/bin/env bash
# `cmake --install` into a temporary prefix, then README examples run by the installed commsim from an unrelated
# directory (so the data files must come from PREFIX/share/commsim, sim/core/data_path.hpp). The prefix and the
# working directory are removed on every exit path.
#   install_test.sh BUILD_DIR
set -euo pipefail
build_dir=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/commsim-install-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
cmake --install "$build_dir" --prefix "$prefix" >/dev/null
test -x "$prefix/bin/commsim"
for f in topologies/dgx-a100.json scenarios/resnet50-cloud-p3.json scenarios/models/resnet50.json \
         baselines/ci.json validate/suites/smoke.json schemas/scenario.schema.json; do
  test -f "$prefix/share/commsim/$f" || { echo "not installed: share/commsim/$f"; exit 1; }
done
mkdir "$work/elsewhere"
cd "$work/elsewhere"
unset COMMSIM_DATA_DIR
# README "Examples on the shipped files", as written there.
"$prefix/bin/commsim" collective --topology topologies/dgx-a100.json --nodes 2 --sizes 8:1G >collective.txt
grep -q '^# Avg bus bandwidth' collective.txt || { echo "collective: no nccl-tests footer"; exit 1; }
"$prefix/bin/commsim" simulate scenarios/resnet50-cloud-p3.json --set strategy.nccl_comm_num=2 --set nodes=16 >simulate.txt
grep -q 'step time' simulate.txt || { echo "simulate: no step time"; exit 1; }
mkdir out
"$prefix/bin/commsim" simulate scenarios/resnet50-dgx-a100.json --trace out/step.json >/dev/null
test -s out/step.json
# A relative path inside a file is looked up beside it too: the compare file names its scenario that way.
"$prefix/bin/commsim" compare scenarios/demo-techniques.json >compare.txt
grep -q '^baseline ' compare.txt || { echo "compare: its scenario was not found beside it"; exit 1; }
# The rule's order: the current directory, then $COMMSIM_DATA_DIR, then the install. dgx-a100.json with 3 nodes
# (24 ranks) instead of the shipped 4 (32 ranks) tells which file was read.
mkdir -p "$work/data/topologies" "$work/empty"
sed 's/"nodes": 4/"nodes": 3/' "$prefix/share/commsim/topologies/dgx-a100.json" >"$work/data/topologies/dgx-a100.json"
cd "$work/empty"
"$prefix/bin/commsim" collective --topology topologies/dgx-a100.json --sizes 1M | grep -q ', 32 ranks' ||
  { echo "the installed topologies/dgx-a100.json was not used"; exit 1; }
COMMSIM_DATA_DIR=$work/data "$prefix/bin/commsim" collective --topology topologies/dgx-a100.json --sizes 1M |
  grep -q ', 24 ranks' || { echo "COMMSIM_DATA_DIR was not looked at before the install"; exit 1; }
cd "$work/data"
COMMSIM_DATA_DIR=$prefix/share/commsim "$prefix/bin/commsim" collective --topology topologies/dgx-a100.json --sizes 1M |
  grep -q ', 24 ranks' || { echo "the current directory was not looked at first"; exit 1; }
echo "installed commsim ran the README examples from another directory"
