// Simulator performance (BENCHMARKS.md has the figures, the command and the targets):
//  (a) flow-level ring allreduce of 1 GiB over 1024 GPUs (dgx-a100.json, 128 nodes), events/s and time;
//  (b) the same over 8192 GPUs (1024 nodes);
//  (c) the closed form (analytical fidelity) of the ring allreduce over 131 072 GPUs (16 384 nodes);
//  (d) a full training step of scenarios/gpt3-175b-dgx-a100.json (25 MB buckets, 2 streams): analytical on 16 384
//      GPUs, flow on 1 024 GPUs, loading and planning included (what `commsim simulate` does).
// Times: the CPU column is this process's CPU time (one core); Time is wall-clock, longer when the machine is
// shared. Flow cases take the number of channels as an argument: 1, or 8 (dgx-a100's default, one ring per NIC, what
// `commsim collective` uses). The schedule is generated once, outside the timed loop; generation has its own case.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "sim/collective/collective.hpp"
#include "sim/engine/executor.hpp"
#include "sim/network/symmetry.hpp"
#include "sim/step/simulation.hpp"
#include "sim/topology/astra_topology.hpp"
#include "sim/topology/topology.hpp"

namespace commsim {
namespace {

const std::string kDgxA100 = std::string(COMMSIM_SOURCE_DIR) + "/topologies/dgx-a100.json";
constexpr Bytes kGiB = Bytes(1) << 30;

const Topology& dgx_a100(int nodes) {
  static std::map<int, std::unique_ptr<Topology>> cache;
  auto& t = cache[nodes];
  if (!t) t = load_topology(kDgxA100, nodes);
  return *t;
}

CollectiveSpec ring_allreduce(const Topology& t, int channels) {
  CollectiveSpec s;
  s.op = Collective::AllReduce;
  s.algorithm = Algorithm::Ring;
  s.bytes = kGiB;
  s.channels = channels;
  s.ranks_per_node = t.ranks_per_node();
  return s;
}

// (a), (b): args {nodes, channels}.
void BM_FlowRingAllReduce(benchmark::State& state) {
  const Topology& t = dgx_a100(static_cast<int>(state.range(0)));
  const CollectiveSpec spec = ring_allreduce(t, static_cast<int>(state.range(1)));
  Schedule schedule;
  {
    std::vector<OpId> frontier(t.ranks(), kNoOp);
    generate(spec, t, schedule, frontier);
  }
  std::uint64_t events = 0;
  double simulated = 0, wall = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    const ScheduleResult r = simulate_schedule(schedule, t, 0);
    wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    events += r.events;
    simulated = r.seconds;
    benchmark::DoNotOptimize(r.seconds);
  }
  std::uint64_t transfers = 0;
  for (const Op& op : schedule.ops) transfers += op.kind == OpKind::Transfer;
  state.counters["gpus"] = t.ranks();
  state.counters["transfers"] = static_cast<double>(transfers);
  state.counters["events"] = static_cast<double>(events / state.iterations());
  // Events per second of this process's CPU time (one core; the benchmark's CPU column), and of wall-clock time
  // (lower when other processes share the core).
  state.counters["events_per_cpu_s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["events_per_wall_s"] = static_cast<double>(events) / wall;
  state.counters["simulated_ms"] = simulated * 1e3;
  state.counters["busbw_GBps"] =
      static_cast<double>(kGiB) / simulated / 1e9 * busbw_factor(Collective::AllReduce, t.ranks());
}
BENCHMARK(BM_FlowRingAllReduce)
    ->ArgNames({"nodes", "channels"})
    ->Args({128, 1})
    ->Args({128, 8})
    ->Unit(benchmark::kMillisecond);
// 8192 GPUs: one iteration (minutes, gigabytes). The default 8 channels would need ~1.1e9 transfers (tens of GB)
// and are not run.
BENCHMARK(BM_FlowRingAllReduce)
    ->ArgNames({"nodes", "channels"})
    ->Args({1024, 1})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// For reference (not a target): the same collective with CollectiveSpec::aggregate, one flow per ring edge and
// channel carrying all of its steps (p x channels transfers): the same simulated time on this uncontended ring.
void BM_FlowRingAllReduceAggregated(benchmark::State& state) {
  const Topology& t = dgx_a100(static_cast<int>(state.range(0)));
  CollectiveSpec spec = ring_allreduce(t, static_cast<int>(state.range(1)));
  spec.aggregate = true;
  Schedule schedule;
  std::vector<OpId> frontier(t.ranks(), kNoOp);
  generate(spec, t, schedule, frontier);
  double simulated = 0;
  for (auto _ : state) simulated = simulate_schedule(schedule, t, 0).seconds;
  state.counters["gpus"] = t.ranks();
  state.counters["simulated_ms"] = simulated * 1e3;
}
BENCHMARK(BM_FlowRingAllReduceAggregated)
    ->ArgNames({"nodes", "channels"})
    ->Args({128, 8})
    ->Args({1024, 8})
    ->Unit(benchmark::kMillisecond);

// Schedule generation of the same cases, for reference (not part of the targets).
void BM_GenerateRingAllReduce(benchmark::State& state) {
  const Topology& t = dgx_a100(static_cast<int>(state.range(0)));
  const CollectiveSpec spec = ring_allreduce(t, static_cast<int>(state.range(1)));
  std::uint64_t ops = 0;
  for (auto _ : state) {
    Schedule schedule;
    std::vector<OpId> frontier(t.ranks(), kNoOp);
    generate(spec, t, schedule, frontier);
    ops = schedule.ops.size();
    benchmark::DoNotOptimize(schedule.ops.data());
  }
  state.counters["ops"] = static_cast<double>(ops);
}
BENCHMARK(BM_GenerateRingAllReduce)
    ->ArgNames({"nodes", "channels"})
    ->Args({128, 1})
    ->Args({128, 8})
    ->Unit(benchmark::kMillisecond);

// The process's peak resident memory so far in MB (Linux reports ru_maxrss in KiB): meaningful for the case that a
// --benchmark_filter runs alone.
double peak_rss_MB() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) * 1024 / 1e6;
}

