// run_nccl: executes a translated Plan (launch_plan.hpp) on the GPUs of this process and measures it.
//
// Per rank: stream 0 runs the compute emulation (a clock64 busy-wait kernel per layer, calibrated once); streams
// 1..n each own their communicators; events carry the Plan's cross-stream dependencies. The Plan's steps run
// `repeats` times after a warm-up; each step is timed with CUDA events on stream 0 of every rank, from the step's
// start to the moment the compute stream has every gradient, and its time is the slowest rank's. Rank 0 also times
// every communication task and every run of compute kernels, for the breakdown and the trace.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <map>
#include <numeric>
#include <set>

#include "hw/nccl/checks.hpp"
#include "hw/nccl/kernels.hpp"
#include "hw/nccl/launch_plan.hpp"
#include "hw/nccl/world.hpp"
#include "sim/core/statistics.hpp"
#include "sim/training/step_metrics.hpp"

#if NCCL_VERSION_CODE < NCCL_VERSION(2, 18, 0)
#error "the NCCL backend needs NCCL 2.18 or newer (ncclCommSplit)"
#endif

namespace commsim::nccl {
namespace {

constexpr bool kHaveFp8 = NCCL_VERSION_CODE >= NCCL_VERSION(2, 24, 0);  // ncclFloat8e4m3 / e5m2

ncclDataType_t nccl_type(Dtype d) {
  switch (d) {
    case Dtype::Float32:
      return ncclFloat32;
    case Dtype::Float16:
      return ncclFloat16;
    case Dtype::Bfloat16:
      return ncclBfloat16;
    case Dtype::Float8e4m3:
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 24, 0)
      return ncclFloat8e4m3;
#else
      throw NcclUnavailable("nccl backend: fp8 communication needs NCCL 2.24 or newer (this build has " +
                            std::to_string(NCCL_VERSION_CODE) + ")");
#endif
    case Dtype::Packed32:
      return ncclUint32;
  }
  return ncclFloat32;
}

kernels::Wire wire_of(CommDtype d) {
  switch (d) {
    case CommDtype::Fp32:
      return kernels::Wire::F32;
    case CommDtype::Fp16:
      return kernels::Wire::F16;
    case CommDtype::Bf16:
      return kernels::Wire::BF16;
    case CommDtype::Fp8:
      return kernels::Wire::F8E4M3;
  }
  return kernels::Wire::F32;
}

// Largest integer every value up to which (and every sum up to which) the dtype holds exactly.
double exact_limit(CommDtype d) {
  switch (d) {
    case CommDtype::Fp32:
      return 16777216;  // 2^24
    case CommDtype::Fp16:
      return 2048;  // 11-bit significand
    case CommDtype::Bf16:
      return 256;  // 8-bit significand
    case CommDtype::Fp8:
      return 16;  // e4m3: 4-bit significand
  }
  return 16;
}

std::string fmt(const char* format, double a, double b = 0) {
  char buf[128];
  std::snprintf(buf, sizeof buf, format, a, b);
  return buf;
}

std::uint64_t words_for(std::uint64_t kept, int wire_bytes) {
  return (kept * (4 + static_cast<std::uint64_t>(wire_bytes)) + 3) / 4;
}

struct Buffers {
  float* f32 = nullptr;
  void* comm = nullptr;
  unsigned* packed = nullptr;
  unsigned* gathered = nullptr;
  float* dense = nullptr;
};

// One GPU driven by this process.
struct Rank {
  int device = 0, rank = 0;
  std::vector<cudaStream_t> streams;  // 0 = compute, 1..n = communication
  std::vector<ncclComm_t> comms;      // per LaunchProgram::comms; nullptr where this rank is not a member
  std::vector<cudaEvent_t> events;    // dependency events (timing disabled)
  std::vector<cudaEvent_t> timers;    // timing events, reused every repeat
  std::size_t next_timer = 0;
  std::vector<Buffers> buffers;
  std::vector<kernels::TopkScratch> scratch;  // per stream
  unsigned long long* wrong = nullptr;
  double cycles_per_s = 0;

