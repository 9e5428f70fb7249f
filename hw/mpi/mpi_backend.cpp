#include "hw/mpi/mpi_backend.hpp"

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "hw/common/dgc.hpp"
#include "hw/common/dtype.hpp"
#include "hw/common/plan_buffers.hpp"
#include "hw/common/schedule_program.hpp"
#include "hw/common/verifiable.hpp"
#include "hw/mpi/mpi_check.hpp"
#include "hw/mpi/native_collectives.hpp"
#include "hw/mpi/schedule_executor.hpp"
#include "hw/mpi/task_work.hpp"
#include "sim/core/error.hpp"
#include "sim/core/statistics.hpp"
#include "sim/training/step_metrics.hpp"

namespace commsim::hw {

SimulationRun load_run(const RunOptions& options) { return prepare_run(options.scenario, options.sets, options.steps); }

bool under_mpirun() { return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr; }

MpiSession::MpiSession(int* argc, char*** argv) {
  int provided = 0;
  COMMSIM_MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided));
  COMMSIM_MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  if (provided < MPI_THREAD_MULTIPLE) {
    MPI_Finalize();
    throw MpiError(
        "this MPI library does not provide MPI_THREAD_MULTIPLE (one thread per communication stream needs it)");
  }
  COMMSIM_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  COMMSIM_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size_));
}

MpiSession::~MpiSession() { MPI_Finalize(); }

int run_on_rank(const MpiSession& session, const std::function<int()>& body) {
  int code = 0;
  try {
    code = body();
  } catch (const InputError& e) {
    if (session.rank() == 0) std::fprintf(stderr, "commsim: %s\n", e.what());
    code = 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "commsim: rank %d: %s\n", session.rank(), e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  return code;
}

namespace {

// Local SGD's step size: a power of two, so updates of integer check values stay exact.
constexpr float kLocalSgdLearningRate = 1.0f / 16;
constexpr int kTraceSteps = 3;

// Which tasks of the current step are done; the stream threads of a rank wait on it for their dependencies.
class Board {
 public:
  void reset(std::size_t tasks) {
    std::lock_guard lock(mutex_);
    done_.assign(tasks, 0);
  }
  void finish(int task) {
    {
      std::lock_guard lock(mutex_);
      done_[task] = 1;
    }
    changed_.notify_all();
  }
  void wait(const std::vector<int>& deps) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return std::all_of(deps.begin(), deps.end(), [&](int d) { return done_[d] != 0; }); });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<char> done_;
};

// Starts the stream threads on a step and waits for all of them to finish it.
class Gate {
 public:
  void open() {
    {
      std::lock_guard lock(mutex_);
      ++generation_;
      finished_ = 0;
    }
    changed_.notify_all();
  }
  void stop() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
  }
  // Called by a stream thread: false when the run is over.
  bool next(std::uint64_t& seen) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return stopping_ || generation_ != seen; });
    seen = generation_;
    return !stopping_;
  }
  void finished() {
    {
      std::lock_guard lock(mutex_);
      ++finished_;
    }
    changed_.notify_all();
  }
  void wait_all(int streams) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return finished_ == streams; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::uint64_t generation_ = 0;
  int finished_ = 0;
  bool stopping_ = false;
};

// A schedule compiled for this rank, shared by every task with the same collective.
struct Compiled {
  RankProgram program;
  std::vector<std::vector<Range>> contributed;  // every rank's allgather input ranges (AllGather checks, DGC)
};

// What one task of a step kind does on this rank (task_work.hpp), with what this rank compiled for it.
struct Prepared : TaskWork {
  bool hierarchical = false;
  std::shared_ptr<const Compiled> compiled;
  int residual = -1;  // SparseGather: index of its residual buffer
};

struct Stream {
  StreamComms comms;
  std::vector<std::byte> vector, staging;
  std::vector<float> floats;
  std::thread thread;
  double bytes_sent = 0;  // this step
};

struct StepRecord {
  double seconds = 0, bytes_sent = 0;
  StepBreakdown breakdown;
};

