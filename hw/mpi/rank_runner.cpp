// measure_plan (mpi_backend.hpp): one rank's run of the Plan. This file owns the steps and the threads; the parts it
// drives each own one concern: prepared_tasks (what each task does here), rank_buffers (the memory),
// task_executor (a task's real work), step_results (the Result from every rank's records).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "hw/mpi/mpi_check.hpp"
#include "hw/mpi/step_results.hpp"
#include "hw/mpi/stream_sync.hpp"
#include "hw/mpi/task_executor.hpp"
#include "sim/core/error.hpp"

namespace commsim::hw {
namespace {

constexpr int kTraceSteps = 3;

// Who this rank is; throws InputError when the job's size is not the Plan's.
RankContext rank_context(const SimulationRun& run, const RunOptions& options) {
  const Plan& plan = run.plan;
  int rank = 0, ranks = 1;
  COMMSIM_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  COMMSIM_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &ranks));
  if (ranks != plan.ranks)
    throw InputError(plan.scenario_file, "nodes",
                     "the scenario has " + std::to_string(plan.ranks) + " ranks but the MPI job has " +
                         std::to_string(ranks) + " (run it with mpirun -np " + std::to_string(plan.ranks) + ")");
  return RankContext{plan, *run.topology, options, rank, ranks, plan.comm_dtype, options.warmup + plan.steps()};
}

// The rank named by a test hook's environment variable is this one.
bool test_hook_is(const char* variable, int rank) {
  const char* value = std::getenv(variable);
  return value && std::atoi(value) == rank;
}

class RankRunner {
 public:
  // Everything that is not timed happens here: schedules compiled, buffers allocated, communicators created.
  RankRunner(SimulationRun& run, const RunOptions& options)
      : run_(run),
        context_(rank_context(run, options)),
        plan_(run.plan),
        layout_(gradient_layout(plan_)),
        tasks_(prepare_tasks(context_, layout_)),
        buffers_(context_, tasks_, layout_),
        executor_(context_, buffers_, test_hook_is("COMMSIM_TEST_CORRUPT_RANK", context_.rank)),
        kill_(test_hook_is("COMMSIM_TEST_KILL_RANK", context_.rank)),
        hang_(test_hook_is("COMMSIM_TEST_HANG_RANK", context_.rank)) {}

