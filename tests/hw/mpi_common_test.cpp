// What the hardware backends share (hw/common), without MPI: dtype casts, verifiable inputs, step statistics, DGC
// selection, plan buffers and memory, which topologies can be emulated -- and the schedule programs, executed here
// for all ranks in one process by a reference interpreter, so every generator's offsets are checked on real data.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <tuple>

#include "hw/common/dgc.hpp"
#include "hw/common/dtype.hpp"
#include "hw/common/emulation.hpp"
#include "hw/common/plan_buffers.hpp"
#include "hw/common/schedule_program.hpp"
#include "hw/common/verifiable.hpp"
#include "sim/collective/collective.hpp"
#include "sim/core/error.hpp"
#include "sim/core/statistics.hpp"
#include "sim/step/simulation.hpp"

namespace {

using namespace commsim;
using namespace commsim::hw;

// ---- dtype -------------------------------------------------------------------------------------------------

// IEEE half: 1.0 = 0x3c00; 65504 is the largest finite (0x7bff); from 65520 on, rounding goes to infinity; 2^-24 is
// the smallest subnormal. 1 + 2^-11 lies halfway between 1 and the next half (1 + 2^-10): ties go to the even
// mantissa (1.0); 1 + 3 x 2^-11 lies halfway between mantissas 1 and 2: it goes to 2 (0x3c02).
TEST(Dtype, HalfRoundsToNearestEven) {
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  // Every finite half survives the round trip through float.
  for (std::uint32_t bits = 0; bits < 0x10000; ++bits) {
    if ((bits & 0x7c00) == 0x7c00) continue;
    ASSERT_EQ(float_to_half(half_to_float(static_cast<std::uint16_t>(bits))), bits) << bits;
  }
}

// bf16 keeps float's exponent and 7 mantissa bits: 1.0 = 0x3f80; 1 + 2^-8 is a tie (to 1.0), 1 + 3 x 2^-8 a tie
// between mantissas 1 and 2 (to 2: 0x3f82).
TEST(Dtype, Bf16RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  EXPECT_EQ(float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_EQ(bf16_to_float(0x3f80), 1.0f);
}

// OCP E4M3: 1.0 = exponent 7, mantissa 0 = 0x38; the largest finite is 448 = 0x7e and larger values saturate to it;
// 2^-9 is the smallest subnormal (0x01). 1 + 1/16 is a tie between 1.0 and 1.125 (to 1.0); 1 + 3/16 a tie between
// mantissas 1 and 2 (to 2: 1.25 = 0x3a).
TEST(Dtype, Fp8E4m3RoundsAndSaturates) {
  EXPECT_EQ(float_to_fp8_e4m3(1.0f), 0x38);
  EXPECT_EQ(float_to_fp8_e4m3(448.0f), 0x7e);
  EXPECT_EQ(float_to_fp8_e4m3(1000.0f), 0x7e);
  EXPECT_EQ(float_to_fp8_e4m3(-1000.0f), 0xfe);
  EXPECT_EQ(float_to_fp8_e4m3(std::ldexp(1.0f, -9)), 0x01);
  EXPECT_EQ(float_to_fp8_e4m3(1.0625f), 0x38);
  EXPECT_EQ(float_to_fp8_e4m3(1.1875f), 0x3a);
  EXPECT_EQ(fp8_e4m3_to_float(0x7e), 448.0f);
  for (std::uint32_t bits = 0; bits < 0x100; ++bits) {
    if ((bits & 0x7f) == 0x7f) continue;  // NaN
    ASSERT_EQ(float_to_fp8_e4m3(fp8_e4m3_to_float(static_cast<std::uint8_t>(bits))), bits) << bits;
  }
}

// The executor's one-pass unpack must give the gradients the checked path gives: widen, then divide (the average of
// 8 ranks: 3.0 / 8 = 0.375 exactly, and a value no dtype holds exactly still divides the same rounded value).
TEST(Dtype, CastToFloatDividedIsTheCastThenTheDivision) {
  const std::vector<float> values = {3.0f, -1.0f, 0.1f, 448.0f, 1e-3f, 0.0f, 65504.0f, -7.25f};
  for (CommDtype d : {CommDtype::Fp32, CommDtype::Fp16, CommDtype::Bf16, CommDtype::Fp8}) {
    std::vector<std::byte> vector(values.size() * element_bytes(d));
    cast_from_float(d, values.data(), vector.data(), values.size());
    std::vector<float> widened(values.size()), divided(values.size());
    cast_to_float(d, vector.data(), widened.data(), values.size());
    cast_to_float_divided(d, vector.data(), divided.data(), values.size(), 8.0f);
    for (std::size_t i = 0; i < values.size(); ++i) EXPECT_EQ(divided[i], widened[i] / 8.0f) << i;
    EXPECT_EQ(divided[0], 0.375f);
  }
}

// ---- verifiable inputs -------------------------------------------------------------------------------------

// The sum of `ranks` values below bound() must stay within the dtype's exact integers: 2^24, 2048, 256, 16.
TEST(Verifiable, SumsStayExactInEveryDtype) {
  const std::map<CommDtype, double> exact = {
      {CommDtype::Fp32, 16777216}, {CommDtype::Fp16, 2048}, {CommDtype::Bf16, 256}, {CommDtype::Fp8, 16}};
  for (auto [dtype, limit] : exact)
    for (int ranks : {2, 3, 4, 8}) {
      const Verifiable v{ranks, dtype, 1};
      EXPECT_LE(ranks * (v.bound() - 1.0), limit);
      for (std::uint64_t i = 0; i < 100; ++i) {
        EXPECT_LT(v.value(ranks - 1, i, 3), v.bound());
        EXPECT_EQ(round_to(dtype, static_cast<float>(v.sum(i, 3))), v.sum(i, 3));
      }
    }
  // 4 ranks in fp8: 16 / 4 = 4, values 0..3.
  EXPECT_EQ((Verifiable{4, CommDtype::Fp8, 1}.bound()), 4u);
}

// ---- step statistics ---------------------------------------------------------------------------------------

// {1, 2, 3, 4}: median 2.5; type-7 quartiles at positions 0.75 and 2.25 -> 1.75 and 3.25; half the IQR 0.75.
// A 100x outlier moves the mean by a lot and the median of five values not at all beyond its neighbour.
TEST(StepStats, MedianAndHalfInterquartileRange) {
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(half_interquartile_range({1, 2, 3, 4}), 0.75);
  EXPECT_DOUBLE_EQ(median({1, 1, 1, 1, 100}), 1.0);
  EXPECT_DOUBLE_EQ(median({}), 0.0);
}

// ---- DGC ---------------------------------------------------------------------------------------------------

// |values| = 0.5, 3, 2, 2, 1: the two largest are 3 (index 1) and one of the tied 2s, the lower index (2).
TEST(Dgc, TopKTakesLargestMagnitudesTiesToLowerIndex) {
  const float values[] = {0.5f, -3.0f, 2.0f, -2.0f, 1.0f};
  EXPECT_EQ(top_k_indices(values, 5, 2), (std::vector<std::uint32_t>{1, 2}));
  EXPECT_EQ(top_k_indices(values, 5, 3), (std::vector<std::uint32_t>{1, 2, 3}));
  EXPECT_EQ(top_k_indices(values, 5, 9).size(), 5u);
  // Two ranks' pairs add into one dense vector: index 1 gets both contributions.
  float dense[5] = {};
  const float a[] = {-3.0f, 2.0f}, b[] = {4.0f};
  const std::uint32_t ia[] = {1, 2}, ib[] = {1};
  accumulate_sparse(dense, a, ia, 2);
  accumulate_sparse(dense, b, ib, 1);
  EXPECT_EQ(dense[1], 1.0f);
  EXPECT_EQ(dense[2], 2.0f);
  EXPECT_EQ(dense[0], 0.0f);
}

// The sampled threshold only narrows the candidates: the selection must equal the definition (sort by magnitude
// descending, ties by index ascending, take k, return in index order) for every k, including vectors with many ties
// (values from a small set) where the sample's estimate lands on a tie, heavy tails, and k = count.
TEST(Dgc, TopKEqualsTheDefinitionOnRandomVectors) {
  std::mt19937 random(7);
  for (int trial = 0; trial < 60; ++trial) {
    const std::size_t count = 1 + random() % 200000;
    std::vector<float> values(count);
    std::normal_distribution<float> normal;
    std::uniform_int_distribution<int> small(-20, 20);
    for (float& v : values)
      v = trial % 3 == 0 ? static_cast<float>(small(random)) : normal(random) * (trial % 3 == 1 ? 1 : normal(random));
    std::vector<std::uint32_t> order(count);
    for (std::size_t i = 0; i < count; ++i) order[i] = static_cast<std::uint32_t>(i);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return std::fabs(values[a]) > std::fabs(values[b]); });
    for (double share : {0.001, 0.01, 0.1, 0.5, 1.0}) {
      const std::size_t k = std::max<std::size_t>(1, static_cast<std::size_t>(share * static_cast<double>(count)));
      std::vector<std::uint32_t> expected(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k));
      std::sort(expected.begin(), expected.end());
      ASSERT_EQ(top_k_indices(values.data(), count, k), expected)
          << "trial " << trial << " count " << count << " k " << k;
    }
  }
}

