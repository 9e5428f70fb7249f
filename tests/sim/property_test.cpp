// Properties every allreduce algorithm must have on every shipped topology (TEST_P over algorithm x topology),
// with the topology's default channels and node layout, as the CLI runs them:
//  1. every byte is delivered: the flow engine delivers each transfer once, all of its bytes, the total is the
//     algorithm's byte formula, and every rank's result depends on every rank's input;
//  2. flow time is never below the bandwidth lower bound (derived below);
//  3. the contention-free engine (no sharing) is never slower than Flow (sharing only slows a transfer down, and an
//     operation starts when its dependencies end, so every end time can only move later), within 1e-9;
//  4. the closed form is never below the contention-free engine (it prices each hop of a step as the slowest hop of
//     that step, and shares a rank's links among channels, which the contention-free engine never does), within 1e-9;
//  5. the closed form is never below the bandwidth bound of 2. either.
#include <filesystem>
#include <set>

#include "sim/collective/registry.hpp"
#include "tests/sim/test_util.hpp"

namespace commsim::test {
namespace {

// Every algorithm of the registry that has a schedule, and `auto`: a new algorithm is tested here without a line.
std::vector<Algorithm> schedule_algorithms() {
  std::vector<Algorithm> out;
  for (const AlgorithmEntry& e : algorithm_entries())
    if (e.has_schedule()) out.push_back(e.id);
  out.push_back(Algorithm::Auto);
  return out;
}

CollectiveSpec cli_spec(const Topology& t, Algorithm a, Bytes m) {
  CollectiveSpec s = make_spec(t, Collective::AllReduce, a, m);
  s.channels = t.default_channels();
  return s;
}

using Param = std::tuple<Algorithm, const char*>;

class EveryAlgorithmOnEveryTopology : public ::testing::TestWithParam<Param> {};

TEST_P(EveryAlgorithmOnEveryTopology, Properties) {
  const auto [algo, name] = GetParam();
  auto t = load_unshaped(shipped(name));
  const int p = t->ranks();
  // Bandwidth lower bound. Every algorithm here transfers at least 2(p-1) m bytes in total (test 1 checks the
  // exact totals: 2(p-1) m for ring, tree and halving-doubling, more for the two-level ones). Each transferred
  // byte leaves its sender through the first link of its route, one of the sender's injection links, and at any
  // instant the flows on a link share at most its capacity. So all ranks together inject at most
  // sum_r inj(r) bytes/s and
  //     T_flow >= 2(p-1) m / sum_r inj(r) >= 2(p-1)/p * m / max_r inj(r).
  double injection = 0;
  for (int r = 0; r < p; ++r) injection += injection_Bps(*t, r);

  for (Bytes m : {Bytes(1) << 20, Bytes(16) << 20}) {
    SCOPED_TRACE("m=" + std::to_string(m));
    CollectiveSpec s = cli_spec(*t, algo, m);
    const Generated g = generate_with_inputs(s, *t);
    s.algorithm = choose_algorithm(s, *t, /*need_schedule=*/true);  // what generate() ran for auto

    // 1. Every byte delivered, every input reaches every rank.
    const Bytes total = g.schedule.bytes_transferred();
    EXPECT_EQ(total, expected_bytes(s, p, m));
    const CountedRun flow = run_counted(g.schedule, *t, Network::Flow, 0);
    EXPECT_TRUE(flow.finished);
    EXPECT_EQ(flow.delivered, flow.started);
    EXPECT_EQ(flow.delivered_bytes, static_cast<double>(total));
    for (int r = 0; r < p; ++r) {
      const std::vector<bool> from = depends_on_inputs(g, g.frontier[r]);
      EXPECT_EQ(std::count(from.begin(), from.end(), true), p) << "rank " << r;
    }

    // 2. Never below the bandwidth bound.
    const double bound = 2.0 * (p - 1) * static_cast<double>(m) / injection;
    EXPECT_GE(flow.seconds, bound);

    // 3. contention-free engine <= flow.
    const double contention_free = run_counted(g.schedule, *t, Network::ContentionFree, 0).seconds;
    EXPECT_LE(contention_free, flow.seconds * (1 + 1e-9));

    // 4. Closed form >= contention-free engine.
    EXPECT_GE(closed_form_seconds(s, *t), contention_free * (1 - 1e-9));

    // 5. The closed form, too, is never below the bandwidth bound: the busbw it reports cannot exceed what the
    //    ranks' links inject (the step-by-step forms of tree and halving-doubling were, where transfers share a
    //    node's NIC, before the busiest-link bound).
    EXPECT_GE(closed_form_seconds(s, *t), bound * (1 - 1e-9));
  }
}

INSTANTIATE_TEST_SUITE_P(Shipped, EveryAlgorithmOnEveryTopology,
                         ::testing::Combine(::testing::ValuesIn(schedule_algorithms()),
                                            ::testing::ValuesIn(kShippedTopologies)),
                         [](const ::testing::TestParamInfo<Param>& param) {
                           std::string n =
                               std::string(to_string(std::get<0>(param.param))) + "_" + std::get<1>(param.param);
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

// The closed forms of halving-doubling, the 2D ring, Paddle's hierarchical allreduce and the double binary tree
// price each step's hops at their share of the links the step's hops cross (step_link_shares.hpp: on each link of
// its route, the link's rate over the step's hops that cross it, the least of those, a lower bound of the rate
// max-min sharing gives the hop), with the spec's channels as the schedule runs them. So they are not faster than
// the schedule in flow, measured over every shipped topology at 1 KiB, 1 MiB and 64 MiB:
//  - halving-doubling and the 2D ring to rounding: the one gap is gb200-nvl72's 2D ring, at most 0.014 % (85.2033
//    against 85.2150 us at 1 KiB; its 72 ranks are one node, so it is the ring over them, whose pieces the closed
//    form rounds up to whole bytes: RingOnEveryTopology.ClosedFormSharesChannelsAsFlowDoes);
//  - the hierarchical allreduce never: its broadcast is a chain per channel, and every channel's chain starts at the
//    group's leader (generate_hierarchical), which the closed form now follows (it was up to 4.91 % faster,
//    h100-pcie-nvlink-pairs at 64 MiB, starting each channel's chain where that channel's rotation put it);
//  - the tree within 0.5 % (0.41 %, gb200-nvl72 at 64 MiB: 201.98 against 202.82 us; nowhere else faster): it walks
//    its first piece up and its last one down hop by hop, each hop sharing its links with the hops of its wave or
//    with those that run beside it in the walk (tree_timeline.hpp), and its steady state with every edge busy. The
//    geometric mean of max(closed form / flow, flow / closed form) over this grid is 1.025 and the most it is slower
//    31.8 % (dgx1-v100 at 1 MiB, 925.46 against 702.17 us). Priced a level at a time, at each level's slowest hop,
//    it was up to 8.83 % faster (emulated-cpu-cluster at 1 MiB), 97 % slower (gcp-a3-high at 1 KiB, where levels mix
//    NVLink and network hops) and 1.16 in geometric mean.
//  - the ring over an explicit rank list (here the topology's ring order itself, and every other rank of it): never
//    faster (at most 25.6 % slower, h100-pcie-nvlink-pairs at 1 MiB over its ring order; the same ring without the
//    list, whose links are shared by window, RingOnEveryTopology, matches flow there).
// Before, these closed forms priced a hop as if the channels of a node shared only its links inside the node, and
// were up to 34 % (halving-doubling), 29 % (2D ring), 85 % (hierarchical, gb200-nvl72) and 47 % (tree, dgx-h100 at
// 1 MiB) faster than flow.
class SharedStepsOnEveryTopology : public ::testing::TestWithParam<const char*> {};

TEST_P(SharedStepsOnEveryTopology, ClosedFormIsNeverFasterThanFlow) {
  auto t = load_unshaped(shipped(GetParam()));
  const std::vector<int> order = t->ring_order();
  std::vector<int> every_other;
  for (std::size_t i = 0; i < order.size(); i += 2) every_other.push_back(order[i]);
  struct Case {
    Algorithm algorithm;
    std::vector<int> ranks;
    double tolerance;
  };
  const std::vector<Case> cases = {{Algorithm::HalvingDoubling, {}, 2e-4}, {Algorithm::Ring2D, {}, 2e-4},
                                   {Algorithm::Hierarchical, {}, 1e-9},    {Algorithm::Tree, {}, 0.005},
                                   {Algorithm::Ring, order, 1e-9},         {Algorithm::Ring, every_other, 1e-9}};
  for (const Case& c : cases)
    for (Bytes m : {Bytes(1) << 10, Bytes(1) << 20, Bytes(64) << 20}) {
      CollectiveSpec s = cli_spec(*t, c.algorithm, m);
      s.ranks = c.ranks;
      const int participants = c.ranks.empty() ? t->ranks() : static_cast<int>(c.ranks.size());
      try {
        check_supported(s, participants, "algo");
      } catch (const InputError&) {
        continue;  // the 2D ring needs whole nodes of more than one rank; a ring needs two ranks
      }
      SCOPED_TRACE(std::string(to_string(c.algorithm)) + " over " + std::to_string(participants) +
                   " m=" + std::to_string(m));
      const double closed = closed_form_seconds(s, *t), flow = simulate(s, *t, Network::Flow);
      EXPECT_GE(closed, flow * (1 - c.tolerance));
      // The tree's walk also keeps it close on the slow side: at most 31.8 % slower over this grid (above), where
      // priced a level at a time it was up to 97 % slower.
      if (c.algorithm == Algorithm::Tree) {
        EXPECT_LE(closed, flow * 1.35);
      }
    }
}

INSTANTIATE_TEST_SUITE_P(Shipped, SharedStepsOnEveryTopology, ::testing::ValuesIn(kShippedTopologies),
                         [](const ::testing::TestParamInfo<const char*>& param) {
                           std::string n = param.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

TEST(EveryShippedTopology, IsInTheList) {
  // The properties above are only as good as the list they run over: it must name every file of topologies/.
  std::set<std::string> files, listed(std::begin(kShippedTopologies), std::end(kShippedTopologies));
  for (const auto& entry : std::filesystem::directory_iterator("topologies"))
    if (entry.path().extension() == ".json") files.insert(entry.path().stem().string());
  EXPECT_EQ(files, listed);
}

class RingOnEveryTopology : public ::testing::TestWithParam<const char*> {};

TEST_P(RingOnEveryTopology, ClosedFormEqualsTheEngines) {
  // Ring allreduce over one channel: every rank sends all 2(p-1) steps over its one ring edge, one after the other,
  // and step s+1 waits for step s from the left. On a uniform ring every hop costs h = alpha + m/(p beta), so the
  // engine takes 2(p-1) h, the closed form. On these topologies the ring's hops differ (NVSwitch inside a node,
  // NIC across), but the rank before the slowest edge still sends its 2(p-1) steps back to back over it, each
  // after the data from its left has arrived (earlier, over faster edges): the engine again takes 2(p-1) h_max,
  // which the closed form charges. No two ring edges share a directed link, so Flow agrees as well.
  auto t = load_unshaped(shipped(GetParam()));
  for (Bytes m : {Bytes(1) << 20, Bytes(1) << 30}) {
    const CollectiveSpec s = make_spec(*t, Collective::AllReduce, Algorithm::Ring, m);
    const double cf = closed_form_seconds(s, *t);
    EXPECT_NEAR(simulate(s, *t, Network::ContentionFree), cf, cf * 1e-9);
    EXPECT_NEAR(simulate(s, *t, Network::Flow), cf, cf * 1e-9);
  }
}

TEST_P(RingOnEveryTopology, ClosedFormSharesChannelsAsFlowDoes) {
  // With the default channels (one ring per NIC), the closed form prices each hop of the ring at the least, over
  // the links of its route, of the link's rate over the ring edges of all channels (the rotated rings) that cross it
  // (ring_link_shares.hpp); the flow engine shares the links max-min among the rotated rings. At 64 MiB the two
  // agree on every shipped machine but three (closed form vs flow):
  //  - dgx-h100 +2.52 % (518.91 vs 506.14 us) and hgx-h200 +2.89 % (421.17 vs 409.34 us), the closed form slower,
  //    never faster. The hop between nodes goes through PXN, last GPU -> NVSwitch -> the GPU on the channel's rail
  //    -> PCIe -> NIC (NCCL's rings leave by the NIC they entered, typeinter PXN), so its first two links are the
  //    NVSwitch links that the other 7 channels' hops inside the node also cross: 8 edges on 369.9 GB/s, 46.24 GB/s
  //    each, below the 48 GB/s of its PCIe and NIC links. The closed form charges that at every step: dgx-h100 (4
  //    nodes, 62 steps of 64 MiB / 8 / 32 = 256 KiB) 62 x (2.7 us + 256 KiB / 46.24 GB/s) = 518.91 us; hgx-h200 (2
  //    nodes, 30 steps of 512 KiB) 30 x (2.7 us + 512 KiB / 46.24 GB/s) = 421.17 us. In flow the channels start
  //    together, so that hop is slowed at the first steps only (dgx-h100: 8.2814, 8.1791, then 8.1613 us = 2.7 us
  //    + 256 KiB / 48 GB/s; hgx-h200: 13.9509, 13.8486, 13.7308, then 13.6227 us); later the hops inside the node
  //    drift apart in time and the PXN flow keeps its 48 GB/s.
  //  - gb200-nvl72 -0.008 % (279.966 vs 279.990 us, the closed form slower): rounding. 64 MiB over 72 channels x 72
  //    blocks gives blocks of 12945 and 12946 bytes; the closed form charges every step 12946. At 72 x 72 x 12946 or
  //    72 x 72 x 12945 bytes the two agree exactly.
  // On h100-pcie-nvlink-pairs the rotated rings cross the link between the sockets (UPI, 128 GB/s x 0.172 = 22.016
  // GB/s) 3 times per direction, not once per channel (channel 0 only from socket 0 to 1, channel 2 only back): each
  // of the 30 steps (2 nodes, 1 MiB pieces) is 1 us + 1 MiB / (22.016 GB/s / 3) = 143.88 us in both, 4316.5 us in
  // all, where dividing by the 4 channels made the closed form 25 % slow.
  const std::string name = GetParam();
  auto t = load_unshaped(shipped(name));
  CollectiveSpec s = cli_spec(*t, Algorithm::Ring, Bytes(64) << 20);
  const double cf = closed_form_seconds(s, *t), flow = simulate(s, *t, Network::Flow);
  if (name == "dgx-h100" || name == "hgx-h200") {
    EXPECT_GT(cf, flow * (1 + 1e-9)) << "the gap closed (or the closed form turned faster than flow): " << name;
  } else if (name == "gb200-nvl72") {
    EXPECT_GT(std::abs(flow - cf), cf * 1e-9) << "the gap closed: drop " << name << " from the known gaps";
  } else {
    EXPECT_NEAR(flow, cf, cf * 1e-9);
  }
}

INSTANTIATE_TEST_SUITE_P(Shipped, RingOnEveryTopology, ::testing::ValuesIn(kShippedTopologies),
                         [](const ::testing::TestParamInfo<const char*>& param) {
                           std::string n = param.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

TEST(UniformRings, ClosedFormEqualsContentionFreeEngine) {
  // Uniform rings, where every hop has the same alpha and beta: dgx-a100 on one node (every hop GPU -> NVSwitch ->
  // GPU), the ASTRA-sim Ring(8) dimension of astra-ring-switch on its own (--nodes 1), cloud-tcp-10gbe (every hop
  // GPU -> CPU -> NIC -> switch -> NIC -> CPU -> GPU), and the test fixtures. Closed form == contention-free engine.
  std::vector<std::unique_ptr<Topology>> uniform;
  uniform.push_back(load_topology(shipped("dgx-a100"), 1));
  uniform.push_back(load_topology(shipped("astra-ring-switch"), 1));
  uniform.push_back(load_topology(shipped("cloud-tcp-10gbe")));
  uniform.push_back(load_topology(fixture("star8.json")));
  uniform.push_back(load_topology(fixture("astra-switch8.json")));
  for (const auto& t : uniform) {
    SCOPED_TRACE(t->name());
    for (Collective op : {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather}) {
      const CollectiveSpec s = make_spec(*t, op, Algorithm::Ring, Bytes(8) << 20);
      const double cf = closed_form_seconds(s, *t);
      EXPECT_NEAR(simulate(s, *t, Network::ContentionFree), cf, cf * 1e-9);
    }
  }
}

}  // namespace
}  // namespace commsim::test
