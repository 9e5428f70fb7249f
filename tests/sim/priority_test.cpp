// ByteScheduler's priority scheduling with tensor partitioning (strategy.priority forward_order,
// strategy.partition_mb), on the hand-worked case tests/data/training/priority-3layer.json:
//
//   3 layers, one 3 MiB fp32 tensor each, one bucket per layer (fusion none), one communication stream;
//   forward f = 1 ms and backward b = 2.25 ms per layer; 4 ranks on links of 1.572864e9 B/s without latency, so a
//   ring allreduce of 1 MiB takes 2 (p - 1) / p x 1 MiB / beta = 1.5 x 1048576 / 1.572864e9 = 1 ms: a layer's
//   allreduce c = 3 ms, or three 1 MiB pieces of 1 ms with partition_mb = 1. Memory is 3e18 B/s, so reductions and
//   copies cost picoseconds (the 1e-9 tolerance covers them). Times below in ms from the step's first forward.
//
//   Backward runs l2, l1, l0: b2 3-5.25, b1 5.25-7.5, b0 7.5-9.75; layer i's gradients are ready at its end.
//
//   FIFO (the Plan's order, backward order; the next step starts after all of this one's communication):
//     c2 5.25-8.25, c1 8.25-11.25 (ready 7.5), c0 11.25-14.25 (ready 9.75): step = 14.25 ms.
//   FIFO with 1 MiB pieces: the same order, piece after piece: 14.25 ms.
//   forward_order without pieces: at 8.25 only c1 is ready (c0 at 9.75), and a collective, once started, runs to
//     its end: the same order, c0 ends at 14.25, so the next forward of l0 starts at 14.25: 14.25 ms.
//   forward_order with 1 MiB pieces: c2 pieces 5.25-8.25; at 8.25 the c1 pieces wait: c1a 8.25-9.25, c1b 9.25-
//     10.25; at 10.25 the c0 pieces (ready 9.75) go first: 10.25-13.25; then c1c 13.25-14.25. The next step's
//     forward of l0 waits only for c0: 13.25-14.25; of l1 for c1 (14.25) and f0 (14.25): 14.25-15.25; l2 (c2 done
//     at 8.25) 15.25-16.25, and the next step repeats the same shape 13.25 ms later: step = 13.25 ms, 1 ms saved.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/step/simulation.hpp"

namespace commsim {
namespace {

const std::string kScenario = "tests/data/training/priority-3layer.json";

Result simulate(const std::vector<std::string>& sets) {
  return simulate_scenario(kScenario, sets, 0, Fidelity::Analytical).result;
}

TEST(Priority, HandWorkedThreeLayers) {
  const Result fifo = simulate({});
  const Result fifo_pieces = simulate({"strategy.partition_mb=1"});
  const Result priority = simulate({"strategy.priority=forward_order"});
  const Result priority_pieces = simulate({"strategy.priority=forward_order", "strategy.partition_mb=1"});
  EXPECT_NEAR(fifo.step_time_s, 14.25e-3, 1e-9);
  EXPECT_NEAR(fifo_pieces.step_time_s, 14.25e-3, 1e-9);
  EXPECT_NEAR(priority.step_time_s, 14.25e-3, 1e-9);
  EXPECT_NEAR(priority_pieces.step_time_s, 13.25e-3, 1e-9);
  // Every step of the run, the first and the last included, is the same 13.25 ms: a step lasts from its first
  // forward to the next one's (the simulator runs one step more than asked so that the last one ends too).
  ASSERT_EQ(priority_pieces.steps_s.size(), 4u);
  for (double s : priority_pieces.steps_s) EXPECT_NEAR(s, 13.25e-3, 1e-9);
  // The work is the same: 9.75 ms of compute and 9 ms of communication per step; only the exposed part shrinks,
  // 14.25 - 9.75 = 4.5 ms to 13.25 - 9.75 = 3.5 ms.
  EXPECT_NEAR(priority_pieces.compute_s, 9.75e-3, 1e-12);
  EXPECT_NEAR(priority_pieces.comm_s, 9e-3, 1e-9);
  EXPECT_NEAR(fifo.exposed_comm_s - priority_pieces.exposed_comm_s, 1e-3, 1e-9);
}

TEST(Priority, SmallPiecesPayTheirFixedCosts) {
  // Each piece is a collective with the fixed costs of one (libraries/overheads.json): under PyTorch DDP on a
  // generic library, 20 us of framework work before it (per_bucket_us) and copies priced at memory speed
  // (picoseconds here). With all communication after backward (overlap false) a step is 9.75 ms of compute, then
  // 9 ms of allreduce plus 20 us per piece: 1 MiB pieces are 9 (3 per tensor), 1/4 MiB pieces 36, so the smaller
  // pieces cost 27 x 20 us = 540 us more.
  const std::vector<std::string> ddp = {R"(framework={"name":"pytorch_ddp"})", "strategy.overlap=false"};
  auto with = [&](const std::string& set) {
    std::vector<std::string> sets = ddp;
    sets.push_back(set);
    return simulate(sets);
  };
  const Result mib = with("strategy.partition_mb=1");
  const Result quarter = with("strategy.partition_mb=0.25");
  EXPECT_NEAR(mib.step_time_s, 9.75e-3 + 9e-3 + 9 * 20e-6, 1e-9);
  EXPECT_NEAR(quarter.step_time_s - mib.step_time_s, 27 * 20e-6, 1e-9);
}

TEST(Partition, PiecesCoverEachBucketOnceAcrossTensors) {
  // One bucket of the three tensors in backward order (l2, l1, l0: 786432 elements each) cut into 2 MiB pieces
  // (524288 fp32 elements): 4 full pieces and one of 2359296 - 4 x 524288 = 262144. Piece 1, elements [524288,
  // 1048576) of the bucket, is the last 262144 of l2 and the first 262144 of l1: tensors {2, 1} from offset 524288.
  const SimulationRun run =
      prepare_run(kScenario, {R"(strategy.fusion={"mode":"size","size_mb":1000})", "strategy.partition_mb=2"}, 0);
  std::vector<const Task*> pieces;
  for (const Task& t : run.plan.step_plans.at(0).tasks)
    if (t.kind == TaskKind::Collective) pieces.push_back(&t);
  ASSERT_EQ(pieces.size(), 5u);
  std::uint64_t covered = 0;
  for (const Task* t : pieces) covered += t->piece.count;
  EXPECT_EQ(covered, 3u * 786432u);
  EXPECT_EQ(pieces[1]->tensors, (std::vector<int>{2, 1}));
  EXPECT_EQ(pieces[1]->piece.offset, 524288u);
  EXPECT_EQ(pieces[1]->piece.count, 524288u);
  EXPECT_EQ(pieces[4]->piece.count, 262144u);
  EXPECT_EQ(pieces[4]->collective.bytes, 262144u * 4u);
}

TEST(Partition, TooManyPiecesAreRefused) {
  // 9 MiB of gradients in pieces of one fp32 element would be 2359296 collectives a step: refused, naming the knob.
  try {
    prepare_run(kScenario, {"strategy.partition_mb=0.000001"}, 0);
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("strategy.partition_mb"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace commsim