// ---- schedule programs, executed in one process ------------------------------------------------------------

// A reference interpreter: runs every rank's program in lock-step; a transfer happens when both its Send and its
// Receive are ready. Returns false if it gets stuck (a deadlock the MPI executor would hit too).
bool interpret(const std::vector<RankProgram>& programs, std::vector<std::vector<float>>& vectors) {
  const std::size_t ranks = programs.size();
  std::vector<std::vector<char>> done(ranks);
  std::vector<std::vector<float>> staging(ranks);
  for (std::size_t r = 0; r < ranks; ++r) {
    done[r].assign(programs[r].actions.size(), 0);
    staging[r].assign(programs[r].staging_elements, 0);
  }
  auto ready = [&](std::size_t r, std::size_t a) {
    if (done[r][a]) return false;
    for (int d : programs[r].actions[a].deps)
      if (!done[r][d]) return false;
    return true;
  };
  for (bool progress = true; progress;) {
    progress = false;
    for (std::size_t r = 0; r < ranks; ++r)
      for (std::size_t a = 0; a < programs[r].actions.size(); ++a) {
        if (!ready(r, a)) continue;
        const Action& act = programs[r].actions[a];
        if (act.kind == Action::Kind::Join) {
          done[r][a] = progress = true;
        } else if (act.kind == Action::Kind::Reduce) {
          for (std::uint64_t e = 0; e < act.range.count; ++e)
            vectors[r][act.range.offset + e] += staging[r][act.staging_offset + e];
          done[r][a] = progress = true;
        } else if (act.kind == Action::Kind::Receive) {
          const RankProgram& sender = programs[act.peer];
          for (std::size_t s = 0; s < sender.actions.size(); ++s) {
            const Action& send = sender.actions[s];
            if (send.kind != Action::Kind::Send || send.tag != act.tag || !ready(act.peer, s)) continue;
            EXPECT_EQ(send.range, act.range);
            float* to =
                act.staging_offset >= 0 ? staging[r].data() + act.staging_offset : vectors[r].data() + act.range.offset;
            std::memcpy(to, vectors[act.peer].data() + send.range.offset, act.range.count * sizeof(float));
            done[act.peer][s] = done[r][a] = progress = true;
          }
        }
      }
  }
  for (const auto& d : done)
    for (char x : d)
      if (!x) return false;
  return true;
}

