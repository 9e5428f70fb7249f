// Shared helpers of the simulator tests: loading fixtures, generating and simulating a collective, walking a
// schedule's dependency DAG, counting delivered bytes, the byte formulas of the algorithms, and running the CLI.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "sim/collective/collective.hpp"
#include "sim/core/error.hpp"
#include "sim/core/json_fields.hpp"
#include "sim/engine/executor.hpp"
#include "sim/topology/astra_topology.hpp"
#include "sim/topology/topology.hpp"
#include "sim/topology/topology_document.hpp"
#include "tests/sim/contention_free_network.hpp"

namespace commsim::test {

// Tests run with the source root as working directory (tests/CMakeLists.txt), so these are relative paths.
inline std::string fixture(const std::string& name) { return "tests/data/" + name; }
inline std::string shipped(const std::string& name) { return "topologies/" + name + ".json"; }

// A topology document without its token buckets (LinkParams::burst_bytes). The engine's equalities with the closed
// forms, the reference solver and the symmetries hold for links without one: the closed forms price the sustained
// rate, and a bucket's tokens are its own link's history. TokenBucket (contention_test.cpp) covers buckets.
inline Json without_token_buckets(Json doc) {
  if (doc.contains("link_classes"))
    for (auto& [name, link_class] : doc["link_classes"].items()) {
      link_class.erase("burst_bytes");
      link_class.erase("burst_Bps");
    }
  return doc;
}
inline std::unique_ptr<Topology> load_unshaped(const std::string& path, int nodes = 0) {
  return load_topology_document(without_token_buckets(read_json_file(path)), path, nodes);
}

// Every file of topologies/: a new file fails EveryShippedTopology.IsInTheList (property_test.cpp) until it is added
// here.
inline constexpr const char* kShippedTopologies[] = {"abci-a-node",
                                                     "astra-ring-switch",
                                                     "aws-p4d",
                                                     "aws-p5",
                                                     "azure-nd-a100-v4",
                                                     "azure-nd-h100-v5",
                                                     "cloud-p3-v100-25gbe",
                                                     "cloud-tcp-100gbe",
                                                     "cloud-tcp-10gbe",
                                                     "cloud-tcp-1gbe",
                                                     "cloud-tcp-25gbe",
                                                     "dgx-a100",
                                                     "dgx-h100",
                                                     "dgx-h200-socket",
                                                     "dgx1-v100",
                                                     "emulated-cpu-cluster",
                                                     "gb200-host4",
                                                     "gb200-nvl72",
                                                     "gcp-a3-high",
                                                     "gcp-a3-mega",
                                                     "h100-pcie-nvlink-pairs",
                                                     "hgx-b200",
                                                     "hgx-h200",
                                                     "pcie-8gpu-2socket-nop2p",
                                                     "pcie-gen4-8gpu",
                                                     "r760xa-l40s-roce",
                                                     "r760xa-l40s-socket"};

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
    for (std::uint32_t d = o.dep_begin; d < o.dep_end(); ++d) {
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

// The network a test executes a schedule on: the product's flow network, or the contention-free oracle (no fidelity
// of the product: tests/sim/contention_free_network.hpp).
enum class Network { ContentionFree, Flow };
inline std::unique_ptr<NetworkModel> make_test_network(Network n, const Topology& t, EventQueue& queue) {
  if (n == Network::Flow) return make_flow_network(t, queue);
  return std::make_unique<ContentionFreeNetwork>(t, queue);
}
inline ScheduleResult run_schedule(const Schedule& s, const Topology& t, Network n, double reduce_Bps) {
  EventQueue queue;
  const std::unique_ptr<NetworkModel> network = make_test_network(n, t, queue);
  return simulate_schedule(s, *network, queue, reduce_Bps);
}

inline double simulate(const CollectiveSpec& spec, const Topology& t, Network n) {
  Schedule s;
  std::vector<OpId> frontier(t.ranks(), kNoOp);
  generate(spec, t, s, frontier);
  return run_schedule(s, t, n, spec.reduce_Bps).seconds;
}

// Bytes every schedule must transfer in total, summed over channels (each channel moves its share, and the
// shares sum to m):
//   ring allreduce 2(p-1) m: 2(p-1) steps, each moving all p blocks, which sum to m (for any m);
//   ring reduce-scatter / allgather (p-1) m; chain broadcast / reduce (p-1) m: p-1 edges, each all pieces;
//   double tree 2(p-1) m: each tree moves its half up p-1 edges and down p-1 edges;
//   halving-doubling 2(p-1) m when q (the largest power of two <= p) divides each channel's share: folding
//     moves (p-q) m in and out, the exchanges m(q-1) each way;
//   hierarchical, G groups of S: G * 2(S-1) m + 2(G-1) m + G (S-1) m;
//   2D ring, N nodes of R: N m + R * 2(N-1) (m/R) + N m (blocks of one node sum to m).
inline Bytes expected_bytes(const CollectiveSpec& s, int p, Bytes m) {
  const Bytes P = static_cast<Bytes>(p);
  switch (s.algorithm) {
    case Algorithm::Ring:
      return s.op == Collective::AllReduce ? 2 * (P - 1) * m : (P - 1) * m;
    case Algorithm::Tree:
    case Algorithm::HalvingDoubling:
      return 2 * (P - 1) * m;
    case Algorithm::Hierarchical: {
      const Bytes G =
          static_cast<Bytes>(s.hierarchy_groups > 0 ? s.hierarchy_groups : std::max(1, p / s.ranks_per_node));
      const Bytes S = P / G;
      return G * 2 * (S - 1) * m + 2 * (G - 1) * m + G * (S - 1) * m;
    }
    case Algorithm::Ring2D: {
      const Bytes R = static_cast<Bytes>(s.ranks_per_node), N = P / R;
      return 2 * N * (R - 1) * m + 2 * (N - 1) * m;
    }
    default:
      break;  // auto, and NCCL's algorithms, which have no schedule
  }
  ADD_FAILURE() << "unresolved algorithm";
  return 0;
}

// The naive max-min flow simulation of flow_reference_test.cpp (makespan in seconds).
double reference_flow_seconds(const Schedule& s, const Topology& t, double reduce_Bps);

inline double rel_diff(double a, double b) { return std::abs(a - b) / std::max(std::abs(a), std::abs(b)); }

// A network that forwards to a real one and counts what it was asked to move and what it delivered, so a test can
// check that every byte of a schedule arrives (and that no transfer is lost or completed twice).
class CountingNetwork final : public NetworkModel, public TransferListener {
 public:
  explicit CountingNetwork(std::unique_ptr<NetworkModel> inner) : inner_(std::move(inner)) {}
  void start(int src, int dst, double bytes, TransferListener* listener, std::uint64_t tag,
             std::uint32_t copies = 0) override {
    pending_.push_back({listener, tag, bytes, false});
    started_bytes += bytes;
    ++started;
    inner_->start(src, dst, bytes, this, pending_.size() - 1, copies);
  }
  const LinkUsage& usage() const override { return inner_->usage(); }
  void on_transfer_done(std::uint64_t index) override {
    Pending& p = pending_[index];
    EXPECT_FALSE(p.done) << "transfer " << index << " delivered twice";
    p.done = true;
    delivered_bytes += p.bytes;
    ++delivered;
    p.listener->on_transfer_done(p.tag);
  }
  double started_bytes = 0, delivered_bytes = 0;
  std::uint64_t started = 0, delivered = 0;

 private:
  struct Pending {
    TransferListener* listener;
    std::uint64_t tag;
    double bytes;
    bool done;
  };
  std::unique_ptr<NetworkModel> inner_;
  std::vector<Pending> pending_;
};

struct CountedRun {
  double seconds = 0;
  bool finished = false;
  double started_bytes = 0, delivered_bytes = 0;
  std::uint64_t started = 0, delivered = 0;
};

inline CountedRun run_counted(const Schedule& s, const Topology& t, Network n, double reduce_Bps) {
  EventQueue queue;
  CountingNetwork net(make_test_network(n, t, queue));
  ScheduleRun run(s, reduce_Bps, net, queue, nullptr);
  run.start();
  queue.run();
  return {
      ps_to_seconds(run.finished_at()), run.done(), net.started_bytes, net.delivered_bytes, net.started, net.delivered};
}

// Total effective bandwidth a rank can inject: the sum over the distinct directed links that its routes start on.
// Every flow from the rank starts on one of them, so at any instant the rank sends at most this many bytes/s.
inline double injection_Bps(const Topology& t, int rank) {
  std::vector<LinkId> first;
  for (int dst = 0; dst < t.ranks(); ++dst) {
    if (dst == rank) continue;
    Route r;
    t.route(rank, dst, r);
    first.push_back(r.links.front());
  }
  std::sort(first.begin(), first.end());
  first.erase(std::unique(first.begin(), first.end()), first.end());
  double total = 0;
  for (LinkId l : first) total += t.link(l).effective_Bps();
  return total;
}

// The message of the InputError `f` throws ("" if none).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A fresh empty directory under the system's temp directory, removed when the object goes.
class TempDir {
 public:
  TempDir() {
    const auto base = std::filesystem::temp_directory_path();
    for (int i = 0;; ++i) {
      path_ = base / ("commsim-test-" + std::to_string(::getpid()) + "-" + std::to_string(i));
      if (std::filesystem::create_directory(path_)) break;
    }
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// A file in this test process's own temp folder (removed when the process exits; ctest runs each test in a process
// of its own, so nothing piles up in the temp directory), holding `doc`; returns its path.
inline std::string write_temp_json(const std::string& name, const Json& doc) {
  static const TempDir dir;
  const std::string path = dir.path().string() + "/" + name;
  std::ofstream(path) << doc.dump(2);
  return path;
}

struct CliResult {
  int exit_code = -1;
  std::string out, err;
};

// Runs the built `commsim` with `args` (already shell-quoted where needed), capturing stdout and stderr.
inline CliResult run_cli(const std::string& args) {
#ifdef COMMSIM_CLI_PATH
  TempDir dir;
  const auto out = dir.path() / "stdout", err = dir.path() / "stderr";
  const std::string cmd =
      std::string("'") + COMMSIM_CLI_PATH + "' " + args + " >'" + out.string() + "' 2>'" + err.string() + "'";
  const int status = std::system(cmd.c_str());
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_file(out);
  r.err = read_file(err);
  return r;
#else
  (void)args;
  return {};
#endif
}

inline bool cli_available() {
#ifdef COMMSIM_CLI_PATH
  return std::filesystem::exists(COMMSIM_CLI_PATH);
#else
  return false;
#endif
}

}  // namespace commsim::test
