#include "sim/model/kineto_trace.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>

#include "sim/core/json_fields.hpp"
#include "sim/core/limits.hpp"
#include "sim/core/units.hpp"
#include "sim/model/model_json.hpp"
#include "sim/step/interference.hpp"

namespace commsim {
namespace {

constexpr double kUs = 1e-6;  // Chrome trace times are microseconds
// Beyond 2^53 us (285 years) a double no longer holds every microsecond (IEEE 754's 53-bit significand): the spans'
// durations would round away.
constexpr double kMaxTimestampUs = 9007199254740992.0;
// Spans that touch (one ends where the next begins) may overlap by a rounding error of their microsecond times:
// nesting is decided with this slack (1 ns, below any profiler's resolution).
constexpr double kSlack_s = 1e-9;
const std::string kModulePrefix = "nn.Module: ";
const std::string kBackwardPrefix = "autograd::engine::evaluate_function: ";

struct Span {
  std::size_t event = 0;  // index in traceEvents
  std::string name, cat;
  std::int64_t pid = 0, tid = 0;
  double start_s = 0, end_s = 0;
  const Json* args = nullptr;
};

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// c10::ScalarType names as record_param_comms writes them ("dtype"), and their sizes.
int dtype_bytes(const std::string& dtype) {
  static const std::map<std::string, int> sizes{{"Float", 4}, {"Half", 2}, {"BFloat16", 2},      {"Double", 8},
                                                {"Int", 4},   {"Long", 8}, {"Short", 2},         {"Byte", 1},
                                                {"Char", 1},  {"Bool", 1}, {"Float8_e4m3fn", 1}, {"Float8_e5m2", 1}};
  const auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

// A thread id may be a number or a string ("stream 7" in some exports); only equality matters.
std::int64_t id_of(const Json* v) {
  if (!v) return 0;
  if (v->is_number_integer()) return v->get<std::int64_t>();
  return static_cast<std::int64_t>(std::hash<std::string>{}(v->dump()));
}

std::vector<Span> complete_events(const Json& events, const std::string& path) {
  std::vector<Span> spans;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const std::string where = "traceEvents[" + std::to_string(i) + "]";
    if (!events[i].is_object()) throw InputError(path, where, "an event must be a JSON object");
    const Json& e = events[i];
    if (!e.contains("ph") || e.at("ph") != "X") continue;  // metadata, flows, counters, instants
    JsonFields f(e, path, where);
    Span s;
    s.event = i;
    s.name = f.string("name");
    s.cat = f.string_or("cat", "");
    const double ts = f.number("ts");
    const double dur = f.number("dur");
    if (std::abs(ts) > kMaxTimestampUs) f.fail("ts", "must be within +-2^53 us, where a double keeps microseconds");
    if (dur < 0) f.fail("dur", "must be >= 0");
    // The longest time a model file may hold (its forward_s and backward_s, kMaxSimulatedSeconds).
    if (dur * kUs > kMaxSimulatedSeconds) f.fail("dur", "must be at most 8.64e12 us (100 days)");
    s.start_s = ts * kUs;
    s.end_s = (ts + dur) * kUs;
    s.pid = id_of(e.contains("pid") ? &e.at("pid") : nullptr);
    s.tid = id_of(e.contains("tid") ? &e.at("tid") : nullptr);
    if (e.contains("args")) {
      if (!e.at("args").is_object()) f.fail("args", "must be an object");
      s.args = &e.at("args");
    }
    spans.push_back(std::move(s));
  }
  // Parents before children; spans alike keep the file's order (two streams' collectives issued at one instant).
  std::stable_sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    return a.start_s != b.start_s ? a.start_s < b.start_s : a.end_s > b.end_s;
  });
  return spans;
}

const Json* arg(const Span& s, const std::string& key) {
  return s.args && s.args->contains(key) ? &s.args->at(key) : nullptr;
}

