// run_nccl: executes a translated Plan (launch_plan.hpp) on the GPUs of this process and measures it.
//
// Per rank: stream 0 runs the compute emulation (a clock64 busy-wait kernel per layer, calibrated once); streams
// 1..n each own their communicators; events carry the Plan's cross-stream dependencies. The Plan's steps run
// `repeats` times after a warm-up; each step is timed with CUDA events on stream 0 of every rank, from the step's
// start to the moment the compute stream has every gradient, and its time is the slowest rank's. Rank 0 also times
// every communication task and every run of compute kernels, for the breakdown and the trace.
//
// This file owns the run's sequence (set up, estimate, warm up, measure, check) and the step timing; the GPUs'
// resources are gpu_ranks, enqueuing one op is launch_ops, the check pass result_check, the timed intervals
// step_marks.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>

#include "hw/nccl/checks.hpp"
#include "hw/nccl/gpu_ranks.hpp"
#include "hw/nccl/launch_ops.hpp"
#include "hw/nccl/result_check.hpp"
#include "hw/nccl/step_marks.hpp"
#include "sim/core/statistics.hpp"
#include "sim/result/step_metrics.hpp"

#if NCCL_VERSION_CODE < NCCL_VERSION(2, 18, 0)
#error "the NCCL backend needs NCCL 2.18 or newer (ncclCommSplit)"
#endif

namespace commsim::nccl {
namespace {

// NCCL reads NCCL_ALGO once, at its first communicator: this runs before any is made.
void choose_nccl_algorithm(const Plan& plan, const LaunchProgram& program, const NcclOptions& options,
                           std::vector<std::string>& notes) {
  const Algorithm algo = plan.algorithm;
  // NCCL_ALGO applies to every collective, and NCCL has no tree for all-gather or reduce-scatter.
  bool allreduce_only = true;
  for (const LaunchStep& k : program.step_plans)
    for (const LaunchOp& op : k.ops) allreduce_only &= op.kind != OpKind::Collective || op.call == Call::AllReduce;
  if (options.set_nccl_algo && algo == Algorithm::Tree && !allreduce_only) {
    notes.push_back(
        "NCCL chooses the algorithm: NCCL_ALGO=Tree would also apply to this plan's all-gathers or "
        "reduce-scatters, which have no tree in NCCL");
  } else if (options.set_nccl_algo && (algo == Algorithm::Ring || algo == Algorithm::Tree)) {
    const char* name = algo == Algorithm::Ring ? "Ring" : "Tree";
    if (const char* env = std::getenv("NCCL_ALGO")) {
      notes.push_back(std::string("NCCL_ALGO=") + env + " from the environment (the scenario asks for " + name + ")");
    } else {
      setenv("NCCL_ALGO", name, 0);
      notes.push_back(std::string("NCCL_ALGO=") + name + " (from strategy.algorithm)");
    }
  } else if (algo == Algorithm::Ring || algo == Algorithm::Tree) {
    notes.push_back("NCCL chooses the algorithm (NCCL_ALGO not set from strategy.algorithm on request)");
  } else if (algo != Algorithm::Hierarchical) {
    notes.push_back("NCCL chooses the algorithm (strategy.algorithm " + std::string(to_string(algo)) +
                    " has no NCCL_ALGO equivalent)");
  }
}

class Runner {
 public:
  Runner(const Plan& plan, const LaunchProgram& program, const World& world, const NcclOptions& options)
      : plan_(plan), program_(program), world_(world), options_(options), gpus_(plan, program, world) {}

  void setup() {
    gpus_.check_device_support(notes_);
    choose_nccl_algorithm(plan_, program_, options_, notes_);
    gpus_.create(notes_);
  }

  // NCCL's own estimate of each collective task (microseconds), where the library provides one.
  void estimate() {
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 22, 0)
    if (!options_.nccl_estimate) return;
    try {
      for (std::size_t k = 0; k < program_.step_plans.size(); ++k)
        for (const LaunchOp& op : program_.step_plans[k].ops) {
          if (op.kind != OpKind::Collective) continue;
          COMMSIM_NCCL(ncclGroupStart());
          for (Rank& r : gpus_.ranks()) enqueue_collective(r, op);
          ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
          COMMSIM_NCCL(ncclGroupSimulateEnd(&info));
          if (info.estimatedTime >= 0) estimate_us_[{static_cast<int>(k), op.task}] += info.estimatedTime;
        }
    } catch (const HardwareError& e) {  // the estimate is a side note: report it and measure anyway
      estimate_us_.clear();
      notes_.push_back(std::string("NCCL's estimate could not be obtained: ") + e.what());
    }
#else
    if (options_.nccl_estimate)
      notes_.push_back("NCCL's estimate needs NCCL 2.22 or newer (ncclGroupSimulateEnd); not recorded");
#endif
  }