  // Warm-up steps, then the measured ones; every rank runs the same sequence, the streams in their own threads.
  CheckCounts run() {
    std::vector<std::thread> threads;
    for (int s = 1; s <= plan_.streams; ++s) threads.emplace_back([this, s] { stream_loop(s); });
    std::vector<StepRecord> records;
    try {
      for (int step = -context_.options.warmup; step < plan_.steps(); ++step) {
        if (step == 0) {
          buffers_.reset(context_.rank);
          COMMSIM_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        }
        StepRecord record = run_step(step);
        if (step >= 0) records.push_back(std::move(record));
      }
    } catch (const std::exception& e) {  // the stream threads still wait for steps: end the whole job from here
      std::fprintf(stderr, "commsim: rank %d, compute stream: %s\n", context_.rank, e.what());
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
    gate_.stop();
    for (std::thread& thread : threads) thread.join();
    buffers_.free_communicators();
    return gather_results(context_, records, executor_.counts(), trace_, run_);
  }

 private:
  // One step: this thread runs the compute stream, the stream threads the rest; the step ends when all are done.
  StepRecord run_step(int step) {
    begin_step(step);
    const StepPlan& plan = plan_.step_plans[kind_];
    run_compute_stream(plan, step < 0 ? 1.0 : plan_.compute_factor[step]);
    gate_.wait_all(plan_.streams);
    return end_step(plan, step);
  }

  void begin_step(int step) {
    const int warmup = context_.options.warmup;
    // Warm-up steps cycle through the distinct step kinds, so every kind's connections and pages are warm.
    kind_ = step < 0 ? (step + warmup) % static_cast<int>(plan_.step_plans.size()) : plan_.step_plan_of[step];
    step_ = step;
    salt_ = static_cast<std::uint64_t>(step + warmup) * 1009;
    const std::size_t n = plan_.step_plans[kind_].tasks.size();
    start_s_.assign(n, 0);
    end_s_.assign(n, 0);
    for (Stream& s : buffers_.streams) s.bytes_sent = 0;
    board_.reset(n);
    step_begin_ = MPI_Wtime();
    gate_.open();
  }

  // The compute stream's tasks in plan order. The GPU's compute is emulated by waiting for its scenario time (the
  // CPU is free meanwhile, as with a GPU). An emulated kernel starts when the previous one ends and its dependencies
  // did (their recorded ends), not when this thread wakes up: on a host whose cores are all busy the thread wakes
  // late, and a GPU does not wait for its host thread between kernels it already has. Local SGD's own update, CPU
  // work, follows the step's last compute task in real time.
  void run_compute_stream(const StepPlan& plan, double factor) {
    const std::size_t n = plan.tasks.size();
    int last_compute = -1;
    for (std::size_t i = 0; i < n; ++i)
      if (plan.tasks[i].stream == 0) last_compute = static_cast<int>(i);
    double gpu_free_s = 0;  // when the emulated GPU ends its last kernel, seconds since step_begin_
    for (std::size_t i = 0; i < n; ++i) {
      const Task& t = plan.tasks[i];
      if (t.stream != 0) continue;
      board_.wait(t.deps);
      double start_s = gpu_free_s;
      for (int d : t.deps) start_s = std::max(start_s, end_s_[static_cast<std::size_t>(d)]);
      gpu_free_s = start_s + t.seconds * factor;
      start_s_[i] = start_s;
      std::this_thread::sleep_for(std::chrono::duration<double>(gpu_free_s - (MPI_Wtime() - step_begin_)));
      end_s_[i] = gpu_free_s;
      if (static_cast<int>(i) == last_compute &&
          (plan.kind == StepKind::LocalOnly || plan.kind == StepKind::LocalAverage)) {
        executor_.local_update(salt_);
        end_s_[i] = gpu_free_s = MPI_Wtime() - step_begin_;
      }
      board_.finish(static_cast<int>(i));
    }
  }

  StepRecord end_step(const StepPlan& plan, int step) {
    StepRecord record;
    record.seconds = MPI_Wtime() - step_begin_;
    if (plan.kind == StepKind::LocalAverage) buffers_.window_salts.clear();
    // Metrics as the simulator computes them (step_metrics.hpp).
    record.breakdown =
        step_breakdown(task_intervals(plan, start_s_, end_s_), plan_.streams, [](double d) { return d; });
    const bool traced = step >= 0 && step < kTraceSteps;
    for (std::size_t i = 0; i < plan.tasks.size() && context_.rank == 0 && traced; ++i) {
      const Task& t = plan.tasks[i];
      trace_.push_back({t.label, t.stream, traced_s_ + start_s_[i], end_s_[i] - start_s_[i]});
      if (t.kind != TaskKind::Collective) continue;
      double issued_s = 0;  // its inputs ready: its dependencies' ends (the step's start without any)
      for (int d : t.deps) issued_s = std::max(issued_s, end_s_[static_cast<std::size_t>(d)]);
      trace_.back().issued_s = traced_s_ + std::min(issued_s, start_s_[i]);
    }
    if (traced) traced_s_ += record.seconds;
    for (const Stream& s : buffers_.streams) record.bytes_sent += s.bytes_sent;
    return record;
  }

  // A communication stream's thread: its tasks of each step in plan order; a failure ends the whole job.
  void stream_loop(int s) {
    try {
      std::uint64_t seen = 0;
      while (gate_.next(seen)) {
        const StepPlan& plan = plan_.step_plans[kind_];
        for (std::size_t i = 0; i < plan.tasks.size(); ++i) {
          const Task& t = plan.tasks[i];
          if (t.stream != s) continue;
          board_.wait(t.deps);
          start_s_[i] = MPI_Wtime() - step_begin_;
          execute(static_cast<int>(i), buffers_.streams[s]);
          end_s_[i] = MPI_Wtime() - step_begin_;
          board_.finish(static_cast<int>(i));
        }
        gate_.finished();
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "commsim: rank %d, communication stream %d: %s\n", context_.rank, s, e.what());
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
  }

  // One task of a communication stream: prepare (cast, top-k) or communicate.
  void execute(int task, Stream& stream) {
    const std::vector<PreparedTask>& tasks = tasks_.by_step_kind[kind_];
    const PreparedTask& p = tasks[task];
    const std::uint64_t salt = salt_ + static_cast<std::uint64_t>(task);
    switch (p.work) {
      case Work::Compute:
        return;
      case Work::Cast:
        return executor_.pack(tasks[p.target], stream, salt_ + static_cast<std::uint64_t>(p.target));
      case Work::TopK:
        return executor_.select_top_k(tasks[p.target], stream, salt_ + static_cast<std::uint64_t>(p.target));
      case Work::Dense:
        if (!p.prepared_early) executor_.pack(p, stream, salt);
        executor_.communicate(p, stream);
        executor_.unpack(p, stream, salt);
        break;
      case Work::SparseGather:
        if (!p.prepared_early) executor_.select_top_k(p, stream, salt);
        executor_.gather_sparse(p, stream);
        break;
    }
    if (step_ == 0) fail_on_purpose();
  }

  // Test hooks COMMSIM_TEST_KILL_RANK and COMMSIM_TEST_HANG_RANK: this rank fails in its first measured step.
  void fail_on_purpose() const {
    if (kill_) {
      std::fprintf(stderr, "commsim: rank %d aborts on purpose (COMMSIM_TEST_KILL_RANK)\n", context_.rank);
      std::fflush(stderr);
      std::abort();
    }
    if (hang_) {
      std::fprintf(stderr, "commsim: rank %d hangs on purpose (COMMSIM_TEST_HANG_RANK)\n", context_.rank);
      std::fflush(stderr);
      for (;;) pause();
    }
  }

  SimulationRun& run_;
  const RankContext context_;
  const Plan& plan_;
  const GradientLayout layout_;
  const PreparedTasks tasks_;
  RankBuffers buffers_;
  TaskExecutor executor_;
  const bool kill_ = false, hang_ = false;

  Board board_;
  Gate gate_;
  int kind_ = 0, step_ = 0;  // the step the threads run now, and its kind
  std::uint64_t salt_ = 0;   // the step's check-input number; task i's is salt_ + i
  double step_begin_ = 0, traced_s_ = 0;
  std::vector<double> start_s_, end_s_;  // per task of the step, seconds since step_begin_
  std::vector<TraceEvent> trace_;
};

}  // namespace

CheckCounts measure_plan(SimulationRun& run, const RunOptions& options) {
  RankRunner runner(run, options);
  return runner.run();
}

}  // namespace commsim::hw