std::uint64_t count_arg(const Span& s, const std::string& key, const std::string& path) {
  const Json* v = arg(s, key);
  const std::string field = "traceEvents[" + std::to_string(s.event) + "].args." + key;
  if (!v || !v->is_number_integer() || v->get<std::int64_t>() < 0)
    throw InputError(path, field, v ? "must be a non-negative integer" : "missing: the collective's size is needed");
  if (v->get<std::int64_t>() > kMaxElements)
    throw InputError(path, field, "must be at most 2^50 (the largest tensor a model file holds)");
  return v->get<std::uint64_t>();
}

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// A bucket of gradients is reduced (allreduce; reduce-scatter under ZeRO and FSDP) or gathered (all-gather), in any
// of the spellings c10d records in "Collective name" (allreduce, allreduce_coalesced, _reduce_scatter_base,
// all_gather, _allgather_base, allgather_into_tensor_coalesced, ...) or gloo's work spans carry (gloo:all_reduce).
bool is_gather(const std::string& name) { return contains(name, "allgather") || contains(name, "all_gather"); }
bool is_gradient_collective(const std::string& name) {
  return contains(name, "allreduce") || contains(name, "all_reduce") || contains(name, "reduce_scatter") ||
         is_gather(name);
}

// The collectives the simulator models: those, and broadcast and reduce (DDP's broadcast of buffers in forward; the
// phases of a hierarchical allreduce, which commsim's own Kineto export writes). Not all_to_all, send, recv, gather,
// scatter or barrier, which a reader taking every collective for a gradient bucket would misread.
bool is_modelled_collective(const std::string& name) {
  return is_gradient_collective(name) || contains(name, "broadcast") || contains(name, "reduce");
}

TracedCollective collective_of(const Span& s, const std::string& path) {
  TracedCollective c;
  const std::string where = "traceEvents[" + std::to_string(s.event) + "].args.";
  const Json* name = arg(s, "Collective name");
  const Json* dtype = arg(s, "dtype");
  if (!name || !name->is_string()) throw InputError(path, where + "Collective name", "missing (a string)");
  if (!dtype || !dtype->is_string()) throw InputError(path, where + "dtype", "missing (a string)");
  c.name = name->get<std::string>();
  if (!is_modelled_collective(c.name))
    throw InputError(path, where + "Collective name",
                     "\"" + c.name + "\" is not a collective commsim models (allreduce, reduce-scatter, all-gather, " +
                         "broadcast, reduce)");
  c.event = s.event;
  c.dtype = dtype->get<std::string>();
  c.bytes_per_element = dtype_bytes(c.dtype);
  if (c.bytes_per_element == 0) throw InputError(path, where + "dtype", "unknown dtype \"" + c.dtype + "\"");
  c.elements = std::max(count_arg(s, "In msg nelems", path), count_arg(s, "Out msg nelems", path));
  // Absent before PyTorch 2.1 (then 0: unknown); given, the group has at least one rank.
  const Json* group = arg(s, "Group size");
  if (group &&
      (!group->is_number_integer() || group->get<std::int64_t>() < 1 || group->get<std::int64_t>() > kMaxRanks))
    throw InputError(path, where + "Group size",
                     "must be an integer in [1, 2^22] (the ranks of the collective's group)");
  c.group_size = group ? group->get<int>() : 0;
  c.start_s = s.start_s;
  c.duration_s = s.end_s - s.start_s;
  return c;
}

// A record_param_comms span of a collective. c10d records a Work's wait the same way, with "Collective name" "wait"
// and no elements (seen in PyTorch 2.11's traces: tests/data/trace/resnet50-ddp-nccl-h100.json.gz), and the creation
// of a communicator as "init" (ProcessGroupNCCL::getNCCLComm, in the first step that uses it); they move nothing.
bool is_comms_record(const Span& s) {
  if (s.name != "record_param_comms") return false;
  const Json* name = arg(s, "Collective name");
  return !(name && name->is_string() && (name->get<std::string>() == "wait" || name->get<std::string>() == "init"));
}

bool is_nccl_kernel(const Span& s) {
  return s.cat == "kernel" && (starts_with(s.name, "ncclDevKernel_") || starts_with(s.name, "ncclKernel_"));
}

// GPU work that is not communication: kernels other than NCCL's, copies, memsets.
bool is_gpu_compute(const Span& s) {
  return (s.cat == "kernel" && !is_nccl_kernel(s)) || s.cat == "gpu_memcpy" || s.cat == "gpu_memset";
}

