// Schedules lumped by the coarsest equitable partition (sim/network/flow_partition.hpp) against the full schedules.
// Why the results must be identical: the operations of a class start together (their dependencies' classes finish
// together), get equal max-min rates (a link class saturates as a whole in progressive filling) and finish
// together, so one representative per class standing for the class gives the same picoseconds. A difference would
// be a bug in the partition or the weights, so makespans (whole picoseconds) and bytes per link class (sums of whole
// bytes) are compared with ==; busy time is a sum of seconds in another order: equal to 1e-12 relative for one
// collective, 1e-10 for a training step's (up to ~10^5 intervals summed, each addition rounding by 1.1e-16).
#include "sim/network/flow_partition.hpp"

#include "sim/engine/executor.hpp"
#include "sim/step/simulation.hpp"
#include "tests/sim/test_util.hpp"

namespace commsim::test {
namespace {

struct Lumped {
  ScheduleResult full, lumped;
  std::uint64_t operations = 0, classes = 0;
};

// Runs `schedule` alone, in full and lumped, each on its own flow network from time 0.
Lumped run_both(const Schedule& schedule, const Topology& t, double reduce_Bps) {
  Lumped out;
  out.full = run_schedule(schedule, t, Network::Flow, reduce_Bps);
  const std::optional<LumpedSchedules> lumped = lump_schedules({&schedule}, t);
  EXPECT_TRUE(lumped.has_value());
  if (!lumped) return out;
  EventQueue queue;
  const std::unique_ptr<NetworkModel> network = make_quotient_flow_network(t, queue, lumped->quotient);
  out.lumped = simulate_schedule(lumped->schedules[0], *network, queue, reduce_Bps);
  out.operations = lumped->operations;
  out.classes = lumped->classes;
  return out;
}

void expect_same(const Lumped& r, const std::string& what) {
  EXPECT_EQ(r.lumped.seconds, r.full.seconds) << what;
  for (int c = 0; c < kLinkClassCount; ++c) {
    EXPECT_EQ(r.lumped.usage.bytes[c], r.full.usage.bytes[c]) << what << " link class " << c;
    EXPECT_NEAR(r.lumped.usage.busy_s[c], r.full.usage.busy_s[c], 1e-12 * r.full.usage.busy_s[c]) << what;
  }
}

Schedule schedule_of(CollectiveSpec spec, const Topology& t) {
  Schedule s;
  std::vector<OpId> frontier(t.ranks(), kNoOp);
  generate(spec, t, s, frontier);
  return s;
}

// Two nodes of two ranks, ring allreduce as one flow per edge (aggregate): per position a delay, the transfer to the
// next position, a reduce of what arrived, 12 operations. The ring 0 -> 1 -> 2 -> 3 -> 0 has two edges inside a node
// (0 -> 1, 2 -> 3) and two between nodes (1 -> 2, 3 -> 0), alike by symmetry of the two nodes. Classes: the 4
// delays (equal, waiting for nothing), 2 kinds of transfer, and 2 kinds of reduce (after an edge inside a node or
// between nodes): 5 classes.
TEST(FlowPartition, RingOfTwoNodesHasFiveClasses) {
  const std::unique_ptr<Topology> t = load_unshaped(shipped("emulated-cpu-cluster"), 2);
  ASSERT_EQ(t->ranks(), 4);
  CollectiveSpec spec = make_spec(*t, Collective::AllReduce, Algorithm::Ring, Bytes(4) << 20, 1e10);
  spec.aggregate = true;
  const Lumped r = run_both(schedule_of(spec, *t), *t, spec.reduce_Bps);
  EXPECT_EQ(r.operations, 12u);
  EXPECT_EQ(r.classes, 5u);
  expect_same(r, "aggregated ring, 2 x 2 ranks");
}

// Every shipped topology on 3 nodes (an odd count: rings cross the fabric unevenly), every algorithm the topology
// can run for allreduce, whole schedules and aggregated rings, at a size that divides evenly and one that does not
// (ring pieces then differ by a byte and land in different classes).
TEST(FlowPartition, LumpedEqualsFullOnEveryShippedTopology) {
  int cases = 0;
  for (const char* name : kShippedTopologies) {
    const std::unique_ptr<Topology> t = load_unshaped(shipped(name), 3);
    if (t->ranks() > 96) continue;  // the full run stays quick
    for (Algorithm algo : {Algorithm::Ring, Algorithm::Tree, Algorithm::HalvingDoubling, Algorithm::Hierarchical})
      for (Bytes bytes : {Bytes(24) << 20, (Bytes(1) << 20) + 7})
        for (bool aggregate : {false, true}) {
          if (aggregate && algo != Algorithm::Ring) continue;
          CollectiveSpec spec = make_spec(*t, Collective::AllReduce, algo, bytes, 2e10);
          spec.aggregate = aggregate;
          const std::string what = std::string(name) + " " + std::string(to_string(algo)) + " " +
                                   std::to_string(bytes) + (aggregate ? " aggregated" : "");
          const Lumped r = run_both(schedule_of(spec, *t), *t, spec.reduce_Bps);
          expect_same(r, what);
          // Where it must lump: the nodes of every shipped topology are alike, so a ring whose pieces are equal
          // (24 MiB over 3 x 8 ranks), whole or aggregated, has classes of at least the 3 images of an operation
          // under the rotations by a node. (A ring of unequal pieces, or a tree, can have few operations alike.)
          if (algo == Algorithm::Ring && bytes % static_cast<Bytes>(t->ranks()) == 0) {
            EXPECT_LE(r.classes * 3, r.operations) << what;
          }
          ++cases;
        }
  }
  EXPECT_GT(cases, 200);
}

// Training steps in flow fidelity, lumped and in full: two communication streams whose collectives share every link
// (GPT-3-shaped, nccl_comm_num 2; dgx-a100 at 3 and 5 nodes, 5 nodes aggregating its rings; ResNet-50 over 23
// nodes), and the seeds' techniques on the cloud cluster: DGC's sparse all-gather beside dense allreduces on two
// streams, hierarchical allreduce, Local SGD. Step times and breakdowns are compared to the picosecond.
TEST(FlowPartition, TrainingStepsLumpedEqualFull) {
  struct Case {
    std::string file;
    std::vector<std::string> sets;
    int steps;
  };
  const std::string resnet = "scenarios/resnet50-cloud-p3.json";
  const std::vector<Case> cases = {
      {"scenarios/gpt3-175b-dgx-a100.json", {"nodes=3"}, 1},
      {"scenarios/gpt3-175b-dgx-a100.json", {"nodes=5"}, 1},
      // 23 nodes: a whole 20-node leaf and 3 nodes of the next, so rings cross the spine where no rotation maps
      // the fabric onto itself (no automorphism beyond the channels); the edges still fall into a few classes.
      {"scenarios/resnet50-dgx-a100.json", {"nodes=23", "strategy.nccl_comm_num=2"}, 1},
      {resnet,
       {"strategy.nccl_comm_num=2", R"(strategy.dgc={"rampup_begin_step":0,"rampup_step":1,"sparsity":[0.999]})"},
       2},
      {resnet, {"strategy.use_hierarchical_allreduce=true", "strategy.hierarchical_allreduce_leaders=4"}, 2},
      {resnet, {R"(strategy.localsgd={"k_steps":2,"begin_step":0})"}, 4},
  };
  for (const Case& c : cases) {
    SimulationRun run = prepare_run(c.file, c.sets, c.steps);
    const Result classes = simulate_plan(run.plan, *run.topology, Fidelity::Flow, {}, FlowLumping::Classes);
    const Result full = simulate_plan(run.plan, *run.topology, Fidelity::Flow, {}, FlowLumping::None);
    const std::string what = c.file + " " + c.sets.front();
    EXPECT_EQ(classes.step_time_s, full.step_time_s) << what;
    EXPECT_EQ(classes.steps_s, full.steps_s) << what;
    EXPECT_EQ(classes.exposed_comm_s, full.exposed_comm_s) << what;
    EXPECT_EQ(classes.stream_busy_s, full.stream_busy_s) << what;
    for (const auto& [link_class, busy_s] : full.link_class_busy_s)
      EXPECT_NEAR(classes.link_class_busy_s.at(link_class), busy_s, 1e-10 * busy_s) << what << " " << link_class;
  }
}

}  // namespace
}  // namespace commsim::test