struct Case {
  Collective op;
  Algorithm algorithm;
  int ranks;
  std::uint64_t elements;
  int channels;
};

std::string name(const Case& c) {
  return std::string(to_string(c.op)) + "/" + std::string(to_string(c.algorithm)) + " p=" + std::to_string(c.ranks) +
         " n=" + std::to_string(c.elements) + " channels=" + std::to_string(c.channels);
}

// Topology: 4 nodes x 2 CPU ranks (topologies/emulated-cpu-cluster.json); the collective uses its first p ranks.
//   node0: r0 r1 | node1: r2 r3 | node2: r4 r5 | node3: r6 r7
void expect_exact(const Case& c) {
  SCOPED_TRACE(name(c));
  const auto topology = load_topology("topologies/emulated-cpu-cluster.json");
  CollectiveSpec spec;
  spec.op = c.op;
  spec.algorithm = c.algorithm;
  spec.bytes = c.elements;
  spec.unit_bytes = 4;
  spec.reduce_Bps = 1;
  spec.channels = c.channels;
  spec.ranks_per_node = topology->ranks_per_node();
  for (int r = 0; r < c.ranks; ++r) spec.ranks.push_back(r);
  Schedule schedule;
  std::vector<OpId> frontier(topology->ranks(), kNoOp);
  generate(spec, *topology, schedule, frontier);
  std::vector<RankProgram> programs;
  for (int r = 0; r < c.ranks; ++r) programs.push_back(rank_program(schedule, r));
  const Verifiable v{c.ranks, CommDtype::Fp32, 1};
  std::vector<std::vector<float>> vectors(c.ranks, std::vector<float>(c.elements));
  for (int r = 0; r < c.ranks; ++r)
    for (std::uint64_t i = 0; i < c.elements; ++i) vectors[r][i] = v.value(r, i, 1);
  ASSERT_TRUE(interpret(programs, vectors)) << "stuck";
  // The expected result, from the collective's definition alone.
  std::vector<std::set<int>> covered(c.elements);  // reduce-scatter: which ranks hold element i reduced
  for (int r = 0; r < c.ranks; ++r) {
    if (c.op == Collective::AllReduce) {
      for (std::uint64_t i = 0; i < c.elements; ++i)
        ASSERT_EQ(vectors[r][i], v.sum(i, 1)) << "rank " << r << " element " << i;
    } else if (c.op == Collective::ReduceScatter) {
      for (const Range& range : programs[r].reduced)
        for (std::uint64_t i = range.offset; i < range.offset + range.count; ++i) {
          ASSERT_EQ(vectors[r][i], v.sum(i, 1)) << "rank " << r << " element " << i;
          covered[i].insert(r);
        }
    } else if (c.op == Collective::AllGather) {
      for (int owner = 0; owner < c.ranks; ++owner)
        for (const Range& range : programs[owner].contributed)
          for (std::uint64_t i = range.offset; i < range.offset + range.count; ++i)
            ASSERT_EQ(vectors[r][i], v.value(owner, i, 1));
    }
  }
  if (c.op ==
      Collective::ReduceScatter) {  // the blocks partition the vector: every element reduced by exactly one rank
    for (std::uint64_t i = 0; i < c.elements; ++i) ASSERT_EQ(covered[i].size(), 1u) << "element " << i;
  }
  if (c.op == Collective::AllGather) {  // the contributions partition the vector too
    std::uint64_t total = 0;
    for (const RankProgram& p : programs)
      for (const Range& range : p.contributed) total += range.count;
    EXPECT_EQ(total, c.elements);
  }
}