// The host's launches (cat cuda_runtime or cuda_driver) by their args.correlation, which the GPU work they launched
// carries too.
using Launches = std::map<std::int64_t, const Span*>;
std::optional<std::int64_t> correlation_of(const Span& s) {
  const Json* id = arg(s, "correlation");
  return id && id->is_number_integer() ? std::optional(id->get<std::int64_t>()) : std::nullopt;
}
Launches launches_of(const std::vector<Span>& spans) {
  Launches out;
  for (const Span& s : spans)
    if (s.cat == "cuda_runtime" || s.cat == "cuda_driver")
      if (const auto id = correlation_of(s)) out.try_emplace(*id, &s);
  return out;
}
// The launch of GPU span `s`, if the trace has it.
const Span* launch_of(const Span& s, const Launches& launches) {
  const auto id = correlation_of(s);
  const auto it = id ? launches.find(*id) : launches.end();
  return it == launches.end() ? nullptr : it->second;
}

// A process group's work span: gloo's ("gloo:all_reduce", from the Work's creation to its end) or the MPI process
// group's ("mpi:all_reduce", the same; torch/csrc/distributed/c10d/ProcessGroupMPI.cpp enqueue's profiling title).
bool is_work_span(const Span& s) { return starts_with(s.name, "gloo:") || starts_with(s.name, "mpi:"); }

// The collectives of the traced steps. Durations: NCCL kernels when there are any; else the process group's work
// spans, which run the collective where record_param_comms only enqueues it; else record_param_comms (the MPI
// backend's traces before it wrote work spans, whose spans cover the collective). Sizes: from the args of the same
// span, or for a work span of the record_param_comms issued with it (on its thread at its start, else the next one
// in time order); a trace without them (PyTorch before 2.1, or without Kineto) leaves the size unknown (0).
// A kernel runs after the host launched it, so its step and whether it belongs to the backward are the host's launch
// time (the cuda_runtime / cuda_driver span with the kernel's correlation); without one, the kernel's own start.
template <typename StepOf>
void add_collectives(const std::vector<Span>& spans, const Launches& launches, const std::string& path,
                     const StepOf& step_of, KinetoTrace& trace) {
  bool nccl = false, work = false;
  for (const Span& s : spans) {
    nccl |= is_nccl_kernel(s);
    work |= is_work_span(s);
  }
  trace.collective_source = nccl   ? CollectiveSource::NcclKernels
                            : work ? CollectiveSource::WorkSpans
                                   : CollectiveSource::Records;
  auto issued_s = [&](const Span& s) {
    const Span* launch = nccl ? launch_of(s, launches) : nullptr;
    return launch ? launch->start_s : s.start_s;
  };
  std::vector<const Span*> described;  // record_param_comms, in time order (work spans' sizes)
  for (const Span& s : spans)
    if (is_comms_record(s) && step_of(s.start_s) >= 0) described.push_back(&s);
  std::vector<bool> used(described.size(), false);
  std::size_t next_described = 0;
  // The record issued with work span `s`: on its thread at its start, else the next unused one.
  auto record_of = [&](const Span& s) -> const Span* {
    std::size_t pick = described.size();
    for (std::size_t i = 0; i < described.size() && pick == described.size(); ++i)
      if (!used[i] && described[i]->pid == s.pid && described[i]->tid == s.tid &&
          std::abs(described[i]->start_s - s.start_s) <= kSlack_s)
        pick = i;
    while (pick == described.size() && next_described < described.size())
      if (!used[next_described++]) pick = next_described - 1;
    if (pick == described.size()) return nullptr;
    used[pick] = true;
    return described[pick];
  };
  for (const Span& s : spans) {
    const bool take = nccl ? is_nccl_kernel(s) : work ? is_work_span(s) : is_comms_record(s);
    if (!take) continue;
    const double issued = issued_s(s);
    const int step = step_of(issued);
    if (step < 0) continue;
    TracedCollective c;
    if (!work) {
      c = collective_of(s, path);
    } else if (const Span* record = record_of(s)) {
      c = collective_of(*record, path);
    } else if (!described.empty()) {  // the others have their sizes: this one lost its record
      throw InputError(path, "traceEvents[" + std::to_string(s.event) + "]",
                       "a work span (" + s.name + ") with no record_param_comms issued with it to give its size");
    } else {
      c.name = s.name.substr(s.name.find(':') + 1);  // size not in the trace
      c.bytes_per_element = 0;
      c.event = s.event;
      if (!is_modelled_collective(c.name))
        throw InputError(path, "traceEvents[" + std::to_string(s.event) + "].name",
                         "\"" + s.name + "\" is not a collective commsim models");
    }
    c.start_s = s.start_s;
    c.issued_s = issued;
    c.duration_s = s.end_s - s.start_s;
    if (!(c.duration_s > 0))  // a measured collective takes time: 0 would be compared as a 0 % error
      throw InputError(path, "traceEvents[" + std::to_string(s.event) + "].dur",
                       "a traced collective must last > 0 us");
    c.step = step;
    // Issued before the step's backward began: not a gradient's (DDP's broadcast of module buffers, FSDP's gathers
    // of parameters in forward).
    const double backward_start_s = trace.steps[static_cast<std::size_t>(step)].backward_start_s;
    (backward_start_s >= 0 && issued < backward_start_s ? trace.forward_collectives : trace.collectives)
        .push_back(std::move(c));
  }
  for (std::size_t i = 0; work && i < described.size(); ++i)
    if (!used[i])
      throw InputError(path, "traceEvents[" + std::to_string(described[i]->event) + "]",
                       "a record_param_comms with no work span (gloo:/mpi:) issued with it: the collective's run is "
                       "not in the trace");
}

}  // namespace