  void warm_up() {
    std::set<int> done;
    int count = 0;
    for (std::size_t s = 0; s < plan_.step_plan_of.size(); ++s) {
      const int k = plan_.step_plan_of[s];
      if (count >= options_.warmup_steps && done.count(k)) continue;  // every step kind runs at least once
      issue(k, plan_.compute_factor[s], nullptr);
      done.insert(k);
      ++count;
    }
    gpus_.synchronize();
  }

  // Times the Plan's steps `repeats` times.
  void measure() {
    const int steps = static_cast<int>(plan_.step_plan_of.size());
    step_s_.assign(static_cast<std::size_t>(steps), {});
    metrics_.assign(static_cast<std::size_t>(steps), {});
    for (int rep = 0; rep < options_.repeats; ++rep) {
      world_.barrier();
      std::vector<StepTiming> timing(static_cast<std::size_t>(steps));
      for (int s = 0; s < steps; ++s)
        issue(plan_.step_plan_of[static_cast<std::size_t>(s)], plan_.compute_factor[static_cast<std::size_t>(s)],
              &timing[static_cast<std::size_t>(s)], rep == 0 && s < options_.trace_steps);
      gpus_.synchronize();
      std::vector<double> seconds = slowest_local_rank_s(timing);
      world_.max(seconds);
      for (int s = 0; s < steps; ++s) {
        step_s_[static_cast<std::size_t>(s)].push_back(seconds[static_cast<std::size_t>(s)]);
        if (world_.root())
          read_marks(s, timing[static_cast<std::size_t>(s)], timing[0], rep == 0 && s < options_.trace_steps);
      }
      for (Rank& r : gpus_.ranks()) r.next_timer = 0;
    }
  }

  // One untimed pass of every step kind with verifiable inputs; returns wrong elements over all ranks.
  std::uint64_t check(std::vector<std::string>& notes) {
    return check_results(
        plan_, program_, gpus_, world_, [this](int k) { issue(k, 0.0, nullptr, false, /*no_spin=*/true); }, notes);
  }

  Result result() {
    Result r = plan_result(plan_, "nccl", "measured");
    // Each step: the median over repeats of the slowest rank; rank 0's breakdown, averaged over the repeats.
    std::vector<StepMeasure> steps(step_s_.size());
    for (std::size_t s = 0; s < steps.size(); ++s) {
      const StepMetrics& m = metrics_[s];
      const double reps = std::max(1, m.samples);
      steps[s].seconds = median(step_s_[s]);
      steps[s].spread_s = half_interquartile_range(step_s_[s]);
      steps[s].breakdown.compute_s = m.compute_s / reps;
      steps[s].breakdown.comm_s = m.comm_s / reps;
      for (double busy : m.stream_busy_s) steps[s].breakdown.stream_busy_s.push_back(busy / reps);
      steps[s].bytes_sent = plan_bytes_sent(plan_.step_plan(static_cast<int>(s)));
    }
    summarize_steps(plan_, steps, SteadyStatistic::Mean, r);
    // Only rank 0 measured the breakdown: the other processes contribute zeros to the sum that shares it.
    std::vector<double> shared{r.compute_s, r.comm_s, r.exposed_comm_s};
    shared.insert(shared.end(), r.stream_busy_s.begin(), r.stream_busy_s.end());
    if (!world_.root()) std::fill(shared.begin(), shared.end(), 0.0);
    world_.sum(shared);
    r.compute_s = shared[0], r.comm_s = shared[1], r.exposed_comm_s = shared[2];
    std::copy(shared.begin() + 3, shared.end(), r.stream_busy_s.begin());
    finish_result(plan_, r);
    r.trace = trace_;
    r.notes = notes_;
    add_estimate_notes(r.notes);
    return r;
  }

 private:
  struct StepTiming {
    std::vector<cudaEvent_t> begin, end;                     // per local rank
    std::vector<std::pair<cudaEvent_t, cudaEvent_t>> marks;  // rank 0: per Mark
    int kind = 0;
  };
  struct StepMetrics {
    int samples = 0;
    double compute_s = 0, comm_s = 0;
    std::vector<double> stream_busy_s;
  };