  cudaEvent_t timer() {
    if (next_timer == timers.size()) {
      cudaEvent_t e;
      COMMSIM_CUDA(cudaEventCreate(&e));
      timers.push_back(e);
    }
    return timers[next_timer++];
  }
};

// A timed interval of rank 0: one communication task, or one run of compute kernels (each compute task in traced
// steps), from its first to its last op.
struct Mark {
  int first_op = 0, last_op = 0, stream = 0, task = -1;
  bool compute = false;
};
struct Marks {
  std::vector<Mark> marks;
  std::map<int, std::vector<int>> begin_at, end_at;  // op index -> marks
};

Marks make_marks(const LaunchStep& step, bool each_compute_task) {
  Marks m;
  std::map<int, int> task_mark;
  int open_run = -1;
  for (int j = 0; j < static_cast<int>(step.ops.size()); ++j) {
    const LaunchOp& op = step.ops[j];
    if (op.kind == OpKind::Wait && op.stream == 0) open_run = -1;
    if (op.kind == OpKind::Record || op.kind == OpKind::Wait || op.task < 0) continue;
    if (op.kind == OpKind::Spin) {
      if (each_compute_task || open_run < 0) {
        m.marks.push_back({j, j, op.stream, each_compute_task ? op.task : -1, true});
        open_run = static_cast<int>(m.marks.size() - 1);
      }
      m.marks[static_cast<std::size_t>(open_run)].last_op = j;
      continue;
    }
    auto [it, fresh] = task_mark.try_emplace(op.task, static_cast<int>(m.marks.size()));
    if (fresh) m.marks.push_back({j, j, op.stream, op.task, false});
    m.marks[static_cast<std::size_t>(it->second)].last_op = j;
  }
  for (int i = 0; i < static_cast<int>(m.marks.size()); ++i) {
    m.begin_at[m.marks[static_cast<std::size_t>(i)].first_op].push_back(i);
    m.end_at[m.marks[static_cast<std::size_t>(i)].last_op].push_back(i);
  }
  return m;
}

// What the check pass verifies after one task.
struct CheckItem {
  enum Kind { Sum, ShardSum, Gathered, Dgc } kind = Sum;
  int task = -1, buffer = -1;
  std::uint64_t count = 0, elements = 0;  // count: NCCL count; elements: DGC dense size
  float scale = 1;
};

std::vector<CheckItem> check_items(const LaunchStep& step) {
  std::map<int, CheckItem> items;  // by task
  for (const LaunchOp& op : step.ops) {
    if (op.task < 0) continue;
    if (op.kind == OpKind::Scatter) {
      items[op.task] = {CheckItem::Dgc, op.task, op.buffer, op.count, op.elements, 1};
    } else if (op.kind == OpKind::Collective && op.dtype != Dtype::Packed32 && !items.count(op.task)) {
      const CheckItem::Kind k = op.call == Call::ReduceScatter ? CheckItem::ShardSum
                                : op.call == Call::AllGather   ? CheckItem::Gathered
                                                               : CheckItem::Sum;
      items[op.task] = {k, op.task, op.buffer, op.count, 0, 1};
    } else if (op.kind == OpKind::CastUp && items.count(op.task)) {
      items[op.task].scale = op.scale;
    }
  }
  std::vector<CheckItem> out;
  for (auto& [task, item] : items) out.push_back(item);
  return out;
}

class Runner {
 public:
  Runner(const Plan& plan, const LaunchProgram& program, const World& world, const NcclOptions& options)
      : plan_(plan), program_(program), world_(world), options_(options), wire_(wire_of(program.comm_dtype)) {}

  ~Runner() {
    // Abort rather than destroy the communicators when unwinding from an error: a peer may never arrive.
    const bool failing = std::uncaught_exceptions() > 0;
    for (Rank& r : ranks_) {
      cudaSetDevice(r.device);
      if (!failing) cudaDeviceSynchronize();
      for (ncclComm_t c : r.comms)
        if (c) failing ? ncclCommAbort(c) : ncclCommDestroy(c);
      for (cudaEvent_t e : r.events) cudaEventDestroy(e);
      for (cudaEvent_t e : r.timers) cudaEventDestroy(e);
      for (auto& s : r.scratch) kernels::topk_scratch_destroy(s);
      for (Buffers& b : r.buffers)
        for (void* p : {static_cast<void*>(b.f32), b.comm, static_cast<void*>(b.packed), static_cast<void*>(b.gathered),
                        static_cast<void*>(b.dense)})
          if (p) cudaFree(p);
      if (r.wrong) cudaFree(r.wrong);
      for (cudaStream_t s : r.streams) cudaStreamDestroy(s);
    }
  }

