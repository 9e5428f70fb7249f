// Shared helpers of the simulator tests: loading fixtures, generating and simulating a collective, and walking a
// schedule's dependency DAG.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "sim/collective/collective.hpp"
#include "sim/engine/executor.hpp"
#include "sim/topology/astra_topology.hpp"
#include "sim/topology/topology.hpp"

namespace commsim::test {

// Tests run with the source root as working directory (tests/CMakeLists.txt), so these are relative paths.
inline std::string fixture(const std::string& name) { return "tests/data/" + name; }
inline std::string shipped(const std::string& name) { return "topologies/" + name + ".json"; }

inline constexpr double kUs = 1e-6;
inline constexpr double kGBps = 1e9;

// A spec with the settings of the exactness tests: one channel, given chunks, ranks_per_node from the topology.
inline CollectiveSpec make_spec(const Topology& t, Collective op, Algorithm algo, Bytes bytes, double reduce_Bps = 0,
                                int chunks = 0) {
  CollectiveSpec s;
  s.op = op;
  s.algorithm = algo;
  s.bytes = bytes;
  s.channels = 1;
  s.chunks = chunks;
  s.reduce_Bps = reduce_Bps;
  s.ranks_per_node = t.ranks_per_node();
  return s;
}

struct Generated {
  Schedule schedule;
  std::vector<OpId> frontier;  // per rank: the op after which the rank holds its result
  std::vector<OpId> inputs;    // per rank: a zero-byte op standing for the rank's input buffer
};

// Generates the collective with a marker op per rank as its entry frontier, so that reachability from the final
// frontier back to the markers says whose input a rank's result can depend on.
inline Generated generate_with_inputs(const CollectiveSpec& spec, const Topology& t) {
  Generated g;
  for (int r = 0; r < t.ranks(); ++r) g.inputs.push_back(g.schedule.reduce(r, 0, {}));
  g.frontier = g.inputs;
  generate(spec, t, g.schedule, g.frontier);
  return g;
}

// Ranks whose input marker the op `from` (transitively) depends on.
inline std::vector<bool> depends_on_inputs(const Generated& g, OpId from) {
  std::vector<bool> seen(g.schedule.ops.size(), false);
  std::vector<OpId> stack{from};
  seen[from] = true;
  while (!stack.empty()) {
    OpId op = stack.back();
    stack.pop_back();
    const Op& o = g.schedule.ops[op];
    for (std::uint32_t d = o.dep_begin; d < o.dep_end; ++d) {
      OpId dep = g.schedule.deps[d];
      if (!seen[dep]) {
        seen[dep] = true;
        stack.push_back(dep);
      }
    }
  }
  std::vector<bool> ranks(g.inputs.size(), false);
  for (std::size_t r = 0; r < g.inputs.size(); ++r) ranks[r] = seen[g.inputs[r]];
  return ranks;
}

inline double simulate(const CollectiveSpec& spec, const Topology& t, Fidelity f) {
  Schedule s;
  std::vector<OpId> frontier(t.ranks(), kNoOp);
  generate(spec, t, s, frontier);
  return simulate_schedule(s, t, f, spec.reduce_Bps).seconds;
}

inline double rel_diff(double a, double b) { return std::abs(a - b) / std::max(std::abs(a), std::abs(b)); }

}  // namespace commsim::test
