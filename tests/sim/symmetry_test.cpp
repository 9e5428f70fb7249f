// The flow engine over a symmetry's quotient (sim/network/symmetry.hpp) against the full schedule. Why the results
// must be identical: when sigma maps every ring edge's route onto its image's (checked link by link), the full
// simulation is invariant under sigma, so the m images of each flow start, share and finish in the same picosecond
// as their representative, and a link of an orbit carries exactly the images the quotient counts on it. Any
// difference would be a bug in the quotient (weights, orbit sizes, the representatives' dependencies), so the
// makespans, being whole picoseconds, are compared with ==, and so are the bytes per link class (sums of whole
// bytes, exact in a double). Busy time is a sum of seconds in another order, and where a ring skipped the steps its
// steady state repeats, k times one period's difference of running sums (RingRun): equal to 1e-9 relative.
#include "sim/network/symmetry.hpp"

#include <filesystem>

#include "tests/sim/test_util.hpp"

namespace commsim::test {

double reference_flow_seconds(const Schedule& s, const Topology& t, double reduce_Bps);  // flow_reference_test.cpp

namespace {

CollectiveSpec ring_spec(const Topology& t, Collective op, int channels, Bytes bytes) {
  CollectiveSpec s;
  s.op = op;
  s.algorithm = Algorithm::Ring;
  s.bytes = bytes;
  s.channels = channels;
  s.ranks_per_node = t.ranks_per_node();
  return s;
}

// Runs `specs` with and without the symmetry and compares; returns the symmetry's order, and counts in
// `steady_states` the runs that skipped steps their steady state repeats (RingRun).
int expect_same_as_full(const std::vector<CollectiveSpec>& specs, const Topology& t, const std::string& what,
                        int* steady_states = nullptr) {
  const FlowCollectivesResult fast = simulate_flow_collectives(specs, t, true);
  if (steady_states) *steady_states += fast.skipped_steps > 0;
  const FlowCollectivesResult full = simulate_flow_collectives(specs, t, false);
  EXPECT_EQ(full.multiplicity, 1) << what;
  EXPECT_EQ(fast.full_transfers, full.transfers) << what;  // the representatives stand for every transfer
  EXPECT_EQ(fast.seconds, full.seconds) << what;
  for (int c = 0; c < kLinkClassCount; ++c) {
    EXPECT_EQ(fast.usage.bytes[c], full.usage.bytes[c]) << what << " link class " << c;
    EXPECT_NEAR(fast.usage.busy_s[c], full.usage.busy_s[c], 1e-9 * full.usage.busy_s[c]) << what << " class " << c;
  }
  return fast.multiplicity;
}

// Every shipped topology at its own node count (and at most 256 ranks, so that the full run stays quick), ring
// allreduce with its default channels and with one. Bytes: channels x ranks x 64 KiB, so every piece divides
// evenly (else there is no symmetry and both runs are the full one).
TEST(Symmetry, QuotientEqualsFullScheduleOnEveryShippedTopology) {
  int symmetric = 0, cases = 0, steady_states = 0;
  for (const auto& entry : std::filesystem::directory_iterator("topologies")) {
    if (entry.path().extension() != ".json") continue;
    const std::unique_ptr<Topology> t = load_topology(entry.path().string());
    if (t->ranks() < 2 || t->ranks() > 256) continue;
    for (int channels : {1, t->default_channels()}) {
      const Bytes bytes = static_cast<Bytes>(channels) * static_cast<Bytes>(t->ranks()) * (Bytes(1) << 16);
      const int m = expect_same_as_full({ring_spec(*t, Collective::AllReduce, channels, bytes)}, *t,
                                        entry.path().filename().string() + " channels " + std::to_string(channels),
                                        &steady_states);
      symmetric += m > 1;
      ++cases;
    }
  }
  // The comparison means something only where the quotient ran: most shipped machines are rings of identical nodes.
  EXPECT_GT(cases, 20);
  EXPECT_GE(symmetric, cases / 2) << symmetric << " of " << cases << " cases ran on a quotient";
  // Most of those rings settle into a steady state before they end: the comparison covers the skipped steps.
  EXPECT_GE(steady_states, cases / 2) << steady_states << " of " << cases << " cases skipped steps";
}

// ASTRA-sim's experiment, a 1-D ring at 50 GB/s and 500 ns per link: every rotation is an automorphism, so one flow
// per ring step stands for all 64 (order 64). Also checked against the from-scratch reference solver.
TEST(Symmetry, AstraRingRunsOneFlowPerStep) {
  LinkParams link;
  link.latency_s = 500e-9;
  link.bandwidth_Bps = 50e9;
  const AstraTopology t("ring", "", {{BlockKind::Ring, 64, link}});
  const CollectiveSpec spec = ring_spec(t, Collective::AllReduce, 1, Bytes(64) << 20);
  const std::optional<RingSymmetry> symmetry = find_ring_symmetry({spec}, t);
  ASSERT_TRUE(symmetry.has_value());
  EXPECT_EQ(symmetry->quotient.multiplicity, 64);
  EXPECT_EQ(symmetry->representatives.positions, 1);
  EXPECT_EQ(expect_same_as_full({spec}, t, "astra ring"), 64);
  // 2(p - 1) steps of one representative transfer each.
  EXPECT_EQ(simulate_flow_collectives({spec}, t).transfers, 2u * 63u);
  Schedule full;
  std::vector<OpId> frontier(t.ranks(), kNoOp);
  generate(spec, t, full, frontier);
  EXPECT_NEAR(simulate_flow_collectives({spec}, t).seconds[0], reference_flow_seconds(full, t, 0), 1e-12);
}

// Contended: two streams on one communicator (every link carries both collectives' flows, so every rate is a
// max-min share), an allreduce and an allgather of other sizes, on a node fabric and on the ASTRA ring + switch.
TEST(Symmetry, TwoStreamsSharingLinksMatchTheFullSchedules) {
  for (const char* name : {"dgx-a100", "astra-ring-switch", "dgx1-v100"}) {
    const std::unique_ptr<Topology> t = load_unshaped(shipped(name), 4);
    const int channels = t->default_channels();
    const Bytes unit = static_cast<Bytes>(channels) * static_cast<Bytes>(t->ranks()) << 16;
    const std::vector<CollectiveSpec> specs = {ring_spec(*t, Collective::AllReduce, channels, 3 * unit),
                                               ring_spec(*t, Collective::AllGather, channels, 5 * unit)};
    const int m = expect_same_as_full(specs, *t, name);
    EXPECT_GT(m, 1) << name << ": expected a symmetry";
    // The two streams do slow each other: alone, the allreduce finishes earlier than beside the allgather.
    const double alone = simulate_flow_collectives({specs[0]}, *t).seconds[0];
    EXPECT_LT(alone, simulate_flow_collectives(specs, *t).seconds[0]) << name;
  }
}

// Both kinds at once: on 4 DGX A100 under one leaf, rotating the ring by a node (8 positions; order 4) and mapping
// each of the 8 channels onto the next (every GPU onto the next of its node; order 8) commute, so channel 0's first
// 8 positions stand for all 4 x 8 = 32 images of each flow.
TEST(Symmetry, CombinesTheRotationWithTheChannelMap) {
  const std::unique_ptr<Topology> t = load_topology(shipped("dgx-a100"), 4);
  const CollectiveSpec spec = ring_spec(*t, Collective::AllReduce, 8, Bytes(8 * 32) << 16);
  const std::optional<RingSymmetry> symmetry = find_ring_symmetry({spec}, *t);
  ASSERT_TRUE(symmetry.has_value());
  EXPECT_EQ(symmetry->quotient.multiplicity, 32);
  EXPECT_EQ(symmetry->representatives.channels, 1);
  EXPECT_EQ(symmetry->representatives.positions, 8);
  EXPECT_EQ(expect_same_as_full({spec}, *t, "dgx-a100 x 4, 8 channels"), 32);
}

// Links that a symmetry maps onto themselves: on the emulated CPU cluster two ranks share each node's NIC, and with
// two channels the channel map (each channel's ring onto the other's: the two ranks of every node swapped) fixes
// the NIC's links: an orbit of 1 link carrying both images of a flow (weight 2), so the quotient's weighted shares
// are what is compared here, alone and beside a second stream. The engine is run here on that symmetry directly.
TEST(Symmetry, LinksFixedByTheSymmetryCarryEveryImage) {
  const std::unique_ptr<Topology> t = load_unshaped(shipped("emulated-cpu-cluster"));
  const Bytes unit = static_cast<Bytes>(2 * t->ranks()) << 14;
  for (const std::vector<CollectiveSpec>& specs :
       {std::vector<CollectiveSpec>{ring_spec(*t, Collective::AllReduce, 2, 4 * unit)},
        std::vector<CollectiveSpec>{ring_spec(*t, Collective::AllReduce, 2, 4 * unit),
                                    ring_spec(*t, Collective::ReduceScatter, 2, 3 * unit)}}) {
    const std::optional<RingSymmetry> symmetry = find_ring_symmetry(specs, *t, true);
    ASSERT_TRUE(symmetry.has_value());
    ASSERT_EQ(symmetry->quotient.multiplicity, 2);
    std::uint32_t smallest_orbit = 2;
    for (std::uint32_t k : symmetry->quotient.orbit_size)
      if (k > 0) smallest_orbit = std::min(smallest_orbit, k);
    EXPECT_EQ(smallest_orbit, 1u);
    const FlowCollectivesResult full = simulate_flow_collectives(specs, *t, false);
    EventQueue queue;
    const auto network = make_quotient_flow_network(*t, queue, symmetry->quotient);
    std::vector<Schedule> schedules(specs.size());
    std::vector<std::unique_ptr<ScheduleRun>> runs;
    for (std::size_t i = 0; i < specs.size(); ++i) {
      generate_ring_representatives(specs[i], *t, symmetry->representatives, schedules[i]);
      runs.push_back(std::make_unique<ScheduleRun>(schedules[i], 0, *network, queue, nullptr));
    }
    for (auto& run : runs) run->start();
    queue.run();
    for (std::size_t i = 0; i < specs.size(); ++i) EXPECT_EQ(ps_to_seconds(runs[i]->finished_at()), full.seconds[i]);
    for (int c = 0; c < kLinkClassCount; ++c) EXPECT_EQ(network->usage().bytes[c], full.usage.bytes[c]);
  }
}

// A symmetric contended case checked against the from-scratch reference solver: two allreduces at once on the ASTRA
// ring + switch (4 nodes of 8), the quotient's makespan equals the reference's full-schedule one (the reference
// works in double seconds, the engine in picoseconds: equal to 1 ns).
TEST(Symmetry, ContendedQuotientAgreesWithTheReferenceSolver) {
  const std::unique_ptr<Topology> t = load_topology(shipped("astra-ring-switch"), 4);
  const Bytes unit = static_cast<Bytes>(t->ranks()) << 14;
  const std::vector<CollectiveSpec> specs = {ring_spec(*t, Collective::AllReduce, 1, 2 * unit),
                                             ring_spec(*t, Collective::AllReduce, 1, 7 * unit)};
  const FlowCollectivesResult fast = simulate_flow_collectives(specs, *t);
  ASSERT_GT(fast.multiplicity, 1);
  Schedule both;
  for (const CollectiveSpec& s : specs) {
    std::vector<OpId> frontier(t->ranks(), kNoOp);  // both from time 0, independent of each other
    generate(s, *t, both, frontier);
  }
  EXPECT_NEAR(std::max(fast.seconds[0], fast.seconds[1]), reference_flow_seconds(both, *t, 0), 1e-9);
}

// The progress hook: a check that always goes on changes nothing; one that stops at its first check (after 100 of
// the run's events) leaves the collective unfinished, with the simulated time reached, below the full time.
TEST(Symmetry, ProgressHookStopsTheRun) {
  const std::unique_ptr<Topology> t = load_topology(shipped("dgx-a100"), 4);
  const std::vector<CollectiveSpec> specs = {ring_spec(*t, Collective::AllReduce, 1, Bytes(32) << 20)};
  const FlowCollectivesResult plain = simulate_flow_collectives(specs, *t, false);
  int checks = 0;
  const FlowCollectivesResult checked =
      simulate_flow_collectives(specs, *t, false, {100, [&](const EventQueue&) { return ++checks > 0; }});
  EXPECT_TRUE(checked.complete);
  EXPECT_EQ(checked.seconds, plain.seconds);
  EXPECT_EQ(static_cast<std::uint64_t>(checks), (plain.events - 1) / 100);  // one per 100 events, none at the end
  const FlowCollectivesResult stopped =
      simulate_flow_collectives(specs, *t, false, {100, [](const EventQueue&) { return false; }});
  EXPECT_FALSE(stopped.complete);
  EXPECT_EQ(stopped.events, 100u);
  EXPECT_LT(stopped.seconds[0], plain.seconds[0]);
}

// No symmetry, so the full schedule runs: pieces that differ by a byte, different participants, a tree.
TEST(Symmetry, FallsBackWhereTheFlowsAreNotAlike) {
  const std::unique_ptr<Topology> t = load_topology(shipped("dgx-a100"), 2);
  CollectiveSpec uneven = ring_spec(*t, Collective::AllReduce, 1, (Bytes(1) << 20) + 1);
  EXPECT_FALSE(find_ring_symmetry({uneven}, *t).has_value());
  EXPECT_EQ(expect_same_as_full({uneven}, *t, "uneven"), 1);
  CollectiveSpec a = ring_spec(*t, Collective::AllReduce, 1, Bytes(16) << 20), b = a;
  b.ranks = {0, 1, 2, 3, 8, 9, 10, 11};
  EXPECT_FALSE(find_ring_symmetry({a, b}, *t).has_value());
  EXPECT_EQ(expect_same_as_full({a, b}, *t, "two communicators"), 1);
  CollectiveSpec tree = a;
  tree.algorithm = Algorithm::Tree;
  EXPECT_FALSE(find_ring_symmetry({tree}, *t).has_value());
}

// A ring of one channel with no symmetry (dgx-a100's 21 nodes are not a whole number of its 20-node scalable units,
// and one channel has no channel map) runs as its own representative: every position generated as it runs on the
// plain network, the same operations as the full schedule in the same order; here it also settles and skips steps.
// The result is the full schedule's, to the picosecond.
TEST(Symmetry, ALoneRingWithoutASymmetryRunsAsItsOwnRepresentative) {
  const std::unique_ptr<Topology> t = load_topology(shipped("dgx-a100"), 21);
  const CollectiveSpec spec = ring_spec(*t, Collective::AllReduce, 1, static_cast<Bytes>(t->ranks()) << 16);
  ASSERT_FALSE(find_ring_symmetry({spec}, *t).has_value());
  const FlowCollectivesResult fast = simulate_flow_collectives({spec}, *t);
  EXPECT_EQ(expect_same_as_full({spec}, *t, "dgx-a100 x 21, one channel"), 1);
  EXPECT_GT(fast.skipped_steps, 0u);
  const auto p = static_cast<std::uint64_t>(t->ranks());
  EXPECT_EQ(fast.transfers, 2 * (p - 1) * p);  // 2 (p - 1) steps of p transfers: every one accounted for
  // Eight channels and a size that splits unevenly (no symmetry): one run per channel, their pieces cut as the
  // schedule cuts them, the makespan the last channel's.
  for (Collective op : {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather}) {
    const CollectiveSpec uneven = ring_spec(*t, op, 8, (Bytes(3) << 20) + 5);
    ASSERT_FALSE(find_ring_symmetry({uneven}, *t).has_value());
    expect_same_as_full({uneven}, *t, "dgx-a100 x 21, 8 channels, " + std::string(to_string(op)));
  }
}

// A symmetry is used only if it holds on the links: a ring over ranks in an order that crosses the nodes unevenly
// (0..7 of node 0 then 8..15 of node 1 interleaved) has shift-invariant positions but not shift-invariant routes.
TEST(Symmetry, RejectsARotationTheRoutesDoNotAdmit) {
  const std::unique_ptr<Topology> t = load_topology(shipped("dgx-a100"), 2);
  CollectiveSpec s = ring_spec(*t, Collective::AllReduce, 1, Bytes(16) << 20);
  s.ranks_per_node = 1;
  s.ranks = {0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15};
  // Rotating by 2 positions maps 0 -> 8 (node 0 -> node 1), but edge 1 -> 8 (NIC) onto 9 -> 2 (NIC) and 0 -> 1
  // (NVSwitch) onto 8 -> 9 (NVSwitch): routes match, so order 8 is found; rotating by 1 maps 0 -> 1 (NVSwitch)
  // onto 1 -> 8 (NIC), which the link check rejects.
  const std::optional<RingSymmetry> symmetry = find_ring_symmetry({s}, *t);
  ASSERT_TRUE(symmetry.has_value());
  EXPECT_EQ(symmetry->representatives.positions, 2);
  EXPECT_EQ(expect_same_as_full({s}, *t, "interleaved"), 8);
}

}  // namespace
}  // namespace commsim::test