  void setup() {
    check_device_support();
    // NCCL reads NCCL_ALGO once, at its first communicator: set it before.
    const Algorithm algo = plan_.algorithm;
    // NCCL_ALGO applies to every collective, and NCCL has no tree for all-gather or reduce-scatter.
    bool allreduce_only = true;
    for (const LaunchStep& k : program_.step_plans)
      for (const LaunchOp& op : k.ops) allreduce_only &= op.kind != OpKind::Collective || op.call == Call::AllReduce;
    if (options_.set_nccl_algo && algo == Algorithm::Tree && !allreduce_only) {
      notes_.push_back(
          "NCCL chooses the algorithm: NCCL_ALGO=Tree would also apply to this plan's all-gathers or "
          "reduce-scatters, which have no tree in NCCL");
    } else if (options_.set_nccl_algo && (algo == Algorithm::Ring || algo == Algorithm::Tree)) {
      const char* name = algo == Algorithm::Ring ? "Ring" : "Tree";
      if (const char* env = std::getenv("NCCL_ALGO")) {
        notes_.push_back(std::string("NCCL_ALGO=") + env + " from the environment (the scenario asks for " + name +
                         ")");
      } else {
        setenv("NCCL_ALGO", name, 0);
        notes_.push_back(std::string("NCCL_ALGO=") + name + " (from strategy.algorithm)");
      }
    } else if (algo == Algorithm::Ring || algo == Algorithm::Tree) {
      notes_.push_back("NCCL chooses the algorithm (NCCL_ALGO not set from strategy.algorithm on request)");
    } else if (algo != Algorithm::Hierarchical) {
      notes_.push_back("NCCL chooses the algorithm (strategy.algorithm " + std::string(to_string(algo)) +
                       " has no NCCL_ALGO equivalent)");
    }
    const std::vector<ncclComm_t> world_comms = world_.init_comms();
    ranks_.resize(world_.devices().size());
    for (std::size_t i = 0; i < ranks_.size(); ++i) {
      Rank& r = ranks_[i];
      r.device = world_.devices()[i];
      r.rank = world_.ranks()[i];
      r.comms.assign(program_.comms.size(), nullptr);
      COMMSIM_CUDA(cudaSetDevice(r.device));
      for (int s = 0; s <= program_.streams; ++s) {
        cudaStream_t stream;
        COMMSIM_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
        r.streams.push_back(stream);
        r.scratch.push_back(kernels::topk_scratch_create());
      }
      COMMSIM_CUDA(cudaMalloc(&r.wrong, sizeof(unsigned long long)));
    }
    split_comms(world_comms);
    allocate();
    calibrate();
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
          for (Rank& r : ranks_) enqueue_collective(r, op);
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
    synchronize();
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
      synchronize();
      std::vector<double> seconds(static_cast<std::size_t>(steps), 0.0);
      for (int s = 0; s < steps; ++s) {
        const StepTiming& t = timing[static_cast<std::size_t>(s)];
        for (std::size_t i = 0; i < ranks_.size(); ++i)
          seconds[static_cast<std::size_t>(s)] =
              std::max(seconds[static_cast<std::size_t>(s)], elapsed(t.begin[i], t.end[i]));
      }
      world_.max(seconds);
      for (int s = 0; s < steps; ++s) {
        step_s_[static_cast<std::size_t>(s)].push_back(seconds[static_cast<std::size_t>(s)]);
        if (rank0_local())
          read_marks(s, timing[static_cast<std::size_t>(s)], timing[0], rep == 0 && s < options_.trace_steps);
      }
      for (Rank& r : ranks_) r.next_timer = 0;
    }
  }