// What `simulate_flow_collectives` does for one collective, timed whole (symmetry search, generation of the
// representatives, simulation): the accelerated flow fidelity. `full_transfers_per_cpu_s` counts the transfers of the
// full schedule that the run stands for, per second of CPU.
void report_symmetric(benchmark::State& state, const FlowCollectivesResult& r, std::uint64_t iterations_events,
                      const Topology& t) {
  state.counters["gpus"] = t.ranks();
  state.counters["multiplicity"] = r.multiplicity;
  state.counters["transfers"] = static_cast<double>(r.transfers);
  state.counters["full_transfers"] = static_cast<double>(r.full_transfers);
  state.counters["events"] = static_cast<double>(r.events);
  state.counters["skipped_steps"] = static_cast<double>(r.skipped_steps);
  state.counters["events_per_cpu_s"] =
      benchmark::Counter(static_cast<double>(iterations_events), benchmark::Counter::kIsRate);
  state.counters["full_transfers_per_cpu_s"] = benchmark::Counter(
      static_cast<double>(r.full_transfers) * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["simulated_ms"] = r.seconds[0] * 1e3;
  state.counters["peak_rss_MB"] = peak_rss_MB();
}

// Args {nodes, channels, symmetry} of dgx-a100, ring allreduce of 1 GiB; symmetry 0 runs the full schedule the same
// way (generation included), for the before/after comparison. `steady_state`: skip the steps a steady state repeats
// (the default); BM_FlowSymmetricRingStepwise runs every step, for the engine's own event rate.
void flow_symmetric_ring(benchmark::State& state, bool steady_state) {
  const Topology& t = dgx_a100(static_cast<int>(state.range(0)));
  std::vector<CollectiveSpec> specs = {ring_allreduce(t, static_cast<int>(state.range(1)))};
  // 1 GiB rounded down to whole bytes per rank and channel (1 GiB itself for 2^k GPUs): pieces that differ by a
  // byte break the symmetry (the full schedule would run).
  const auto per_piece = static_cast<Bytes>(t.ranks()) * static_cast<Bytes>(specs[0].channels);
  specs[0].bytes = kGiB / per_piece * per_piece;
  FlowCollectivesResult r;
  std::uint64_t events = 0;
  for (auto _ : state) {
    r = simulate_flow_collectives(specs, t, state.range(2) != 0, {}, steady_state);
    events += r.events;
    benchmark::DoNotOptimize(r.seconds.data());
  }
  report_symmetric(state, r, events, t);
}
void BM_FlowSymmetricRingAllReduce(benchmark::State& state) { flow_symmetric_ring(state, true); }
void BM_FlowSymmetricRingStepwise(benchmark::State& state) { flow_symmetric_ring(state, false); }
BENCHMARK(BM_FlowSymmetricRingStepwise)
    ->ArgNames({"nodes", "channels", "symmetry"})
    ->Args({128, 8, 1})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlowSymmetricRingAllReduce)
    ->ArgNames({"nodes", "channels", "symmetry"})
    ->Args({128, 1, 1})
    ->Args({128, 8, 1})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlowSymmetricRingAllReduce)
    ->ArgNames({"nodes", "channels", "symmetry"})
    ->Args({128, 8, 0})
    ->Args({1000, 8, 1})
    ->Args({1024, 8, 1})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// ASTRA-sim's experiment: ring allreduce of 1 GiB on a 1-D ring of args {npus, symmetry} NPUs, 50 GB/s and 500 ns per
