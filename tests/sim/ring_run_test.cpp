// RingRun (sim/engine/ring_run.hpp) against the schedule it stands for: generate_ring_representatives materialises
// the representatives' operations and ScheduleRun executes them; RingRun issues the same operations as they become
// ready. Both drive the same quotient flow network, so if RingRun issues the same transfers and reductions in the same
// order, the network assigns the same flow ids, the queue the same insertion order, and every result is the same
// bit for bit: the makespan (whole picoseconds), the number of events, and the bytes and busy time per link class
// (the same sums in the same order), all compared with ==. An operation issued early, late, twice or in another order
// moves the event count or a time.
#include "sim/engine/ring_run.hpp"

#include "sim/network/symmetry.hpp"
#include "tests/sim/test_util.hpp"

namespace commsim::test {
namespace {

CollectiveSpec ring_spec(const Topology& t, Collective op, int channels, Bytes bytes, int chunks, double reduce_Bps) {
  CollectiveSpec s;
  s.op = op;
  s.algorithm = Algorithm::Ring;
  s.bytes = bytes;
  s.channels = channels;
  s.chunks = chunks;
  s.reduce_Bps = reduce_Bps;
  s.ranks_per_node = t.ranks_per_node();
  return s;
}

struct Outcome {
  std::vector<TimePs> finished_at;
  std::uint64_t events = 0;
  LinkUsage usage;
};

// The specs run at once on the quotient of their symmetry, materialised (ScheduleRun) or on the fly (RingRun, which
// may skip the steps of its steady state when `fast_forward`; `skipped` counts them).
Outcome run(const std::vector<CollectiveSpec>& specs, const Topology& t, const RingSymmetry& symmetry, bool on_the_fly,
            bool fast_forward = false, std::uint64_t* skipped = nullptr) {
  EventQueue queue;
  const auto network = make_quotient_flow_network(t, queue, symmetry.quotient);
  std::vector<Schedule> schedules(specs.size());
  std::vector<std::unique_ptr<ScheduleRun>> runs;
  std::vector<std::unique_ptr<RingRun>> ring_runs;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    if (on_the_fly) {
      ring_runs.push_back(
          std::make_unique<RingRun>(specs[i], t, symmetry.representatives.positions, *network, queue, fast_forward));
    } else {
      generate_ring_representatives(specs[i], t, symmetry.representatives, schedules[i]);
      runs.push_back(std::make_unique<ScheduleRun>(schedules[i], specs[i].reduce_Bps, *network, queue, nullptr));
    }
  }
  for (auto& r : ring_runs) r->start();
  for (auto& r : runs) r->start();
  queue.run();
  Outcome out;
  for (auto& r : ring_runs) {
    EXPECT_TRUE(r->done());
    out.finished_at.push_back(r->finished_at());
    if (skipped) *skipped += r->skipped_steps();
  }
  for (auto& r : runs) {
    EXPECT_TRUE(r->done());
    out.finished_at.push_back(r->finished_at());
  }
  out.events = queue.processed();
  out.usage = network->usage();
  return out;
}

void expect_same(const std::vector<CollectiveSpec>& specs, const Topology& t, const std::string& what,
                 bool channel_map_only = false) {
  SCOPED_TRACE(what);
  const std::optional<RingSymmetry> symmetry = find_ring_symmetry(specs, t, channel_map_only);
  ASSERT_TRUE(symmetry.has_value());
  ASSERT_EQ(symmetry->representatives.channels, 1);  // RingRun runs one channel's positions
  const Outcome materialised = run(specs, t, *symmetry, false), on_the_fly = run(specs, t, *symmetry, true);
  EXPECT_EQ(on_the_fly.finished_at, materialised.finished_at);
  EXPECT_EQ(on_the_fly.events, materialised.events);
  for (int c = 0; c < kLinkClassCount; ++c) {
    EXPECT_EQ(on_the_fly.usage.bytes[c], materialised.usage.bytes[c]) << "link class " << c;
    EXPECT_EQ(on_the_fly.usage.busy_s[c], materialised.usage.busy_s[c]) << "link class " << c;
  }
}

// The steady state (RingRun's fast_forward) against the same run simulated step by step: the makespan to the
// picosecond and the bytes per link class exactly; busy time is k x one period's instead of a sum of k spells, and
// that period's is the difference of two running sums of thousands of spells (each exact to ~1e-16 of the sum), so it
// agrees to 1e-9, not bit for bit. dgx-a100's 1 GiB ring over 16 and 21 nodes (8 channels: only the channel map is a
// symmetry there, so every position of a channel runs), each ring collective; with reductions that take time, as fast
// as NVLink and slower (they queue up; the reduce-scatter and the allgather then settle apart); with 2 and 3 chunks per
// step; and ASTRA's 64-NPU ring. Every one of them settles and skips; a ring beside another collective never tries
// (TwoStreams above).
TEST(RingRun, SteadyStateSkipsOnlyStepsThatRepeat) {
  LinkParams link;
  link.latency_s = 500e-9;
  link.bandwidth_Bps = 50e9;
  const AstraTopology astra("ring", "", {{BlockKind::Ring, 64, link}});
  struct Case {
    std::string name;
    const Topology* topology;
    CollectiveSpec spec;
  };
  std::vector<std::unique_ptr<Topology>> topologies;
  std::vector<Case> cases;
  for (int nodes : {16, 21}) {
    topologies.push_back(load_topology(shipped("dgx-a100"), nodes));
    const Topology& t = *topologies.back();
    const std::string name = "dgx-a100 x " + std::to_string(nodes);
    const Bytes unit = static_cast<Bytes>(8 * t.ranks());
    const Bytes gib = (Bytes(1) << 30) / (6 * unit) * (6 * unit);  // whole pieces for 1, 2 and 3 chunks
    for (Collective op : {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather})
      cases.push_back({name + " " + std::string(to_string(op)), &t, ring_spec(t, op, 8, gib, 1, 0)});
    for (double reduce_Bps : {200e9, 5e9})
      cases.push_back({name + " reduce " + std::to_string(reduce_Bps), &t,
                       ring_spec(t, Collective::AllReduce, 8, gib, 1, reduce_Bps)});
    for (int chunks : {2, 3})
      cases.push_back({name + " chunks " + std::to_string(chunks), &t,
                       ring_spec(t, Collective::AllReduce, 8, gib, chunks, chunks == 3 ? 50e9 : 0)});
  }
  cases.push_back({"astra ring 64", &astra, ring_spec(astra, Collective::AllReduce, 1, Bytes(64) << 20, 1, 0)});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::optional<RingSymmetry> symmetry = find_ring_symmetry({c.spec}, *c.topology);
    ASSERT_TRUE(symmetry.has_value());
    std::uint64_t skipped = 0;
    const Outcome stepwise = run({c.spec}, *c.topology, *symmetry, true);
    const Outcome fast = run({c.spec}, *c.topology, *symmetry, true, true, &skipped);
    EXPECT_GT(skipped, 0u);
    EXPECT_EQ(fast.finished_at, stepwise.finished_at);
    for (int k = 0; k < kLinkClassCount; ++k) {
      EXPECT_EQ(fast.usage.bytes[k], stepwise.usage.bytes[k]) << "link class " << k;
      EXPECT_NEAR(fast.usage.busy_s[k], stepwise.usage.busy_s[k], 1e-9 * stepwise.usage.busy_s[k]) << "class " << k;
    }
    EXPECT_LT(fast.events, stepwise.events);
  }
}