double KinetoTrace::mean_step_s() const {
  double sum = 0;
  for (const TracedStep& s : steps) sum += s.duration_s;
  return sum / static_cast<double>(steps.size());
}

double KinetoTrace::mean_exposed_comm_s() const {
  double sum = 0;
  for (const TracedStep& s : steps) sum += std::max(0.0, s.duration_s - s.compute_s);
  return sum / static_cast<double>(steps.size());
}

std::size_t KinetoTrace::collectives_per_step() const {
  return static_cast<std::size_t>(
      std::count_if(collectives.begin(), collectives.end(), [](const TracedCollective& c) { return c.step == 0; }));
}

double KinetoTrace::mean_collective_s(std::size_t index) const {
  std::vector<std::size_t> seen(steps.size(), 0);
  double sum = 0;
  int n = 0;
  for (const TracedCollective& c : collectives)
    if (seen[static_cast<std::size_t>(c.step)]++ == index) sum += c.duration_s, ++n;
  return n ? sum / n : 0;
}

namespace {

// The complete events of the document read from `path` (the spans point into it): Kineto's {"traceEvents": [...]},
// or the bare array of events that builds without Kineto (the legacy profiler, e.g. Debian's python3-torch 1.13)
// write, without categories or args.
std::vector<Span> trace_spans(const Json& root, const std::string& path) {
  if (!root.is_object() && !root.is_array())
    throw InputError(path, "", "a profiler trace is a JSON object with traceEvents (or the legacy array of events)");
  if (root.is_array()) return complete_events(root, path);
  JsonFields top(root, path, "");
  return complete_events(top.array("traceEvents"), path);
}

// The "ProfilerStep#N" spans as the trace's steps; returns the first of them (its thread runs the steps).
const Span& add_steps(const std::vector<Span>& spans, const std::string& path, KinetoTrace& trace) {
  const Span* main_thread = nullptr;
  for (const Span& s : spans)
    // Kineto mirrors each step onto the GPU's timeline (cat gpu_user_annotation, the span of the step's kernels): the
    // step is the host's span.
    if (starts_with(s.name, "ProfilerStep#") && s.cat != "gpu_user_annotation") {
      if (!(s.end_s > s.start_s))  // every mean per step divides by it or compares with it
        throw InputError(path, "traceEvents[" + std::to_string(s.event) + "].dur",
                         "a ProfilerStep span must last > 0 us");
      trace.steps.push_back({s.name, s.start_s, s.end_s - s.start_s, 0, -1});
      main_thread = main_thread ? main_thread : &s;
    }
  if (!main_thread)
    throw InputError(path, "traceEvents",
                     "no \"ProfilerStep#N\" span (profile with a schedule and call prof.step() every step)");
  return *main_thread;
}

// The step a time falls in ([start, end) of its ProfilerStep span), -1 outside every step: what runs before, between
// or after the profiled steps (an evaluation, the profiler's own work) is no part of them.
struct StepOf {
  const KinetoTrace& trace;
  int operator()(double t) const {
    int k = -1;
    for (std::size_t i = 0; i < trace.steps.size() && trace.steps[i].start_s <= t; ++i) k = static_cast<int>(i);
    if (k < 0) return -1;
    const TracedStep& step = trace.steps[static_cast<std::size_t>(k)];
    return t < step.start_s + step.duration_s ? k : -1;
  }
};

// The SMs NCCL's kernels hold over time, to take their slowdown out of the compute that ran beside them: a kernel
// with a grid of K blocks (args.grid[0], one per channel) holds K of the device's S SMs (deviceProperties numSms)
// for its life, so compute beside it ran at (S - K) / S of its speed (compute_share, sim/step/interference.hpp).
// A compute kernel's work is its time at full speed: its duration, each part weighted by that rate. What the
// library's concurrent_slowdown adds on top (memory traffic) is not in the trace and stays in the measured times.
// Without numSms or grids, no correction: every kernel's work is its duration.
class NcclOccupancy {
 public:
  NcclOccupancy(const Json& root, const std::vector<Span>& spans, const std::string& path) {
    if (!root.is_object() || !root.contains("deviceProperties")) return;
    const Json& devices = root.at("deviceProperties");
    if (!devices.is_array()) throw InputError(path, "deviceProperties", "must be an array (Kineto's device list)");
    for (std::size_t i = 0; i < devices.size(); ++i) {
      JsonFields d(devices[i], path, "deviceProperties[" + std::to_string(i) + "]");
      // One GPU per rank's trace: its SM count (2^20 is beyond any GPU's).
      if (d.has("numSms")) sms_ = std::max(sms_, static_cast<int>(d.integer("numSms", 1, 1 << 20)));
    }
    if (sms_ == 0) return;
    std::map<double, int> change;  // time -> change in the SMs held
    for (const Span& s : spans) {
      const Json* grid = arg(s, "grid");
      if (!is_nccl_kernel(s) || !grid) continue;
      if (!grid->is_array() || grid->empty() || !grid->at(0).is_number_integer() ||
          grid->at(0).get<std::int64_t>() < 1 || grid->at(0).get<std::int64_t>() > (1 << 20))
        throw InputError(
            path, "traceEvents[" + std::to_string(s.event) + "].args.grid",
            "must be [x, y, z] with x the kernel's blocks (one per NCCL channel), an integer in [1, 2^20]");
      const int blocks = static_cast<int>(grid->at(0).get<std::int64_t>());
      change[s.start_s] += blocks;
      change[s.end_s] -= blocks;
    }
    int held = 0;
    for (auto [t, delta] : change) held += delta, held_.push_back({t, held});
  }
  // The work of GPU span `s`: its duration at full speed.
  double work_s(const Span& s) const {
    const double duration = s.end_s - s.start_s;
    if (held_.empty()) return duration;
    auto it =
        std::upper_bound(held_.begin(), held_.end(), s.start_s, [](double t, const Held& h) { return t < h.from_s; });
    int held = it == held_.begin() ? 0 : std::prev(it)->sms;
    double work = 0, at = s.start_s;
    for (; at < s.end_s; ++it) {
      const double to = it == held_.end() ? s.end_s : std::min(s.end_s, it->from_s);
      work += (to - at) * (held > 0 ? compute_share(sms_, held) : 1.0);
      at = to;
      if (it == held_.end()) break;
      held = it->sms;
    }
    return work;
  }