  // Each step's time on the slowest GPU of this process.
  std::vector<double> slowest_local_rank_s(const std::vector<StepTiming>& timing) {
    std::vector<double> seconds(timing.size(), 0.0);
    for (std::size_t s = 0; s < timing.size(); ++s) {
      const StepTiming& t = timing[s];
      for (std::size_t i = 0; i < gpus_.ranks().size(); ++i)
        seconds[s] = std::max(seconds[s], elapsed(t.begin[i], t.end[i]));
    }
    return seconds;
  }

  // Enqueues one step of kind k on every local GPU. With `timing`, stream 0 of every rank records the step's begin
  // and end, and rank 0 records its marks.
  void issue(int k, double factor, StepTiming* timing, bool trace = false, bool no_spin = false) {
    const LaunchStep& step = program_.step_plans[static_cast<std::size_t>(k)];
    // Every process merges the same spins (the marks' boundaries); rank 0 records the marks.
    const Marks& marks = marks_of(k, step, trace);
    const bool record = timing && world_.root();
    if (record) timing->marks.assign(marks.marks.size(), {nullptr, nullptr});
    if (timing) {
      timing->kind = k;
      record_on_compute_streams(timing->begin);
    }
    for (const Issue& i : issues_of(step, marks)) {
      if (record) record_marks(marks, marks.begin_at, i.first, true, *timing);
      enqueue_op(gpus_.ranks(), program_, i.op, factor, no_spin);
      if (record) record_marks(marks, marks.end_at, i.last, false, *timing);
    }
    if (timing) record_on_compute_streams(timing->end);
  }

  // The marks of step kind k, made once (traced steps time each compute task).
  const Marks& marks_of(int k, const LaunchStep& step, bool trace) {
    auto& cache = trace ? marks_trace_ : marks_;
    auto it = cache.find(k);
    if (it == cache.end()) it = cache.emplace(k, make_marks(step, trace)).first;
    return it->second;
  }

  // A timing event on every local GPU's compute stream.
  void record_on_compute_streams(std::vector<cudaEvent_t>& events) {
    for (Rank& r : gpus_.ranks()) {
      COMMSIM_CUDA(cudaSetDevice(r.device));
      cudaEvent_t e = r.timer();
      COMMSIM_CUDA(cudaEventRecord(e, r.streams[0]));
      events.push_back(e);
    }
  }

  // Rank 0: the events of the marks that begin (or end) at op j, on each mark's stream.
  void record_marks(const Marks& marks, const std::map<int, std::vector<int>>& at, int j, bool begin,
                    StepTiming& timing) {
    auto it = at.find(j);
    if (it == at.end()) return;
    Rank& r0 = gpus_.front();
    COMMSIM_CUDA(cudaSetDevice(r0.device));
    for (int m : it->second) {
      cudaEvent_t e = r0.timer();
      COMMSIM_CUDA(
          cudaEventRecord(e, r0.streams[static_cast<std::size_t>(marks.marks[static_cast<std::size_t>(m)].stream)]));
      (begin ? timing.marks[static_cast<std::size_t>(m)].first : timing.marks[static_cast<std::size_t>(m)].second) = e;
    }
  }

  void read_marks(int s, const StepTiming& t, const StepTiming& first, bool trace) {
    const StepPlan& kind = plan_.step_plans[static_cast<std::size_t>(t.kind)];
    const Marks& marks = (trace ? marks_trace_ : marks_).at(t.kind);
    StepMetrics& m = metrics_[static_cast<std::size_t>(s)];
    std::vector<TaskInterval<double>> intervals;
    for (std::size_t i = 0; i < marks.marks.size(); ++i) {
      const Mark& mk = marks.marks[i];
      const double a = elapsed(t.begin[0], t.marks[i].first), b = elapsed(t.begin[0], t.marks[i].second);
      intervals.push_back({mk.stream, mk.compute, a, b});
      if (!mk.compute) task_s_[{t.kind, mk.task}].push_back(b - a);
      if (trace) {
        const std::string name = mk.task >= 0 ? kind.tasks[static_cast<std::size_t>(mk.task)].label : "compute";
        trace_.push_back({name, mk.stream, elapsed(first.begin[0], t.marks[i].first), b - a});
      }
    }
    // Summed over the repeats; result() divides by the samples.
    const StepBreakdown step = step_breakdown(intervals, program_.streams, [](double d) { return d; });
    m.compute_s += step.compute_s;
    m.comm_s += step.comm_s;
    m.stream_busy_s.resize(step.stream_busy_s.size(), 0.0);
    for (std::size_t k = 0; k < step.stream_busy_s.size(); ++k) m.stream_busy_s[k] += step.stream_busy_s[k];
    ++m.samples;
  }