// ASTRA's 1-D ring: one position stands for all (n = 1, so a transfer's two dependents can be one operation), with
// one and three chunks, each ring collective, reductions free, about as fast as the link (20 GB/s against 50 GB/s
// and 0.5 us per hop) and far slower (2 GB/s: the last reduce-scatter step's reductions are still running when the
// first allgather step's transfers, which wait for none, deliver their pieces, so pieces arrive out of order).
TEST(RingRun, OnePositionRingEveryCollective) {
  LinkParams link;
  link.latency_s = 500e-9;
  link.bandwidth_Bps = 50e9;
  const AstraTopology t("ring", "", {{BlockKind::Ring, 16, link}});
  for (Collective op : {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather})
    for (int chunks : {1, 3})
      for (double reduce_Bps : {0.0, 20e9, 2e9})
        expect_same(
            {ring_spec(t, op, 1, Bytes(16 * 3) << 14, chunks, reduce_Bps)}, t,
            std::string(to_string(op)) + " chunks " + std::to_string(chunks) + " reduce " + std::to_string(reduce_Bps));
}

// dgx-a100: 4 nodes admit the rotation by a node and the channel map (8 positions of channel 0); 3 nodes the channel
// map only (all 24 positions, the ring wrapping at n = p). Reductions slower than NVLink, so they queue up.
TEST(RingRun, DgxA100RotationAndChannelMap) {
  for (int nodes : {3, 4}) {
    const std::unique_ptr<Topology> t = load_topology(shipped("dgx-a100"), nodes);
    const Bytes unit = static_cast<Bytes>(8 * t->ranks()) << 12;
    for (int chunks : {1, 2})
      for (double reduce_Bps : {0.0, 100e9, 5e9})
        expect_same({ring_spec(*t, Collective::AllReduce, 8, 6 * unit, chunks, reduce_Bps)}, *t,
                    "nodes " + std::to_string(nodes) + " chunks " + std::to_string(chunks));
  }
}