 private:
  struct Held {
    double from_s;
    int sms;  // held from from_s on
  };
  int sms_ = 0;
  std::vector<Held> held_;
};

// GPU work as the host launched it: each launch (cat cuda_runtime or cuda_driver, args.correlation) with the work of
// the GPU span carrying the same correlation (kernels, copies, memsets; NCCL's kernels are communication). A host
// span's GPU time is that of the launches it made on its thread: GPU work runs after the host queued it, so a module's
// host span times its Python and launches, and these its kernels (how profilers attribute asynchronous GPU work).
class LaunchedGpuTime {
 public:
  LaunchedGpuTime(const std::vector<Span>& spans, const Launches& launches, const NcclOccupancy& occupancy) {
    for (const Span& s : spans)
      if (is_gpu_compute(s))
        if (const Span* launch = launch_of(s, launches))
          launches_.push_back({launch->pid, launch->tid, launch->start_s, occupancy.work_s(s)});
    std::sort(launches_.begin(), launches_.end(), [](const Launch& a, const Launch& b) { return a.at_s < b.at_s; });
  }
  bool empty() const { return launches_.empty(); }
  double within(const Span& host) const {
    auto it = std::lower_bound(launches_.begin(), launches_.end(), host.start_s,
                               [](const Launch& l, double t) { return l.at_s < t; });
    double gpu_s = 0;
    for (; it != launches_.end() && it->at_s < host.end_s; ++it)  // [start, end): a launch at a border counts once
      if (it->pid == host.pid && it->tid == host.tid) gpu_s += it->gpu_s;
    return gpu_s;
  }