  void add_estimate_notes(std::vector<std::string>& notes) const {
    if (estimate_us_.empty()) return;
    static const char* kKinds[] = {"sync", "dgc-sparse", "local-only", "local-average", "sharded"};
    std::map<int, int> lines;
    for (const auto& [key, us] : estimate_us_) {
      const auto [k, task] = key;
      auto measured = task_s_.find(key);
      if (measured == task_s_.end()) continue;  // a step kind that was not timed
      if (++lines[k] > 12) continue;
      notes.push_back(std::string("NCCL estimate (ncclGroupSimulateEnd) vs measured median, ") +
                      kKinds[static_cast<int>(program_.step_plans[static_cast<std::size_t>(k)].kind)] + " step, " +
                      plan_.step_plans[static_cast<std::size_t>(k)].tasks[static_cast<std::size_t>(task)].label + ": " +
                      fmt("%.1f us vs %.1f us", static_cast<double>(us), median(measured->second) * 1e6));
    }
    for (const auto& [k, n] : lines)
      if (n > 12) notes.push_back("... " + std::to_string(n - 12) + " more NCCL estimates not listed");
  }

  const Plan& plan_;
  const LaunchProgram& program_;
  const World& world_;
  const NcclOptions& options_;
  GpuRanks gpus_;
  std::vector<std::string> notes_;
  std::map<int, Marks> marks_, marks_trace_;
  std::vector<std::vector<double>> step_s_;  // per step: seconds per repeat
  std::vector<StepMetrics> metrics_;
  std::map<std::pair<int, int>, std::vector<double>> task_s_;  // (kind, task) -> seconds on rank 0
  std::map<std::pair<int, int>, float> estimate_us_;           // (kind, task) -> NCCL's estimate
  std::vector<TraceEvent> trace_;
};

}  // namespace

NcclRun run_nccl(const Plan& plan, const Topology& topology, const NcclOptions& options) {
  validate(options);
  std::string why;
  if (!nccl_available(&why)) throw NcclUnavailable(why);
  const LaunchProgram program = translate_plan(plan, topology.ranks_per_node());
  World world(options.launch, options.gpus, plan.ranks);
  if (world.nranks() != plan.ranks)
    throw InputError(plan.scenario_file, "nodes",
                     "the scenario has " + std::to_string(plan.ranks) + " ranks (" + std::to_string(topology.nodes()) +
                         " node(s) x " + std::to_string(topology.ranks_per_node()) + ") but " +
                         std::to_string(world.nranks()) + " GPU(s) were started (" + world.describe() +
                         "); set the scenario's nodes (--set nodes=N) or start as many ranks");
  NcclRun run;
  run.root = world.root();
  std::vector<std::string> check_notes;
  world.run_or_abort([&] {
    Runner runner(plan, program, world, options);
    runner.setup();
    runner.estimate();
    runner.warm_up();
    runner.measure();
    if (options.check) {
      run.checked = true;
      run.wrong_elements = runner.check(check_notes);
    }
    run.result = runner.result();
  });
  int version = 0;
  ncclGetVersion(&version);
  std::vector<std::string> notes = {
      "measured on " + world.describe() + ", NCCL " + std::to_string(version / 10000) + "." +
          std::to_string(version / 100 % 100) + "." + std::to_string(version % 100),
      "each step is timed with CUDA events on every rank's compute stream (slowest rank); steps[i] is the median of " +
          std::to_string(options.repeats) + " repeat(s) after " + std::to_string(options.warmup_steps) +
          " warm-up step(s); step_time_spread_s is half the interquartile range",
      "breakdown and trace from rank 0: communication = union of its communication tasks' intervals, compute = its "
      "busy-wait kernels"};
  if (program.group_size != world.ranks_per_host() && plan.algorithm == Algorithm::Hierarchical)
    notes.push_back("hierarchy groups follow the scenario (" + std::to_string(program.group_size) +
                    " ranks per group) while " + std::to_string(world.ranks_per_host()) + " ranks share this host");
  if (plan.dgc)
    notes.push_back(
        "DGC: exact top-k (4-pass radix select on |g|) and ncclAllGather of (int32 index, value) pairs; the "
        "decompression (scatter-add of ranks x k pairs) runs too, though the Plan does not count it; momentum "
        "correction and residual accumulation are not executed");
  if (!plan.symmetric_ranks)
    notes.push_back("stragglers: every rank's compute is scaled by the Plan's factor of the slowest rank of that step");
  notes.insert(notes.end(), check_notes.begin(), check_notes.end());
  run.result.notes.insert(run.result.notes.begin(), notes.begin(), notes.end());
  return run;
}

}  // namespace commsim::nccl