// Contended: two streams on one communicator share every link (an allreduce and an allgather, then a reduce-scatter
// beside an allreduce), so rates are max-min shares that depend on both runs' order of issue.
TEST(RingRun, TwoStreamsSharingLinks) {
  for (const char* name : {"dgx-a100", "astra-ring-switch", "dgx1-v100"}) {
    const std::unique_ptr<Topology> t = load_topology(shipped(name), 4);
    const int channels = t->default_channels();
    const Bytes unit = static_cast<Bytes>(channels) * static_cast<Bytes>(t->ranks()) << 14;
    expect_same({ring_spec(*t, Collective::AllReduce, channels, 3 * unit, 1, 0),
                 ring_spec(*t, Collective::AllGather, channels, 5 * unit, 1, 0)},
                *t, std::string(name) + " allreduce + allgather");
    expect_same({ring_spec(*t, Collective::ReduceScatter, channels, 2 * unit, 2, 50e9),
                 ring_spec(*t, Collective::AllReduce, channels, 7 * unit, 1, 50e9)},
                *t, std::string(name) + " reduce-scatter + allreduce");
  }
}

// The case that showed pieces arriving out of order (`commsim collective --topology topologies/astra-ring-switch.json
// --nodes 1 --chunks 3 --reduce-Bps 50e9 --fidelity flow`): 8 NPUs, one position, reductions slower than the links.
TEST(RingRun, ReductionsOvertakenByTheAllgather) {
  const std::unique_ptr<Topology> t = load_topology(shipped("astra-ring-switch"), 1);
  const Bytes unit = static_cast<Bytes>(t->ranks()) * 3 << 12;
  expect_same({ring_spec(*t, Collective::AllReduce, 1, 256 * unit, 3, 50e9)}, *t, "astra-ring-switch x 1");
}

// Links the symmetry fixes (the emulated cluster's shared NICs, weight 2 in the quotient), through the channel map.
TEST(RingRun, LinksFixedByTheSymmetry) {
  const std::unique_ptr<Topology> t = load_unshaped(shipped("emulated-cpu-cluster"));
  const Bytes unit = static_cast<Bytes>(2 * t->ranks()) << 14;
  expect_same({ring_spec(*t, Collective::AllReduce, 2, 4 * unit, 1, 0),
               ring_spec(*t, Collective::ReduceScatter, 2, 3 * unit, 1, 10e9)},
              *t, "emulated cluster", true);
}

}  // namespace
}  // namespace commsim::test