 private:
  struct Launch {
    std::int64_t pid, tid;
    double at_s, gpu_s;
  };
  std::vector<Launch> launches_;
};

// A span's time as the model counts it: the GPU work it launched where the trace has GPU work, else its own.
double span_time_s(const Span& s, const LaunchedGpuTime& gpu) {
  return gpu.empty() ? s.end_s - s.start_s : gpu.within(s);
}

// Leaf modules: module spans inside a step with no module span inside them on the same thread.
std::vector<const Span*> leaf_modules(const std::vector<Span>& spans, const StepOf& step_of) {
  std::vector<const Span*> modules;
  for (const Span& s : spans)
    if (starts_with(s.name, kModulePrefix)) modules.push_back(&s);
  std::vector<const Span*> leaves;
  for (std::size_t i = 0; i < modules.size(); ++i) {
    bool leaf = true;
    for (std::size_t j = i + 1; j < modules.size() && modules[j]->start_s < modules[i]->end_s - kSlack_s; ++j)
      leaf &= !(modules[j]->tid == modules[i]->tid && modules[j]->pid == modules[i]->pid &&
                modules[j]->end_s <= modules[i]->end_s + kSlack_s);
    if (leaf && step_of(modules[i]->start_s) >= 0) leaves.push_back(modules[i]);
  }
  return leaves;
}

// The leaf modules' forward times (mean per step) into trace.modules and their spans into `compute`; returns the
// module of each forward op's "Sequence number", by which backward ops find their module.
std::map<std::int64_t, std::size_t> add_forward_modules(const std::vector<Span>& spans,
                                                        const std::vector<const Span*>& leaves,
                                                        const LaunchedGpuTime& gpu, bool gpu_kernels,
                                                        KinetoTrace& trace,
                                                        std::vector<std::pair<double, double>>& compute) {
  const double steps = static_cast<double>(trace.steps.size());
  std::map<std::string, std::size_t> module_index;
  std::map<std::int64_t, std::size_t> module_of_sequence;
  for (const Span* m : leaves) {
    const std::string name = m->name.substr(kModulePrefix.size());
    auto [it, added] = module_index.try_emplace(name, trace.modules.size());
    if (added) trace.modules.push_back({name, 0, 0, -1});
    trace.modules[it->second].forward_s += span_time_s(*m, gpu) / steps;
    if (!gpu_kernels) compute.push_back({m->start_s, m->end_s});
    // Forward ops inside this module on its thread (spans are sorted by start).
    auto first =
        std::lower_bound(spans.begin(), spans.end(), m->start_s, [](const Span& x, double t) { return x.start_s < t; });
    for (auto it_span = first; it_span != spans.end() && it_span->start_s <= m->end_s; ++it_span) {
      const Span& s = *it_span;
      const Json* seq = arg(s, "Sequence number");
      if (s.tid == m->tid && s.pid == m->pid && seq && seq->is_number_integer() && s.end_s <= m->end_s + kSlack_s)
        module_of_sequence.try_emplace(seq->get<std::int64_t>(), it->second);
    }
  }
  return module_of_sequence;
}

// Backward ops into their modules' backward times; with GPU kernels, the GPU's non-NCCL work is the compute, else
// the backward ops are.
void add_backward_and_kernels(const std::vector<Span>& spans, const StepOf& step_of,
                              const std::map<std::int64_t, std::size_t>& module_of_sequence, const LaunchedGpuTime& gpu,
                              bool gpu_kernels, KinetoTrace& trace, std::vector<std::pair<double, double>>& compute) {
  const double steps = static_cast<double>(trace.steps.size());
  for (const Span& s : spans) {
    if (step_of(s.start_s) < 0) continue;
    if (starts_with(s.name, kBackwardPrefix)) {
      double& backward_start_s = trace.steps[static_cast<std::size_t>(step_of(s.start_s))].backward_start_s;
      if (backward_start_s < 0 || s.start_s < backward_start_s) backward_start_s = s.start_s;
      const Json* seq = arg(s, "Sequence number");
      if (seq && seq->is_number_integer()) {
        auto it = module_of_sequence.find(seq->get<std::int64_t>());
        if (it != module_of_sequence.end()) {
          TracedModule& module = trace.modules[it->second];
          module.backward_s += span_time_s(s, gpu) / steps;
          if (step_of(s.start_s) == 0) module.first_backward_end_s = std::max(module.first_backward_end_s, s.end_s);
        }
      }
      if (!gpu_kernels) compute.push_back({s.start_s, s.end_s});
    } else if (gpu_kernels && is_gpu_compute(s)) {
      compute.push_back({s.start_s, s.end_s});
    }
  }
}

}  // namespace