class RankRunner {
 public:
  // Everything that is not timed happens here: schedules compiled, buffers allocated, communicators created.
  RankRunner(SimulationRun& run, const RunOptions& options) : run_(run), plan_(run.plan), options_(options) {
    COMMSIM_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
    COMMSIM_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &ranks_));
    if (ranks_ != plan_.ranks)
      throw InputError(plan_.scenario_file, "nodes",
                       "the scenario has " + std::to_string(plan_.ranks) + " ranks but the MPI job has " +
                           std::to_string(ranks_) + " (run it with mpirun -np " + std::to_string(plan_.ranks) + ")");
    dtype_ = plan_.comm_dtype;
    layout_ = gradient_layout(plan_);
    total_steps_ = options.warmup + plan_.steps();
    if (const char* kill = std::getenv("COMMSIM_TEST_KILL_RANK")) kill_ = std::atoi(kill) == rank_;
    if (const char* hang = std::getenv("COMMSIM_TEST_HANG_RANK")) hang_ = std::atoi(hang) == rank_;
    if (const char* corrupt = std::getenv("COMMSIM_TEST_CORRUPT_RANK")) corrupt_ = std::atoi(corrupt) == rank_;
    prepare();
    allocate();
  }

  // Warm-up steps, then the measured ones; every rank runs the same sequence, the streams in their own threads.
  CheckCounts run() {
    for (int s = 1; s <= plan_.streams; ++s) streams_[s].thread = std::thread([this, s] { stream_loop(s); });
    std::vector<StepRecord> records;
    try {
      for (int step = -options_.warmup; step < plan_.steps(); ++step) {
        if (step == 0) {
          reset_state();
          COMMSIM_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        }
        StepRecord record = run_step(step);
        if (step >= 0) records.push_back(std::move(record));
      }
    } catch (const std::exception& e) {  // the stream threads still wait for steps: end the whole job from here
      std::fprintf(stderr, "commsim: rank %d, compute stream: %s\n", rank_, e.what());
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
    gate_.stop();
    for (int s = 1; s <= plan_.streams; ++s) streams_[s].thread.join();
    for (Stream& stream : streams_) stream.comms.free();
    return summarize(records);
  }

 private:
  // ---- setup -------------------------------------------------------------------------------------------------

  // Works out once what each task of each step kind does on this rank (which buffer, which schedule).
  void prepare() {
    prepared_.resize(plan_.step_plans.size());
    for (std::size_t k = 0; k < plan_.step_plans.size(); ++k) {
      const StepPlan& kind = plan_.step_plans[k];
      const std::vector<TaskWork> work = task_work(plan_, kind, layout_);
      std::vector<Prepared>& tasks = prepared_[k];
      tasks.resize(work.size());
      for (std::size_t i = 0; i < work.size(); ++i) {
        const Task& t = kind.tasks[i];
        Prepared& p = tasks[i];
        static_cast<TaskWork&>(p) = work[i];
        if (p.work == Work::SparseGather) {
          p.residual = residual_index(t.bucket, p.elements);
          if (options_.impl == CollectiveImpl::Schedule) {
            // The plan's ring all-gather of every rank's pairs, run on bytes (an all-gather does no arithmetic, so
            // the 1-byte fp8 unit only sets the unit of offsets).
            CollectiveSpec spec = t.collective;
            spec.op = Collective::AllGather;
            p.compiled =
                compile(spec, ranks_ * p.kept * (element_bytes(dtype_) + sizeof(std::uint32_t)), CommDtype::Fp8, true);
            COMMSIM_CHECK(p.compiled->program.staging_elements == 0, "the DGC all-gather schedule needs no staging");
          }
        } else if (p.work == Work::Dense) {
          CollectiveSpec spec = t.collective;
          if (spec.algorithm == Algorithm::Auto) spec.algorithm = choose_algorithm(spec, *run_.topology);
          p.hierarchical = spec.algorithm == Algorithm::Hierarchical;
          if (options_.impl == CollectiveImpl::Schedule) p.compiled = compile(spec, p.elements);
        }
      }
    }
  }

  // The simulator's schedule for `spec` in elements (CollectiveSpec::unit_bytes), compiled for this rank.
  // Reduce-scatter, all-gather and 2d-ring take one channel, so each rank's block is one contiguous range.
  // `unit` sets the unit of `elements`; an all-gather's block of every rank is recorded with `all_blocks` or --check.
  std::shared_ptr<const Compiled> compile(CollectiveSpec spec, std::uint64_t elements) {
    return compile(spec, elements, dtype_, false);
  }
  std::shared_ptr<const Compiled> compile(CollectiveSpec spec, std::uint64_t elements, CommDtype unit,
                                          bool all_blocks) {
    spec.bytes = elements;
    spec.unit_bytes = dtype_bytes(unit);
    spec.offset = 0;
    spec.aggregate = false;
    spec.reduce_Bps = 1;  // any rate > 0: reductions must appear as operations; their time is measured, not modelled
    if (spec.op != Collective::AllReduce || spec.algorithm == Algorithm::Ring2D) spec.channels = 1;
    const std::string key = std::to_string(static_cast<int>(spec.op)) + "/" +
                            std::to_string(static_cast<int>(spec.algorithm)) + "/" + std::to_string(elements) + "/" +
                            std::to_string(spec.channels) + "/" + std::to_string(spec.hierarchy_groups) + "/" +
                            std::to_string(spec.unit_bytes);
    if (auto it = compiled_.find(key); it != compiled_.end()) return it->second;
    Schedule schedule;
    std::vector<OpId> frontier(run_.topology->ranks(), kNoOp);
    generate(spec, *run_.topology, schedule, frontier);
    auto compiled = std::make_shared<Compiled>();
    compiled->program = rank_program(schedule, rank_);
    if ((options_.check || all_blocks) && spec.op == Collective::AllGather)
      for (int r = 0; r < ranks_; ++r)
        compiled->contributed.push_back(r == rank_ ? compiled->program.contributed
                                                   : rank_program(schedule, r).contributed);
    staging_elements_ = std::max(staging_elements_, compiled->program.staging_elements);
    compiled_[key] = compiled;
    return compiled;
  }

  int residual_index(int bucket, std::uint64_t elements) {
    if (auto it = residual_of_bucket_.find(bucket); it != residual_of_bucket_.end()) return it->second;
    residuals_.emplace_back(elements, 0.0f);
    expected_sparse_.emplace_back();
    if (options_.check) shadows_.emplace_back(static_cast<std::size_t>(ranks_), std::vector<float>(elements, 0.0f));
    residual_of_bucket_[bucket] = static_cast<int>(residuals_.size() - 1);
    return residual_of_bucket_[bucket];
  }

  // Buffers sized for the largest collective of each stream; communicators in stream order on every rank.
  void allocate() {
    std::uint64_t largest = 0, largest_gather = 0;
    for (const auto& tasks : prepared_)
      for (const Prepared& p : tasks) {
        largest = std::max(largest, p.elements);
        if (p.work == Work::SparseGather) largest_gather = std::max(largest_gather, p.kept);
      }
    const std::size_t element = element_bytes(dtype_);
    const std::size_t pair = element + sizeof(std::uint32_t);
    gradients_.assign(layout_.elements, 0.0f);
    if (plan_.local_sgd || plan_.sharded) parameters_.assign(layout_.elements, 0.0f);
    streams_.resize(plan_.streams + 1);
    for (int s = 1; s <= plan_.streams; ++s) {  // collective over the world: the same order on every rank
      Stream& stream = streams_[s];
      stream.comms = StreamComms::create(MPI_COMM_WORLD, hierarchy_group_size(plan_, run_.topology->ranks_per_node()));
      stream.vector.resize(std::max<std::size_t>(largest * element, largest_gather * pair));
      stream.staging.resize(std::max({staging_elements_ * element, largest * element, largest_gather * pair * ranks_}));
      stream.floats.resize(largest);
    }
    reset_state();
  }

  // Gradients start as small pseudo-random numbers (real data, not zeros); parameters and DGC residuals at zero.
  void reset_state() {
    for (std::size_t i = 0; i < gradients_.size(); ++i)
      gradients_[i] =
          static_cast<float>((i * 2654435761u + static_cast<std::size_t>(rank_) * 40503u) % 1000) / 1000.0f - 0.5f;
    std::fill(parameters_.begin(), parameters_.end(), 0.0f);
    for (auto& r : residuals_) std::fill(r.begin(), r.end(), 0.0f);
    for (auto& per_rank : shadows_)
      for (auto& r : per_rank) std::fill(r.begin(), r.end(), 0.0f);
    window_salts_.clear();
  }

  // ---- one step ----------------------------------------------------------------------------------------------

  // One step: this thread runs the compute stream, the stream threads the rest; the step ends when all are done.
  StepRecord run_step(int step) {
    // Warm-up steps cycle through the distinct step kinds, so every kind's connections and pages are warm.
    kind_ = step < 0 ? (step + options_.warmup) % static_cast<int>(plan_.step_plans.size()) : plan_.step_plan_of[step];
    step_ = step;
    salt_ = static_cast<std::uint64_t>(step + options_.warmup) * 1009;
    const StepPlan& plan = plan_.step_plans[kind_];
    const std::size_t n = plan.tasks.size();
    start_s_.assign(n, 0);
    end_s_.assign(n, 0);
    for (Stream& s : streams_) s.bytes_sent = 0;
    board_.reset(n);
    step_begin_ = MPI_Wtime();
    gate_.open();
    const double factor = step < 0 ? 1.0 : plan_.compute_factor[step];
    int last_compute = -1;
    for (std::size_t i = 0; i < n; ++i)
      if (plan.tasks[i].stream == 0) last_compute = static_cast<int>(i);
    for (std::size_t i = 0; i < n; ++i) {
      const Task& t = plan.tasks[i];
      if (t.stream != 0) continue;
      board_.wait(t.deps);
      start_s_[i] = MPI_Wtime() - step_begin_;
      // The GPU's compute is emulated by waiting for its scenario time (the CPU is free meanwhile, as with a GPU).
      std::this_thread::sleep_until(std::chrono::steady_clock::now() +
                                    std::chrono::duration<double>(t.seconds * factor));
      if (static_cast<int>(i) == last_compute &&
          (plan.kind == StepKind::LocalOnly || plan.kind == StepKind::LocalAverage))
        local_update();
      end_s_[i] = MPI_Wtime() - step_begin_;
      board_.finish(static_cast<int>(i));
    }
    gate_.wait_all(plan_.streams);
    StepRecord record;
    record.seconds = MPI_Wtime() - step_begin_;
    if (plan.kind == StepKind::LocalAverage) window_salts_.clear();
    // Metrics as the simulator computes them (step_metrics.hpp).
    record.breakdown =
        step_breakdown(task_intervals(plan, start_s_, end_s_), plan_.streams, [](double d) { return d; });
    for (std::size_t i = 0; i < n; ++i)
      if (rank_ == 0 && step >= 0 && step < kTraceSteps)
        trace_.push_back({plan.tasks[i].label, plan.tasks[i].stream, traced_s_ + start_s_[i], end_s_[i] - start_s_[i]});
    if (step >= 0 && step < kTraceSteps) traced_s_ += record.seconds;
    for (const Stream& s : streams_) record.bytes_sent += s.bytes_sent;
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
          execute(static_cast<int>(i), streams_[s]);
          end_s_[i] = MPI_Wtime() - step_begin_;
          board_.finish(static_cast<int>(i));
        }
        gate_.finished();
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "commsim: rank %d, communication stream %d: %s\n", rank_, s, e.what());
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
  }

  // One task of a communication stream: prepare (cast, top-k) or communicate.
  void execute(int task, Stream& stream) {
    Prepared& p = prepared_[kind_][task];
    const std::uint64_t salt = salt_ + static_cast<std::uint64_t>(task);
    switch (p.work) {
      case Work::Compute:
        return;
      case Work::Cast:
        return pack(prepared_[kind_][p.target], stream, salt_ + static_cast<std::uint64_t>(p.target));
      case Work::TopK:
        return select_top_k(prepared_[kind_][p.target], stream, salt_ + static_cast<std::uint64_t>(p.target));
      case Work::Dense:
        if (!p.prepared_early) pack(p, stream, salt);
        communicate(p, stream);
        unpack(p, stream, salt);
        break;
      case Work::SparseGather:
        if (!p.prepared_early) select_top_k(p, stream, salt);
        gather_sparse(p, stream);
        break;
    }
    if (kill_ && step_ == 0) {
      std::fprintf(stderr, "commsim: rank %d aborts on purpose (COMMSIM_TEST_KILL_RANK)\n", rank_);
      std::fflush(stderr);
      std::abort();
    }
    if (hang_ && step_ == 0) {
      std::fprintf(stderr, "commsim: rank %d hangs on purpose (COMMSIM_TEST_HANG_RANK)\n", rank_);
      std::fflush(stderr);
      for (;;) pause();
    }
  }

  // ---- dense collectives -------------------------------------------------------------------------------------

  // The buffer a task's vector comes from and goes back to.
  float* source(const Prepared& p) { return p.buffer == Buffer::Parameters ? parameters_.data() : gradients_.data(); }

  Verifiable verifiable() const {
    Verifiable v{ranks_, dtype_, 1};
    // Local SGD sums ranks x (p x a gradient) per step over the whole run; DGC residuals add up to a run's steps.
    if (plan_.local_sgd) v.accumulate = ranks_ * total_steps_;
    if (plan_.dgc) v.accumulate = total_steps_;
    return v;
  }

  // Copies the task's tensors into the stream's vector, cast to the communication dtype. With --check the
  // gradients first get verifiable values: element j of the vector holds value(rank, j, salt).
  void pack(const Prepared& p, Stream& stream, std::uint64_t salt) {
    float* data = source(p);
    if (options_.check && p.purpose != Purpose::ParameterAverage) {
      const Verifiable v = verifiable();
      std::uint64_t j = 0;
      for (const Range& r : p.ranges)
        for (std::uint64_t e = 0; e < r.count; ++e) data[r.offset + e] = v.value(rank_, j++, salt);
    }
    const std::size_t element = element_bytes(dtype_);
    std::uint64_t at = 0;
    for (const Range& r : p.ranges) {
      cast_from_float(dtype_, data + r.offset, stream.vector.data() + at * element, r.count);
      at += r.count;
    }
  }

  // The collective itself: the simulator's schedule, or Open MPI's collective.
  void communicate(const Prepared& p, Stream& stream) {
    if (p.compiled) {
      stream.bytes_sent += static_cast<double>(execute_program(p.compiled->program, stream.comms.world, dtype_,
                                                               stream.vector.data(), stream.staging.data()));
      return;
    }
    switch (p.op) {
      case Collective::AllReduce:
        native_allreduce(stream.comms, dtype_, stream.vector.data(), p.elements, p.hierarchical);
        break;
      case Collective::ReduceScatter:
        native_reduce_scatter(stream.comms, dtype_, stream.vector.data(), p.elements, stream.staging.data());
        break;
      case Collective::AllGather:
        native_allgather(stream.comms, dtype_, stream.vector.data(), p.elements);
        break;
      default:
        COMMSIM_CHECK(false, "the plan asks for a collective the MPI backend does not run on its own");
    }
    stream.bytes_sent += p.plan_bytes_sent;
  }

  // This rank's ranges of the result: everything for an allreduce or allgather; its block of a reduce-scatter.
  std::vector<Range> result_ranges(const Prepared& p) const {
    if (p.op != Collective::ReduceScatter) return {{0, p.elements}};
    if (p.compiled) return p.compiled->program.reduced;
    return {{block_first(p.elements, ranks_, rank_), block_size(p.elements, ranks_, rank_)}};
  }

  // Reads the result back to fp32, checks it, and writes it where it came from: sums become averages (DDP divides
  // by the ranks, Local SGD averages parameters); an allgather's blocks are copied as they are.
  void unpack(const Prepared& p, Stream& stream, std::uint64_t salt) {
    float* result = stream.floats.data();
    cast_to_float(dtype_, stream.vector.data(), result, p.elements);
    if (corrupt_ && p.elements > 0 && !corrupted_.exchange(true)) result[0] += 1;  // tests: one wrong element
    const std::vector<Range> mine = result_ranges(p);
    if (options_.check) check_dense(p, result, mine, salt);
    // Divided, not multiplied by 1/ranks: an exact sum of ranks x an average gives the average back exactly.
    const float divisor = p.op == Collective::AllGather ? 1.0f : static_cast<float>(ranks_);
    float* data = source(p);
    // Walk the flat ranges and the vector together; copy back only this rank's result ranges.
    for (const Range& want : mine) {
      std::uint64_t at = 0;
      for (const Range& r : p.ranges) {
        const std::uint64_t lo = std::max(at, want.offset), hi = std::min(at + r.count, want.offset + want.count);
        for (std::uint64_t j = lo; j < hi; ++j) data[r.offset + (j - at)] = result[j] / divisor;
        at += r.count;
      }
    }
  }

  void check_dense(const Prepared& p, const float* result, const std::vector<Range>& mine, std::uint64_t salt) {
    const Verifiable v = verifiable();
    std::uint64_t wrong = 0, checked = 0;
    if (p.purpose == Purpose::ParameterAverage) {
      // Sum over ranks of the parameters: each rank holds A - lr x sum over the window of (ranks x value(r, j, s)),
      // A the last average (the same everywhere). This rank's own parameters give A back.
      std::uint64_t j = 0;
      for (const Range& r : p.ranges)
        for (std::uint64_t e = 0; e < r.count; ++e, ++j) {
          const std::uint64_t flat = r.offset + e;
          double own_steps = 0, all_steps = 0;
          for (std::uint64_t s : window_salts_) {
            own_steps += static_cast<double>(ranks_) * v.value(rank_, flat, s);
            all_steps += static_cast<double>(ranks_) * v.sum(flat, s);
          }
          const double common = parameters_[flat] + kLocalSgdLearningRate * own_steps;
          const double expected = ranks_ * common - kLocalSgdLearningRate * all_steps;
          wrong += static_cast<double>(result[j]) != expected;
          ++checked;
        }
    } else {
      for (const Range& want : mine)
        for (std::uint64_t j = want.offset; j < want.offset + want.count; ++j) {
          double expected = 0;
          if (p.op == Collective::AllGather) {
            expected = v.value(owner(p, j), j, salt);
          } else {
            expected = v.sum(j, salt);
          }
          wrong += static_cast<double>(result[j]) != expected;
          ++checked;
        }
    }
    count_check(wrong, checked);
  }

  // The rank whose input fills element j of an allgather.
  int owner(const Prepared& p, std::uint64_t j) const {
    if (!p.compiled) {
      for (int r = 0; r < ranks_; ++r)
        if (j < block_first(p.elements, ranks_, r) + block_size(p.elements, ranks_, r)) return r;
      return ranks_ - 1;
    }
    for (int r = 0; r < ranks_; ++r)
      for (const Range& range : p.compiled->contributed[r])
        if (j >= range.offset && j < range.offset + range.count) return r;
    return -1;
  }

  // Called from several stream threads: the counters are atomic.
  void count_check(std::uint64_t wrong, std::uint64_t checked) {
    wrong_ += wrong;
    checked_ += checked;
    ++collectives_checked_;
  }

  // Local SGD: every rank takes its own step, parameters -= lr x gradients. With --check the gradients are
  // ranks x value(rank, j, salt), so that the average over ranks stays an exact multiple of lr.
  void local_update() {
    if (options_.check) {
      const Verifiable v = verifiable();
      for (std::size_t j = 0; j < gradients_.size(); ++j)
        gradients_[j] = static_cast<float>(ranks_) * v.value(rank_, j, salt_);
      window_salts_.push_back(salt_);
    }
    for (std::size_t j = 0; j < parameters_.size(); ++j) parameters_[j] -= kLocalSgdLearningRate * gradients_[j];
  }

  // ---- DGC ---------------------------------------------------------------------------------------------------

  // Adds the gradients to the residual, selects the top-k of it, packs (value in the comm dtype, int32 index)
  // pairs into the stream's vector and clears what was sent from the residual.
  void select_top_k(const Prepared& p, Stream& stream, std::uint64_t salt) {
    std::vector<float>& residual = residuals_[p.residual];
    const Verifiable v = verifiable();
    std::uint64_t j = 0;
    for (const Range& r : p.ranges)
      for (std::uint64_t e = 0; e < r.count; ++e, ++j) {
        if (options_.check) gradients_[r.offset + e] = v.value(rank_, j, salt);
        residual[j] += gradients_[r.offset + e];
      }
    const std::vector<std::uint32_t> chosen = top_k_indices(residual.data(), residual.size(), p.kept);
    std::vector<float> values(chosen.size());
    for (std::size_t c = 0; c < chosen.size(); ++c) {
      values[c] = residual[chosen[c]];
      residual[chosen[c]] = 0;
    }
    const std::size_t element = element_bytes(dtype_);
    cast_from_float(dtype_, values.data(), stream.vector.data(), values.size());
    std::memcpy(stream.vector.data() + chosen.size() * element, chosen.data(), chosen.size() * sizeof(std::uint32_t));
    if (options_.check) expect_sparse(p, salt);
  }

  // --check: every rank replays every rank's residual and selection (the inputs are known), so it knows the exact
  // sparse sum it must receive, added in the same rank order as the real accumulation.
  void expect_sparse(const Prepared& p, std::uint64_t salt) {
    const Verifiable v = verifiable();
    std::vector<float>& expected = expected_sparse_[p.residual];
    expected.assign(p.elements, 0.0f);
    for (int r = 0; r < ranks_; ++r) {
      std::vector<float>& shadow = shadows_[p.residual][r];
      for (std::uint64_t j = 0; j < p.elements; ++j) shadow[j] += v.value(r, j, salt);
      for (std::uint32_t j : top_k_indices(shadow.data(), shadow.size(), p.kept)) {
        expected[j] += round_to(dtype_, shadow[j]);
        shadow[j] = 0;
      }
    }
  }

  // MPI_Allgather of every rank's pairs, then the real sparse accumulation into a dense gradient, averaged.
  void gather_sparse(const Prepared& p, Stream& stream) {
    const std::size_t element = element_bytes(dtype_);
    const std::size_t pair_bytes = p.kept * (element + sizeof(std::uint32_t));
    COMMSIM_CHECK(pair_bytes <= static_cast<std::size_t>(INT32_MAX), "DGC pairs of more than 2 GiB");
    // Where rank r's pairs land: block r with MPI_Allgather, the block the ring gives r's position with the schedule.
    auto block_of = [&](int r) {
      return stream.staging.data() +
             (p.compiled ? p.compiled->contributed[r].front().offset : static_cast<std::size_t>(r) * pair_bytes);
    };
    if (p.compiled) {  // the plan's ring schedule, in place: this rank's pairs go to its block first
      std::memcpy(block_of(rank_), stream.vector.data(), pair_bytes);
      stream.bytes_sent += static_cast<double>(
          execute_program(p.compiled->program, stream.comms.world, CommDtype::Fp8, stream.staging.data(), nullptr));
    } else {
      COMMSIM_MPI_CHECK(MPI_Allgather(stream.vector.data(), static_cast<int>(pair_bytes), MPI_BYTE,
                                      stream.staging.data(), static_cast<int>(pair_bytes), MPI_BYTE,
                                      stream.comms.world));
      stream.bytes_sent += p.plan_bytes_sent;
    }
    float* dense = stream.floats.data();
    std::fill(dense, dense + p.elements, 0.0f);
    std::vector<float> values(p.kept);
    for (int r = 0; r < ranks_; ++r) {
      const std::byte* block = block_of(r);
      cast_to_float(dtype_, block, values.data(), p.kept);
      std::vector<std::uint32_t> indices(p.kept);
      std::memcpy(indices.data(), block + p.kept * element, p.kept * sizeof(std::uint32_t));
      accumulate_sparse(dense, values.data(), indices.data(), p.kept);
    }
    if (options_.check) {
      const std::vector<float>& expected = expected_sparse_[p.residual];
      std::uint64_t wrong = 0;
      for (std::uint64_t j = 0; j < p.elements; ++j) wrong += dense[j] != expected[j];
      count_check(wrong, p.elements);
    }
    std::uint64_t j = 0;
    for (const Range& r : p.ranges)
      for (std::uint64_t e = 0; e < r.count; ++e, ++j) gradients_[r.offset + e] = dense[j] / static_cast<float>(ranks_);
  }

  // ---- the result --------------------------------------------------------------------------------------------

  // Per-step records of all ranks meet on rank 0; the check counts on every rank.
  CheckCounts summarize(const std::vector<StepRecord>& records) {
    const int steps = static_cast<int>(records.size());
    const int columns = 4 + plan_.streams + 1;
    std::vector<double> mine(static_cast<std::size_t>(steps) * columns), sums(mine.size());
    std::vector<double> seconds(steps), slowest(steps);
    for (int s = 0; s < steps; ++s) {
      const StepRecord& r = records[s];
      seconds[s] = r.seconds;
      double* row = mine.data() + static_cast<std::size_t>(s) * columns;
      row[0] = r.breakdown.compute_s;
      row[1] = r.breakdown.comm_s;
      row[2] = r.bytes_sent;
      row[3] = 0;
      for (int k = 0; k <= plan_.streams; ++k) row[4 + k] = r.breakdown.stream_busy_s[k];
    }
    // A synchronous step is as long as its slowest rank; the breakdown is the mean over ranks.
    COMMSIM_MPI_CHECK(MPI_Reduce(seconds.data(), slowest.data(), steps, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
    COMMSIM_MPI_CHECK(
        MPI_Reduce(mine.data(), sums.data(), static_cast<int>(mine.size()), MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD));
    std::uint64_t local[3] = {wrong_, checked_, collectives_checked_}, total[3] = {0, 0, 0};
    COMMSIM_MPI_CHECK(MPI_Allreduce(local, total, 3, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD));
    if (rank_ == 0) fill_result(slowest, sums, columns, total);
    return {total[0], total[1], total[2]};
  }

  // The Result in the simulator's schema, from the slowest rank's step times and the ranks' mean breakdown.
  void fill_result(const std::vector<double>& slowest, const std::vector<double>& sums, int columns,
                   const std::uint64_t* check) {
    Result& r = run_.result;  // holds prepare_run's hash and settings
    r.scenario = plan_.scenario_name;
    r.backend = "mpi";
    r.fidelity = "measured";
    r.ranks = plan_.ranks;
    r.batch_per_gpu = plan_.batch_per_gpu;
    // Each step as long as its slowest rank; its breakdown the mean over ranks.
    std::vector<StepMeasure> steps(slowest.size());
    for (std::size_t s = 0; s < slowest.size(); ++s) {
      const double* row = sums.data() + s * static_cast<std::size_t>(columns);
      steps[s].seconds = slowest[s];
      steps[s].breakdown = {row[0] / ranks_, row[1] / ranks_, {}};
      steps[s].bytes_sent = row[2] / ranks_;
      for (int k = 0; k <= plan_.streams; ++k) steps[s].breakdown.stream_busy_s.push_back(row[4 + k] / ranks_);
    }
    summarize_steps(plan_, steps, SteadyStatistic::Median, r);
    r.trace = trace_;
    r.notes = plan_.notes;
    r.notes.push_back(
        "measured with Open MPI: GPU compute is emulated by waiting for each layer's scenario time (a GPU computes "
        "without the CPU)");
    r.notes.push_back(std::string("collectives: ") +
                      (options_.impl == CollectiveImpl::Schedule
                           ? "the simulator's schedules, executed with MPI_Isend/MPI_Irecv and real reductions; DGC "
                             "pairs with its ring all-gather"
                           : "Open MPI's own (MPI_Allreduce, MPI_Reduce_scatter, MPI_Allgather; hierarchical over "
                             "the Plan's groups); DGC "
                             "pairs with MPI_Allgather"));
    r.notes.push_back("step time: median of steps " + std::to_string(r.steady_from) + ".." +
                      std::to_string(plan_.steps() - 1) +
                      " (slowest rank per step), spread = half the interquartile range; " +
                      std::to_string(options_.warmup) + " warm-up step(s) not counted");
    if (!plan_.symmetric_ranks)
      r.notes.push_back("stragglers: every rank waits the plan's critical-rank compute factor of each step");
    if (!options_.network.empty()) r.notes.push_back("network: " + options_.network);
    if (options_.check)
      r.notes.push_back("check: " + std::to_string(check[0]) + " wrong of " + std::to_string(check[1]) +
                        " elements checked in " + std::to_string(check[2]) +
                        " collective results (verifiable inputs; timings include the checking)");
  }

  SimulationRun& run_;
  const Plan& plan_;
  RunOptions options_;
  int rank_ = 0, ranks_ = 1;
  CommDtype dtype_ = CommDtype::Fp32;
  GradientLayout layout_;
  int total_steps_ = 0;
  bool kill_ = false, hang_ = false, corrupt_ = false;  // test hooks: COMMSIM_TEST_{KILL,HANG,CORRUPT}_RANK
  std::atomic<bool> corrupted_{false};

  std::vector<std::vector<Prepared>> prepared_;
  std::map<std::string, std::shared_ptr<const Compiled>> compiled_;
  std::uint64_t staging_elements_ = 0;
  std::vector<float> gradients_, parameters_;
  std::map<int, int> residual_of_bucket_;
  std::vector<std::vector<float>> residuals_;
  std::vector<std::vector<std::vector<float>>> shadows_;  // --check: [residual][rank]
  std::vector<std::vector<float>> expected_sparse_;       // --check: [residual]
  std::vector<std::uint64_t> window_salts_;               // --check: Local SGD steps since the last average
  std::vector<Stream> streams_;

  Board board_;
  Gate gate_;
  int kind_ = 0, step_ = 0;
  std::uint64_t salt_ = 0;
  double step_begin_ = 0, traced_s_ = 0;
  std::vector<double> start_s_, end_s_;
  std::vector<TraceEvent> trace_;
  std::atomic<std::uint64_t> wrong_{0}, checked_{0}, collectives_checked_{0};
};

}  // namespace

CheckCounts measure_plan(SimulationRun& run, const RunOptions& options) {
  RankRunner runner(run, options);
  return runner.run();
}

}  // namespace commsim::hw