// Every allreduce algorithm gives every rank the exact sum, for rank counts that do and do not divide the size,
// with one and two channels; 2d-ring needs whole nodes (2 ranks each) and one channel (see its data layout).
TEST(ScheduleProgram, EveryAllreduceAlgorithmIsExactOnRealData) {
  for (Algorithm a :
       {Algorithm::Ring, Algorithm::Tree, Algorithm::HalvingDoubling, Algorithm::Hierarchical, Algorithm::Ring2D})
    for (int p : {2, 3, 4, 5, 8})
      for (std::uint64_t n : {1ull, 7ull, 1000ull, 4099ull})
        for (int channels : {1, 2}) {
          if (a == Algorithm::Ring2D && (p % 2 != 0 || channels > 1)) continue;
          if (a == Algorithm::Hierarchical && p % std::max(1, p / 2) != 0) continue;  // equal groups of a node's ranks
          expect_exact({Collective::AllReduce, a, p, n, channels});
        }
}

// Reduce-scatter leaves each rank one block, the blocks partition the vector; allgather fills every rank's vector
// with each owner's block (ring, one channel: each rank's block is one range).
TEST(ScheduleProgram, ReduceScatterAndAllgatherPartitionTheVector) {
  for (Collective op : {Collective::ReduceScatter, Collective::AllGather})
    for (int p : {2, 3, 4})
      for (std::uint64_t n : {5ull, 12ull, 1001ull}) expect_exact({op, Algorithm::Ring, p, n, 1});
}