double covered_s(std::vector<std::pair<double, double>> spans, double from_s, double to_s) {
  std::sort(spans.begin(), spans.end());
  double covered = 0, reach = from_s;
  for (auto [a, b] : spans) {
    a = std::max(a, reach);
    b = std::min(b, to_s);
    if (b > a) covered += b - a, reach = b;
  }
  return covered;
}

std::optional<int> TracedStep::number() const {
  const std::size_t at = name.rfind('#');
  const std::string digits = at == std::string::npos ? "" : name.substr(at + 1);
  if (digits.empty() || digits.size() > 6 ||
      !std::all_of(digits.begin(), digits.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
    return std::nullopt;
  return std::stoi(digits);
}

std::string_view to_string(CollectiveSource source) {
  switch (source) {
    case CollectiveSource::NcclKernels:
      return "nccl kernels";
    case CollectiveSource::WorkSpans:
      return "work spans";
    case CollectiveSource::Records:
      break;
  }
  return "record_param_comms";
}

KinetoTrace read_kineto_trace(const std::string& path) {
  const Json root = read_json_file(path);
  const std::vector<Span> spans = trace_spans(root, path);
  KinetoTrace trace;
  const Span& main_thread = add_steps(spans, path, trace);
  const StepOf step_of{trace};
  const std::vector<const Span*> leaves = leaf_modules(spans, step_of);
  std::vector<std::pair<double, double>> compute;
  const Launches launches = launches_of(spans);
  const LaunchedGpuTime gpu(spans, launches, NcclOccupancy(root, spans, path));
  const bool gpu_kernels = std::any_of(spans.begin(), spans.end(), [](const Span& s) { return s.cat == "kernel"; });
  trace.compute_on_gpu = gpu_kernels;
  const auto module_of_sequence = add_forward_modules(spans, leaves, gpu, gpu_kernels, trace, compute);
  add_backward_and_kernels(spans, step_of, module_of_sequence, gpu, gpu_kernels, trace, compute);
  // Without kernels and without module spans (a legacy CPU trace), compute is what the steps' thread runs, less the
  // communication calls on it: the gaps are waits.
  if (!gpu_kernels && leaves.empty())
    for (const Span& s : spans)
      if (s.tid == main_thread.tid && s.pid == main_thread.pid && step_of(s.start_s) >= 0 &&
          !starts_with(s.name, "ProfilerStep#") && !starts_with(s.name, "c10d::") && !is_work_span(s) &&
          s.name != "record_param_comms")
        compute.push_back({s.start_s, s.end_s});
  add_collectives(spans, launches, path, step_of, trace);
  std::vector<std::pair<double, double>> busy = compute;
  for (const auto* list : {&trace.collectives, &trace.forward_collectives})
    for (const TracedCollective& c : *list) busy.push_back({c.start_s, c.start_s + c.duration_s});
  for (TracedStep& st : trace.steps) {
    st.compute_s = covered_s(compute, st.start_s, st.start_s + st.duration_s);
    st.busy_s = covered_s(busy, st.start_s, st.start_s + st.duration_s);
  }
  return trace;
}

Model model_from_trace(const KinetoTrace& trace, const std::string& path, const std::string& name, int batch) {
  if (trace.modules.empty())
    throw InputError(path, "traceEvents",
                     "no \"nn.Module: NAME\" span (profile with with_stack=True or with_modules=True)");
  if (trace.collectives_per_step() == 0)
    throw InputError(path, "traceEvents", "the first step has no collective (NCCL kernel or record_param_comms)");
  for (const TracedCollective& c : trace.collectives) {
    if (c.elements == 0)
      throw InputError(path, "traceEvents",
                       "the collectives' sizes are not in the trace (record_param_comms args: PyTorch 2.1 or later, "
                       "with Kineto)");
    if (!is_gradient_collective(c.name))
      throw InputError(path, "traceEvents[" + std::to_string(c.event) + "].args.Collective name",
                       "\"" + c.name + "\" after the backward began: not a bucket of gradients (allreduce, " +
                           "reduce-scatter, all-gather), which is what the model's tensors would be");
  }
  Model m;
  m.name = name.empty() ? std::filesystem::path(path).stem().string() : name;
  m.source = "PyTorch profiler trace " + std::filesystem::path(path).filename().string() + ", " +
             std::to_string(trace.steps.size()) + " steps; collectives from " +
             std::string(to_string(trace.collective_source)) + "; imported by commsim model from-trace";
  m.sample = batch == 1 ? "the traced batch (times are per batch: simulate with batch_per_gpu 1)"
                        : "one of the " + std::to_string(batch) + " samples of the traced batch";
  m.description = "Measured: forward and backward time per leaf module (mean over the traced steps" +
                  (batch == 1 ? std::string(")") : ", divided by " + std::to_string(batch) + " samples)") +
                  "; gradients as the trace communicates them, one tensor per collective of the first step, on the " +
                  "layer whose backward had ended when it started (simulate with fusion none to keep these buckets).";
  std::size_t forward_count = 0;
  std::uint64_t forward_elements = 0;
  for (const TracedCollective& c : trace.forward_collectives)
    if (c.step == 0) ++forward_count, forward_elements += c.elements;
  if (forward_count > 0)
    m.description += " Not in the model: the " + std::to_string(forward_count) + " collective(s) of " +
                     std::to_string(forward_elements) +
                     " elements that each step issued before its backward (not gradients: DDP's broadcasts of module "
                     "buffers, sharded training's gathers of parameters).";
  for (const TracedModule& t : trace.modules) {
    Layer l;
    l.name = t.name;
    l.forward_s_per_sample = t.forward_s / batch;
    l.backward_s_per_sample = t.backward_s / batch;
    m.layers.push_back(l);
  }
  // All-gathers after the backward began beside reduce-scatters gather sharded parameters back; without any, they are
  // a sparse exchange of selected gradients (DGC), which holds k selected values, not the gradients' sizes.
  const TracedCollective* first_gather = nullptr;
  bool reduce_scatters = false;
  for (const TracedCollective& c : trace.collectives)
    if (c.step == 0) {
      if (is_gather(c.name) && first_gather == nullptr) first_gather = &c;
      reduce_scatters |= contains(c.name, "reduce_scatter");
    }
  if (first_gather != nullptr && !reduce_scatters)
    throw InputError(path, "traceEvents[" + std::to_string(first_gather->event) + "].args.Collective name",
                     "an all-gather after the backward began and no reduce-scatter in the step: a sparse exchange of "
                     "selected gradients (DGC), whose dense sizes a trace does not hold; import a trace taken without "
                     "gradient compression");
  // Each collective's gradients: the layer whose backward ended last before the collective was issued (backward
  // runs in reverse forward order, so that is the lowest forward index among the layers already done). Allreduces
  // and reduce-scatters carry the gradients; an all-gather in backward gathers parameters back (sharded training), so
  // it adds no tensor: each parameter would otherwise count twice.
  std::vector<std::vector<int>> buckets_of_layer(m.layers.size());
  int k = 0;
  std::size_t gathers = 0;
  for (const TracedCollective& c : trace.collectives) {
    if (c.step != 0) continue;
    if (is_gather(c.name)) {
      ++gathers, ++k;
      continue;
    }
    std::size_t layer = m.layers.size() - 1;
    for (std::size_t i = m.layers.size(); i-- > 0;) {
      const double end = trace.modules[i].first_backward_end_s;
      if (end >= 0 && end <= c.issued_s + kSlack_s) layer = i;  // a hook fires as its layer ends
    }
    buckets_of_layer[layer].push_back(k++);
  }
  if (gathers > 0)
    m.description += " The " + std::to_string(gathers) +
                     " all-gather(s) after the backward began gather parameters back, not gradients: no tensor.";
  for (std::size_t l = 0; l < m.layers.size(); ++l)
    for (auto it = buckets_of_layer[l].rbegin(); it != buckets_of_layer[l].rend(); ++it) {
      m.layers[l].tensors.push_back(static_cast<int>(m.tensors.size()));
      const std::uint64_t elements = trace.collectives[static_cast<std::size_t>(*it)].elements;
      m.tensors.push_back({"bucket." + std::to_string(*it), elements, static_cast<int>(l), {}});
    }
  check_loads_back(m, path);
  return m;
}

}  // namespace commsim