  // One untimed pass of every step kind with verifiable inputs; returns wrong elements over all ranks.
  std::uint64_t check(std::vector<std::string>& notes) {
    std::uint64_t wrong = 0;
    const int modulus =
        static_cast<int>(std::min(64.0, std::floor(exact_limit(program_.comm_dtype) / program_.ranks) + 1));
    std::set<int> kinds(plan_.step_plan_of.begin(), plan_.step_plan_of.end());
    int checked = 0, skipped = 0;
    for (int k : kinds) {
      const LaunchStep& step = program_.step_plans[static_cast<std::size_t>(k)];
      std::vector<CheckItem> items = check_items(step);
      std::map<int, int> uses;
      for (const CheckItem& c : items) ++uses[c.buffer];
      for (Rank& r : ranks_) {
        COMMSIM_CUDA(cudaSetDevice(r.device));
        for (const CheckItem& c : items) {
          Buffers& b = r.buffers[static_cast<std::size_t>(c.buffer)];
          if (c.kind == CheckItem::Dgc)
            kernels::fill_dgc(b.f32, c.elements, c.count, r.rank, r.streams[0]);
          else
            kernels::fill_verifiable(b.f32, program_.buffers[static_cast<std::size_t>(c.buffer)].elements, r.rank,
                                     modulus, r.streams[0]);
        }
        COMMSIM_CUDA(cudaMemsetAsync(r.wrong, 0, sizeof(unsigned long long), r.streams[0]));
      }
      issue(k, 0.0, nullptr, false, /*no_spin=*/true);
      synchronize();
      for (Rank& r : ranks_) {
        COMMSIM_CUDA(cudaSetDevice(r.device));
        for (const CheckItem& c : items) {
          const bool dgc = c.kind == CheckItem::Dgc;
          if ((!dgc && modulus < 2) || uses[c.buffer] > 1) {
            ++skipped;
            continue;
          }
          ++checked;
          const Buffers& b = r.buffers[static_cast<std::size_t>(c.buffer)];
          const std::uint64_t shard_begin = static_cast<std::uint64_t>(r.rank) * c.count;
          switch (c.kind) {
            case CheckItem::Sum:
              kernels::count_wrong_sum(b.f32, 0, c.count, program_.ranks, modulus, c.scale, r.wrong, r.streams[0]);
              break;
            case CheckItem::ShardSum:
              kernels::count_wrong_sum(b.f32, shard_begin, shard_begin + c.count, program_.ranks, modulus, c.scale,
                                       r.wrong, r.streams[0]);
              break;
            case CheckItem::Gathered:
              kernels::count_wrong_gathered(b.f32, c.count * static_cast<std::uint64_t>(program_.ranks), c.count,
                                            modulus, r.wrong, r.streams[0]);
              break;
            case CheckItem::Dgc:
              kernels::count_wrong_dgc(b.dense, c.elements, c.count, program_.ranks, r.wrong, r.streams[0]);
              break;
          }
        }
        unsigned long long w = 0;
        COMMSIM_CUDA(cudaMemcpyAsync(&w, r.wrong, sizeof w, cudaMemcpyDeviceToHost, r.streams[0]));
        COMMSIM_CUDA(cudaStreamSynchronize(r.streams[0]));
        wrong += w;
      }
    }
    wrong = world_.sum(wrong);
    notes.push_back("check: " + std::to_string(checked / static_cast<int>(ranks_.size())) +
                    " collective result(s) per rank compared with exact sums of verifiable integers (modulus " +
                    std::to_string(modulus) + "), " + std::to_string(wrong) + " wrong element(s)" +
                    (skipped ? "; " + std::to_string(skipped / static_cast<int>(ranks_.size())) +
                                   " not checkable (buffer reused within a step, or fp8 sums over too many ranks)"
                             : ""));
    return wrong;
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

  std::vector<std::string>& notes() { return notes_; }

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

  bool rank0_local() const { return world_.root(); }

  double elapsed(cudaEvent_t a, cudaEvent_t b) const {
    float ms = 0;
    COMMSIM_CUDA(cudaEventElapsedTime(&ms, a, b));
    return static_cast<double>(ms) * 1e-3;
  }

  void check_device_support() {
    for (int d : world_.devices()) {
      cudaDeviceProp prop;
      COMMSIM_CUDA(cudaGetDeviceProperties(&prop, d));
      if (program_.comm_dtype == CommDtype::Fp8) {
        if (!kHaveFp8)
          throw InputError(plan_.scenario_file, "strategy.comm_dtype", "fp8 communication needs NCCL 2.24 or newer");
        if (prop.major < 9)
          throw InputError(plan_.scenario_file, "strategy.comm_dtype",
                           "NCCL reduces fp8 only on compute capability 9.0 or newer; GPU " + std::to_string(d) + " (" +
                               prop.name + ") is " + std::to_string(prop.major) + "." + std::to_string(prop.minor));
      }
      if (d == world_.devices().front())
        notes_.push_back(std::string("GPU: ") + prop.name + " (compute capability " + std::to_string(prop.major) + "." +
                         std::to_string(prop.minor) + ", " + std::to_string(prop.multiProcessorCount) + " SMs)");
    }
  }

  // One communicator per (stream, scope) of the program, split from the world communicator (ncclCommSplit, which
  // every rank calls in the same order; in one process, inside one group for all its GPUs).
  void split_comms(const std::vector<ncclComm_t>& world_comms) {
    const int gs = program_.group_size;
    bool world_used = false;
    for (std::size_t c = 0; c < program_.comms.size(); ++c) {
      const CommSpec& spec = program_.comms[c];
      if (spec.scope == Scope::World && !world_used) {  // the first world communicator is the one NCCL made
        for (std::size_t i = 0; i < ranks_.size(); ++i) ranks_[i].comms[c] = world_comms[i];
        world_used = true;
        continue;
      }
      COMMSIM_NCCL(ncclGroupStart());
      for (std::size_t i = 0; i < ranks_.size(); ++i) {
        const int rank = ranks_[i].rank;
        int color = 0;
        if (spec.scope == Scope::Intra) color = rank / gs;
        if (spec.scope == Scope::Inter) color = rank % gs == 0 ? 0 : NCCL_SPLIT_NOCOLOR;
        COMMSIM_CUDA(cudaSetDevice(ranks_[i].device));
        COMMSIM_NCCL(ncclCommSplit(world_comms[i], color, rank, &ranks_[i].comms[c], nullptr));
      }
      COMMSIM_NCCL(ncclGroupEnd());
    }
    if (!world_used)
      for (std::size_t i = 0; i < ranks_.size(); ++i) {
        // Keep it for destruction: the program used only split communicators.
        ranks_[i].comms.push_back(world_comms[i]);
      }
  }

  void allocate() {
    const std::uint64_t wb = static_cast<std::uint64_t>(kernels::wire_bytes(wire_));
    std::uint64_t bytes = 0;
    for (const BufferSpec& b : program_.buffers)
      bytes += b.elements * 4 + (b.comm_copy ? b.elements * wb : 0) + (b.packed_words + b.gathered_words) * 4 +
               (b.dense_output ? b.elements * 4 : 0);
    for (Rank& r : ranks_) {
      COMMSIM_CUDA(cudaSetDevice(r.device));
      std::size_t free_bytes = 0, total = 0;
      COMMSIM_CUDA(cudaMemGetInfo(&free_bytes, &total));
      if (static_cast<double>(bytes) > 0.9 * static_cast<double>(free_bytes))
        throw InputError(plan_.scenario_file, "model",
                         fmt("needs %.2f GiB of GPU memory per rank for its gradient buffers; GPU has %.2f GiB free",
                             static_cast<double>(bytes) / (1 << 30), static_cast<double>(free_bytes) / (1 << 30)));
      r.buffers.resize(program_.buffers.size());
      for (std::size_t i = 0; i < program_.buffers.size(); ++i) {
        const BufferSpec& spec = program_.buffers[i];
        Buffers& b = r.buffers[i];
        const std::uint64_t n = std::max<std::uint64_t>(spec.elements, 1);
        COMMSIM_CUDA(cudaMalloc(&b.f32, n * 4));
        kernels::fill_random(b.f32, n, 0x5eed0000ull + static_cast<std::uint64_t>(r.rank) * 7919 + i, r.streams[0]);
        if (spec.comm_copy) COMMSIM_CUDA(cudaMalloc(&b.comm, n * wb));
        if (spec.packed_words) COMMSIM_CUDA(cudaMalloc(&b.packed, spec.packed_words * 4));
        if (spec.gathered_words) COMMSIM_CUDA(cudaMalloc(&b.gathered, spec.gathered_words * 4));
        if (spec.dense_output) COMMSIM_CUDA(cudaMalloc(&b.dense, n * 4));
      }
      int events = 0;
      for (const LaunchStep& k : program_.step_plans) events = std::max(events, k.events);
      r.events.resize(static_cast<std::size_t>(events));
      for (cudaEvent_t& e : r.events) COMMSIM_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    }
    synchronize();
  }

  // SM clock cycles per second of each GPU: two busy-waits of C and 2C cycles; the difference cancels the launch
  // overhead. The clock can change under load (boost), which the compute check in the notes shows.
  void calibrate() {
    constexpr long long kCycles = 20'000'000;
    std::vector<double> rates;
    for (Rank& r : ranks_) {
      COMMSIM_CUDA(cudaSetDevice(r.device));
      cudaStream_t s = r.streams[0];
      cudaEvent_t a, b, c;
      COMMSIM_CUDA(cudaEventCreate(&a));
      COMMSIM_CUDA(cudaEventCreate(&b));
      COMMSIM_CUDA(cudaEventCreate(&c));
      kernels::spin(kCycles, s);  // wake the clocks up
      std::vector<double> samples;
      for (int i = 0; i < 3; ++i) {
        COMMSIM_CUDA(cudaEventRecord(a, s));
        kernels::spin(kCycles, s);
        COMMSIM_CUDA(cudaEventRecord(b, s));
        kernels::spin(2 * kCycles, s);
        COMMSIM_CUDA(cudaEventRecord(c, s));
        COMMSIM_CUDA(cudaEventSynchronize(c));
        const double one = elapsed(a, b), two = elapsed(b, c);
        if (two > one) samples.push_back(static_cast<double>(kCycles) / (two - one));
      }
      for (cudaEvent_t e : {a, b, c}) cudaEventDestroy(e);
      r.cycles_per_s = samples.empty() ? 1.4e9 : median(samples);
      rates.push_back(r.cycles_per_s);
    }
    notes_.push_back(
        "compute is emulated: each layer's Plan time is spent by a busy-wait kernel on one SM of the compute stream "
        "(clock64 loop calibrated at " +
        fmt("%.3f GHz", median(rates) / 1e9) +
        "); the GPU does no arithmetic for it, so compute does not contend with NCCL for SMs or memory");
  }

  void synchronize() {
    for (Rank& r : ranks_) {
      COMMSIM_CUDA(cudaSetDevice(r.device));
      for (cudaStream_t s : r.streams) COMMSIM_CUDA(cudaStreamSynchronize(s));
    }
  }

  int comm_rank(const Rank& r) const { return r.rank; }  // sharded ops use the world communicator

  void enqueue_collective(Rank& r, const LaunchOp& op) {
    ncclComm_t c = r.comms[static_cast<std::size_t>(op.comm)];
    if (!c) return;  // not a member (Inter communicator on a non-leader)
    Buffers& b = r.buffers[static_cast<std::size_t>(op.buffer)];
    cudaStream_t s = r.streams[static_cast<std::size_t>(op.stream)];
    const ncclDataType_t t = nccl_type(op.dtype);
    char* base = static_cast<char*>(op.dtype == Dtype::Float32 ? static_cast<void*>(b.f32) : b.comm);
    const std::size_t shard =
        static_cast<std::size_t>(comm_rank(r)) * op.count * static_cast<std::size_t>(dtype_size(op.dtype));
    COMMSIM_CUDA(cudaSetDevice(r.device));
    switch (op.call) {
      case Call::AllReduce:
        COMMSIM_NCCL(ncclAllReduce(base, base, op.count, t, ncclSum, c, s));
        break;
      case Call::Reduce:
        COMMSIM_NCCL(ncclReduce(base, base, op.count, t, ncclSum, op.root, c, s));
        break;
      case Call::Broadcast:
        COMMSIM_NCCL(ncclBroadcast(base, base, op.count, t, op.root, c, s));
        break;
      case Call::ReduceScatter:
        COMMSIM_NCCL(ncclReduceScatter(base, base + shard, op.count, t, ncclSum, c, s));
        break;
      case Call::AllGather:
        if (op.dtype == Dtype::Packed32)
          COMMSIM_NCCL(ncclAllGather(b.packed, b.gathered, op.count, t, c, s));
        else
          COMMSIM_NCCL(ncclAllGather(base + shard, base, op.count, t, c, s));
        break;
    }
  }

  void execute(const LaunchOp& op, double factor, bool no_spin) {
    if (op.kind == OpKind::Collective) {
      COMMSIM_NCCL(ncclGroupStart());
      for (Rank& r : ranks_) enqueue_collective(r, op);
      COMMSIM_NCCL(ncclGroupEnd());
      return;
    }
    const std::uint64_t wb = static_cast<std::uint64_t>(kernels::wire_bytes(wire_));
    for (Rank& r : ranks_) {
      COMMSIM_CUDA(cudaSetDevice(r.device));
      cudaStream_t s = r.streams[static_cast<std::size_t>(op.stream)];
      Buffers* b = op.buffer >= 0 ? &r.buffers[static_cast<std::size_t>(op.buffer)] : nullptr;
      const std::uint64_t offset = op.shard ? static_cast<std::uint64_t>(r.rank) * op.count : 0;
      switch (op.kind) {
        case OpKind::Record:
          COMMSIM_CUDA(cudaEventRecord(r.events[static_cast<std::size_t>(op.event)], s));
          break;
        case OpKind::Wait:
          COMMSIM_CUDA(cudaStreamWaitEvent(s, r.events[static_cast<std::size_t>(op.event)], 0));
          break;
        case OpKind::Spin:
          if (!no_spin) kernels::spin(std::llround(op.seconds * factor * r.cycles_per_s), s);
          break;
        case OpKind::CastDown:
          kernels::cast_down(b->f32 + offset, static_cast<char*>(b->comm) + offset * wb, wire_, op.count, s);
          break;
        case OpKind::CastUp: {
          const bool narrow = program_.comm_dtype != CommDtype::Fp32;
          const void* src =
              narrow ? static_cast<const void*>(static_cast<char*>(b->comm) + offset * wb) : b->f32 + offset;
          kernels::cast_up(src, b->f32 + offset, narrow ? wire_ : kernels::Wire::F32, op.count, op.scale, s);
          break;
        }
        case OpKind::TopK:
          kernels::topk(b->f32, op.elements, op.count, b->packed, wire_, r.scratch[static_cast<std::size_t>(op.stream)],
                        s);
          break;
        case OpKind::Scatter:
          kernels::scatter_add(b->gathered, words_for(op.count, kernels::wire_bytes(wire_)), program_.ranks, op.count,
                               wire_, b->dense, op.elements, s);
          break;
        case OpKind::Collective:
          break;
      }
    }
  }

  // Enqueues one step of kind k on every local GPU. With `timing`, stream 0 of every rank records the step's begin
  // and end, and rank 0 records its marks.
  void issue(int k, double factor, StepTiming* timing, bool trace = false, bool no_spin = false) {
    const LaunchStep& step = program_.step_plans[static_cast<std::size_t>(k)];
    const Marks* marks = nullptr;
    if (timing && rank0_local()) {
      auto& cache = trace ? marks_trace_ : marks_;
      auto it = cache.find(k);
      if (it == cache.end()) it = cache.emplace(k, make_marks(step, trace)).first;
      marks = &it->second;
      timing->marks.assign(marks->marks.size(), {nullptr, nullptr});
    }
    if (timing) {
      timing->kind = k;
      for (Rank& r : ranks_) {
        COMMSIM_CUDA(cudaSetDevice(r.device));
        cudaEvent_t e = r.timer();
        COMMSIM_CUDA(cudaEventRecord(e, r.streams[0]));
        timing->begin.push_back(e);
      }
    }
    Rank& r0 = ranks_.front();
    auto mark = [&](const std::map<int, std::vector<int>>& at, int j, bool begin) {
      if (!marks) return;
      auto it = at.find(j);
      if (it == at.end()) return;
      COMMSIM_CUDA(cudaSetDevice(r0.device));
      for (int m : it->second) {
        cudaEvent_t e = r0.timer();
        COMMSIM_CUDA(
            cudaEventRecord(e, r0.streams[static_cast<std::size_t>(marks->marks[static_cast<std::size_t>(m)].stream)]));
        (begin ? timing->marks[static_cast<std::size_t>(m)].first : timing->marks[static_cast<std::size_t>(m)].second) =
            e;
      }
    };
    for (int j = 0; j < static_cast<int>(step.ops.size()); ++j) {
      if (marks) mark(marks->begin_at, j, true);
      execute(step.ops[static_cast<std::size_t>(j)], factor, no_spin);
      if (marks) mark(marks->end_at, j, false);
    }
    if (timing)
      for (Rank& r : ranks_) {
        COMMSIM_CUDA(cudaSetDevice(r.device));
        cudaEvent_t e = r.timer();
        COMMSIM_CUDA(cudaEventRecord(e, r.streams[0]));
        timing->end.push_back(e);
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
  kernels::Wire wire_;
  std::vector<Rank> ranks_;
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