// link (its input/Ring.yml link), one chunk, flow fidelity. ASTRA-sim runs it with its analytical backend and a
// one-dimensional Ring network of that many NPUs, workload: one 1 GiB ring allreduce.
void BM_FlowAstraRing(benchmark::State& state) {
  LinkParams link;
  link.latency_s = 500e-9;
  link.bandwidth_Bps = 50e9;
  const AstraTopology t("ring", "", {{BlockKind::Ring, static_cast<int>(state.range(0)), link}});
  CollectiveSpec spec;
  spec.op = Collective::AllReduce;
  spec.algorithm = Algorithm::Ring;
  spec.bytes = kGiB;
  spec.ranks_per_node = t.ranks_per_node();
  FlowCollectivesResult r;
  std::uint64_t events = 0;
  for (auto _ : state) {
    r = simulate_flow_collectives({spec}, t, state.range(1) != 0);
    events += r.events;
    benchmark::DoNotOptimize(r.seconds.data());
  }
  report_symmetric(state, r, events, t);
}
BENCHMARK(BM_FlowAstraRing)
    ->ArgNames({"npus", "symmetry"})
    ->Args({512, 1})
    ->Args({4096, 1})
    ->Args({8192, 1})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlowAstraRing)
    ->ArgNames({"npus", "symmetry"})
    ->Args({4096, 0})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// (c): the closed form over args {nodes} x 8 GPUs, default channels (8).
void BM_ClosedFormRingAllReduce(benchmark::State& state) {
  const Topology& t = dgx_a100(static_cast<int>(state.range(0)));
  const CollectiveSpec spec = ring_allreduce(t, t.default_channels());
  double seconds = 0;
  for (auto _ : state) {
    seconds = closed_form_seconds(spec, t);
    benchmark::DoNotOptimize(seconds);
  }
  state.counters["gpus"] = t.ranks();
  state.counters["simulated_ms"] = seconds * 1e3;
}
BENCHMARK(BM_ClosedFormRingAllReduce)->ArgName("nodes")->Arg(128)->Arg(16384)->Unit(benchmark::kMicrosecond);

// The same with nothing cached: the ring's hop classes found afresh at every call (set_library renews the
// topology's instance id, which keys the closed forms' caches).
void BM_ClosedFormRingAllReduceCold(benchmark::State& state) {
  const std::unique_ptr<Topology> t = load_topology(kDgxA100, static_cast<int>(state.range(0)));
  const CollectiveSpec spec = ring_allreduce(*t, t->default_channels());
  double seconds = 0;
  for (auto _ : state) {
    state.PauseTiming();
    t->set_library(t->library());
    state.ResumeTiming();
    seconds = closed_form_seconds(spec, *t);
    benchmark::DoNotOptimize(seconds);
  }
  state.counters["gpus"] = t->ranks();
  state.counters["simulated_ms"] = seconds * 1e3;
}
BENCHMARK(BM_ClosedFormRingAllReduceCold)->ArgName("nodes")->Arg(128)->Arg(16384)->Unit(benchmark::kMicrosecond);

// (d): args {nodes, fidelity (0 analytical, 1 flow)}.
void BM_Gpt3TrainingStep(benchmark::State& state) {
  const std::string scenario = std::string(COMMSIM_SOURCE_DIR) + "/scenarios/gpt3-175b-dgx-a100.json";
  const std::vector<std::string> sets = {"nodes=" + std::to_string(state.range(0))};
  const Fidelity fidelity = state.range(1) ? Fidelity::Flow : Fidelity::Analytical;
  double step_s = 0;
  for (auto _ : state) {
    const SimulationRun run = simulate_scenario(scenario, sets, 0, fidelity);
    // DoNotOptimize on the whole result (a memory operand): on a lone double, GCC 12 with benchmark 1.7.1's
    // "+m,r" constraint was seen to leave garbage in it.
    benchmark::DoNotOptimize(run.result);
    step_s = run.result.step_time_s;
  }
  state.counters["gpus"] = static_cast<double>(state.range(0)) * 8;
  state.counters["step_ms"] = step_s * 1e3;
}
BENCHMARK(BM_Gpt3TrainingStep)->ArgNames({"nodes", "flow"})->Args({2048, 0})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Gpt3TrainingStep)
    ->ArgNames({"nodes", "flow"})
    ->Args({128, 1})
    ->Args({8192, 1})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace commsim

BENCHMARK_MAIN();