// A tree pipelines its data in chunks (here 1 MiB of floats -> 2 chunks of 512 KiB per half); the program must
// still be exact, and buffer-hazard dependencies must not deadlock it.
TEST(ScheduleProgram, PipelinedTreeIsExact) {
  expect_exact({Collective::AllReduce, Algorithm::Tree, 4, 262144 * 2, 1});
}

// ---- plan buffers, memory, emulation -----------------------------------------------------------------------

// emulated-tiny: mlp-small (669 706 parameters) in two buckets; each bucket is one contiguous range.
TEST(PlanBuffers, BucketsAreContiguousAndMemoryIsChecked) {
  const Json document = read_json_file("scenarios/emulated-tiny.json");
  const Scenario scenario = parse_scenario(document, "scenarios/emulated-tiny.json");
  const auto topology = load_topology(scenario.topology_path, scenario.nodes);
  const Plan plan = build_plan(scenario, *topology, load_model(scenario.model_path));
  const GradientLayout layout = gradient_layout(plan);
  EXPECT_EQ(layout.elements, 669706u);
  for (const Bucket& b : plan.buckets) EXPECT_EQ(layout.ranges(b.tensors, plan.model).size(), 1u);
  // 4 ranks x (4 B x 669 706 gradients + 2 streams x 16 B x the largest bucket) is well under 1 GB ...
  EXPECT_NO_THROW(check_memory(plan, 1000000000));
  // ... and over 1 MB: one line naming the scenario and saying "memory".
  try {
    check_memory(plan, 1000000);
    FAIL() << "1 MB accepted";
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("emulated-tiny.json"), std::string::npos) << message;
    EXPECT_NE(message.find("memory"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

// A piece (strategy.partition_mb) is cut out of its tensors' ranges in their listed order. The 3-layer test model in
// one bucket (backward order: l2, l1, l0 of 786 432 elements each) lays l2 at 0, l1 at 786 432, l0 at 1 572 864.
// A task over tensors {0, 2} (l0, then l2: two separate ranges) with piece [700 000, 900 000): the last 86 432
// elements of l0 (from 1 572 864 + 700 000), then the first 113 568 of l2 (from 0).
TEST(PlanBuffers, APieceIsCutFromItsTensorsInTheirOrder) {
  const SimulationRun run =
      prepare_run("tests/data/training/priority-3layer.json", {R"(strategy.fusion={"mode":"size","size_mb":1000})"}, 0);
  const GradientLayout layout = gradient_layout(run.plan);
  Task task;
  task.tensors = {0, 2};
  task.piece = {700000, 200000};
  EXPECT_EQ(layout.task_ranges(task, run.plan.model), (std::vector<Range>{{2272864, 86432}, {0, 113568}}));
  task.piece = {};  // not a piece: the tensors whole
  EXPECT_EQ(layout.task_ranges(task, run.plan.model), (std::vector<Range>{{1572864, 786432}, {0, 786432}}));
}

// The emulated-cpu-cluster topology is what hw/cluster builds: 4 nodes x 2 ranks, NICs at its tcp class's 125e6 B/s.
// A DGX (GPUs) or more than 64 nodes cannot be emulated: one line naming the field.
TEST(Emulation, OnlyCpuRanksOnOneTcpSwitch) {
  const Emulation e = emulation_for("topologies/emulated-cpu-cluster.json");
  EXPECT_EQ(e.cluster.nodes, 4);
  EXPECT_EQ(e.ranks_per_node, 2);
  EXPECT_EQ(e.cluster.nic_bandwidth_Bps, 125e6);
  EXPECT_EQ(emulation_for("topologies/emulated-cpu-cluster.json", 2).cluster.nodes, 2);
  for (auto [file, nodes, mentions] : {std::tuple{"topologies/dgx-a100.json", 0, "gpu"},
                                       std::tuple{"topologies/emulated-cpu-cluster.json", 65, "64"}}) {
    try {
      emulation_for(file, nodes);
      ADD_FAILURE() << file << " accepted";
    } catch (const InputError& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find(mentions), std::string::npos) << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
  }
}

}  // namespace
