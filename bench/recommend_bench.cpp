// Speed of `auto` and of `commsim recommend` at 4096 GPUs (BENCHMARKS.md has the figures and the command):
//  (e) choose_algorithm for one bucket of the GPT-3-shaped scenario (25 MiB allreduce, dgx-a100's 8 channels) over
//      512 dgx-a100 nodes with the generic closed forms (the file's NCCL block removed: NCCL's own choice is priced by
//      its model and is not what this measures): cold (a fresh topology, nothing cached: hop classes found from one
//      node and one column, five algorithms priced), a new size (hop classes known, the five closed forms priced
//      afresh) and warm (the choice answered from the cache); cold and a new size also at 128 nodes, where the
//      busiest-link bound and the steps' link shares route every schedule's hops and the tree walks its hops;
//  (f) the same cold choice by the reference that visits every hop of every group, at 512 and 128 nodes;
//  (g) the tuner over the whole default grid (fusion x streams x collective) of scenarios/gpt3-175b-dgx-a100.json at
//      512 nodes on one thread, with the NCCL model (the file as shipped) and with the generic closed forms; the
//      counter configs_per_s is what `commsim recommend` prints.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "explore/grid.hpp"
#include "explore/tuner.hpp"
#include "sim/collective/closed_form_reference.hpp"
#include "sim/collective/collective.hpp"
#include "sim/core/json_fields.hpp"
#include "sim/topology/topology.hpp"

namespace commsim {
namespace {

const std::string kSource = COMMSIM_SOURCE_DIR;
constexpr int kNodes = 512;  // 4096 GPUs

std::unique_ptr<Topology> generic_dgx_a100(int nodes = kNodes) {
  std::unique_ptr<Topology> t = load_topology(kSource + "/topologies/dgx-a100.json", nodes);
  t->set_library(CommLibrary{});  // a new instance: nothing of it is cached
  return t;
}

CollectiveSpec bucket(const Topology& t) {
  CollectiveSpec s;
  s.op = Collective::AllReduce;
  s.algorithm = Algorithm::Auto;
  s.bytes = Bytes{25} << 20;
  s.channels = t.default_channels();
  s.ranks_per_node = t.ranks_per_node();
  s.reduce_Bps = 2.039e12 / 3;  // A100-SXM-80GB memory bandwidth / 3, as the plan prices reductions
  return s;
}

// Arg: nodes. At 128 (1024 GPUs) halving-doubling's, the hierarchical allreduce's and the 2D ring's steps route
// every hop to share links (step_link_shares.hpp); at 512 they price a rank's channel share alone.
void BM_ChooseAlgorithmCold(benchmark::State& state) {
  for (auto _ : state) {
    state.PauseTiming();
    const std::unique_ptr<Topology> t = generic_dgx_a100(static_cast<int>(state.range(0)));
    const CollectiveSpec s = bucket(*t);
    state.ResumeTiming();
    benchmark::DoNotOptimize(choose_algorithm(s, *t));
  }
}
BENCHMARK(BM_ChooseAlgorithmCold)->ArgName("nodes")->Arg(512)->Arg(128)->Unit(benchmark::kMicrosecond);

void BM_ChooseAlgorithmWarm(benchmark::State& state) {
  const std::unique_ptr<Topology> t = generic_dgx_a100();
  const CollectiveSpec s = bucket(*t);
  choose_algorithm(s, *t);
  for (auto _ : state) benchmark::DoNotOptimize(choose_algorithm(s, *t));
}
BENCHMARK(BM_ChooseAlgorithmWarm)->Unit(benchmark::kMicrosecond);

// A bucket of a size not seen yet on a topology whose hop classes are known: the five closed forms priced afresh.
// Arg: nodes (at 128 the busiest-link bound generates and routes every candidate's schedule for the size).
void BM_ChooseAlgorithmNewSize(benchmark::State& state) {
  const std::unique_ptr<Topology> t = generic_dgx_a100(static_cast<int>(state.range(0)));
  CollectiveSpec s = bucket(*t);
  choose_algorithm(s, *t);
  for (auto _ : state) {
    ++s.bytes;
    benchmark::DoNotOptimize(choose_algorithm(s, *t));
  }
}
BENCHMARK(BM_ChooseAlgorithmNewSize)->ArgName("nodes")->Arg(512)->Arg(128)->Unit(benchmark::kMicrosecond);

void BM_ChooseAlgorithmFullWalk(benchmark::State& state) {
  const std::unique_ptr<Topology> t = generic_dgx_a100(static_cast<int>(state.range(0)));
  const CollectiveSpec s = bucket(*t);
  for (auto _ : state) benchmark::DoNotOptimize(closed_form::full_walk_choose_algorithm(s, *t));
}
BENCHMARK(BM_ChooseAlgorithmFullWalk)->ArgName("nodes")->Arg(512)->Arg(128)->Unit(benchmark::kMillisecond);

// Arg 0: the topology as shipped (NCCL's model); 1: its generic copy (the file without its library block).
void BM_RecommendFullGrid(benchmark::State& state) {
  const std::string scenario = kSource + "/scenarios/gpt3-175b-dgx-a100.json";
  std::vector<std::string> sets = {"nodes=" + std::to_string(kNodes)};
  const std::string generic = "/tmp/commsim-bench-dgx-a100-generic.json";
  if (state.range(0)) {
    Json doc = read_json_file(kSource + "/topologies/dgx-a100.json");
    doc.erase("library");
    std::ofstream(generic) << doc.dump();
    sets.push_back("topology=" + generic);
  }
  const Json base = explore::load_base(scenario, sets, 0);
  const SimulationRun given = simulate_document(base, scenario, Fidelity::Analytical);
  const std::vector<explore::Knob> knobs = explore::search_space(
      given.scenario, given.result.ranks, given.topology->nodes(), false, given.topology->library());
  std::size_t evaluated = 0;
  for (auto _ : state) {
    const explore::Recommendation rec =
        explore::recommend(base, scenario, knobs, Fidelity::Analytical, explore::grid_size(knobs), 1);
    evaluated = rec.evaluated;
    benchmark::DoNotOptimize(rec.ranked.data());
  }
  if (state.range(0)) std::remove(generic.c_str());
  state.counters["configs"] = static_cast<double>(evaluated);
  state.counters["configs_per_s"] = benchmark::Counter(
      static_cast<double>(evaluated) * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_RecommendFullGrid)->ArgName("generic")->Arg(0)->Arg(1)->Iterations(1)->Unit(benchmark::kSecond);

}  // namespace
}  // namespace commsim

BENCHMARK_MAIN();
