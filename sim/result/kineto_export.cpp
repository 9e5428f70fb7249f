#include "sim/result/kineto_export.hpp"

#include <algorithm>
#include <map>

#include "sim/core/text.hpp"

namespace commsim {
namespace {

// PyTorch's names: c10::ScalarType for "dtype", and the "Collective name" each ProcessGroup call records.
const char* scalar_type(CommDtype d) {
  switch (d) {
    case CommDtype::Fp16:
      return "Half";
    case CommDtype::Bf16:
      return "BFloat16";
    case CommDtype::Fp8:
      return "Float8_e4m3fn";
    case CommDtype::Fp32:
      break;
  }
  return "Float";
}

// PyTorch's names of a collective: the "Collective name" a ProcessGroup records, and ProcessGroupMPI's profiling
// title after "mpi:".
struct CollectiveNames {
  const char* recorded;
  const char* mpi_work;
};
CollectiveNames names_of(Collective op) {
  switch (op) {
    case Collective::AllReduce:
      break;
    case Collective::ReduceScatter:
      return {"_reduce_scatter_base", "reduce_scatter"};
    case Collective::AllGather:
      return {"_allgather_base", "all_gather"};
    case Collective::Broadcast:
      return {"broadcast", "broadcast"};
    case Collective::Reduce:
      return {"reduce", "reduce"};
  }
  return {"allreduce", "all_reduce"};
}

nlohmann::json span(const std::string& name, const char* cat, int tid, double start_s, double duration_s, int pid = 0) {
  return {{"ph", "X"},  {"cat", cat},          {"name", name},           {"pid", pid},
          {"tid", tid}, {"ts", start_s * 1e6}, {"dur", duration_s * 1e6}};
}

// NCCL's kernel names: ncclDevKernel_<Func>_<RedOp>_<type>_<ALGO>_<PROTO> (NVIDIA/nccl src/device/generate.py).
std::string nccl_kernel_name(const Task& t, const TraceEvent& e, CommDtype dtype) {
  static const std::map<Collective, const char*> funcs = {{Collective::AllReduce, "AllReduce_Sum"},
                                                          {Collective::ReduceScatter, "ReduceScatter_Sum"},
                                                          {Collective::AllGather, "AllGather"},
                                                          {Collective::Broadcast, "Broadcast"},
                                                          {Collective::Reduce, "Reduce_Sum"}};
  static const std::map<CommDtype, const char*> types = {
      {CommDtype::Fp32, "f32"}, {CommDtype::Fp16, "f16"}, {CommDtype::Bf16, "bf16"}, {CommDtype::Fp8, "f8e4m3"}};
  std::string name = std::string("ncclDevKernel_") + funcs.at(t.collective.op);
  if (t.collective.op != Collective::AllGather && t.collective.op != Collective::Broadcast)
    name += std::string("_") + types.at(dtype);
  for (const char* key : {"algorithm", "protocol"})
    if (e.args.contains(key) && e.args.at(key).is_string()) name += "_" + uppercase(e.args.at(key).get<std::string>());
  return name + "(ncclDevComm*, unsigned long, ncclWork*)";
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

namespace {

// The GPU layout's ids, as Kineto gives them: the GPU's spans under its device index, on their CUDA streams; the
// host's under the process id, its main thread and the thread that runs the gradient hooks.
constexpr int kGpuPid = 0, kHostPid = 1, kMainTid = 1, kHookTid = 2;
int gpu_stream_tid(int stream) { return stream == 0 ? 7 : 20 + stream; }

// The process and thread names of rank 0's timeline.
void add_names(const Result& result, const Plan& plan, bool gpu, nlohmann::json& events) {
  const auto name = [&](const char* what, int pid, int tid, const std::string& text) {
    nlohmann::json e = {{"ph", "M"}, {"name", what}, {"pid", pid}, {"args", {{"name", text}}}};
    if (tid >= 0) e["tid"] = tid;
    events.push_back(e);
  };
  const auto stream_name = [](int s) { return s == 0 ? std::string("compute") : "comm stream " + std::to_string(s); };
  if (!gpu) {
    name("process_name", 0, -1, result.scenario + " rank 0");
    for (int s = 0; s <= plan.streams; ++s) name("thread_name", 0, s + 1, stream_name(s));
    return;
  }
  name("process_name", kHostPid, -1, result.scenario + " rank 0 (host)");
  name("thread_name", kHostPid, kMainTid, "main thread");
  name("thread_name", kHostPid, kHookTid, "gradient hooks");
  name("process_name", kGpuPid, -1, "GPU 0");
  for (int s = 0; s <= plan.streams; ++s) name("thread_name", kGpuPid, gpu_stream_tid(s), stream_name(s));
}

// Writes tasks as the profiler's spans, numbering forward ops (Sequence number) and collectives (Seq) as it does.
// CPU layout: every task a span on its stream's thread, a collective a record_param_comms when issued and a work span
// (mpi:...) from then to its end. GPU
// layout (an NCCL library): compute and local work are kernels on the GPU's streams, each launched by the host
// (cudaLaunchKernel with the kernel's correlation) from the module's span (compute) or the hooks' thread (the rest);
// a collective is record_param_comms and its launch on the hooks' thread when the framework issued it, and its NCCL
// kernel (grid = its channels, the record's args copied on, as libkineto does) while its transfers ran.
struct SpanWriter {
  const Plan& plan;
  bool gpu;
  nlohmann::json& events;
  std::int64_t sequence = 0, collective_seq = 0, correlation = 0;
  std::map<std::string, std::int64_t> forward_sequence;  // this step's layers -> their forward op's sequence number

  int host_tid(const Task& t) const { return gpu ? (t.kind == TaskKind::Compute ? kMainTid : kHookTid) : t.stream + 1; }
  int host_pid() const { return gpu ? kHostPid : 0; }

  // A kernel on the task's GPU stream over [start, start + duration), launched from the host at `launched_s`.
  nlohmann::json& kernel(const Task& t, const std::string& name, double launched_s, double start_s, double duration_s) {
    nlohmann::json launch = span("cudaLaunchKernel", "cuda_runtime", host_tid(t), launched_s, 0, kHostPid);
    launch["args"] = {{"correlation", ++correlation}};
    events.push_back(launch);
    nlohmann::json k = span(name, "kernel", gpu_stream_tid(t.stream), start_s, duration_s, kGpuPid);
    k["args"] = {{"device", 0}, {"stream", gpu_stream_tid(t.stream)}, {"correlation", correlation}};
    events.push_back(k);
    return events.back();
  }

  void collective(const Task& t, const TraceEvent& e) {
    const int elem_bytes = dtype_bytes(plan.comm_dtype);
    const auto elements = static_cast<std::int64_t>(t.collective.bytes / static_cast<Bytes>(elem_bytes));
    const int group = t.collective.ranks.empty() ? plan.ranks : static_cast<int>(t.collective.ranks.size());
    const bool gather = t.collective.op == Collective::AllGather,
               scatter = t.collective.op == Collective::ReduceScatter;
    const nlohmann::json record_args = {{"Collective name", names_of(t.collective.op).recorded},
                                        {"In msg nelems", gather ? elements / group : elements},
                                        {"Out msg nelems", scatter ? elements / group : elements},
                                        {"dtype", scalar_type(plan.comm_dtype)},
                                        {"Group size", group},
                                        {"Process Group Name", std::to_string(t.stream)},
                                        {"Seq", collective_seq++},
                                        {"label", t.label}};
    // Without the details (a measured run that did not record them): issued at its start, its kernel the whole task.
    const double issued = e.issued_s >= 0 ? e.issued_s : e.start_s;
    if (!gpu) {
      // As PyTorch's MPI process group records it: record_param_comms when issued, and the Work's span named by its
      // profiling title from then until the collective is done (torch/csrc/distributed/c10d/ProcessGroupMPI.cpp,
      // enqueue(..., "mpi:all_reduce")).
      nlohmann::json op = span("record_param_comms", "cpu_op", host_tid(t), issued, 0);
      op["args"] = record_args;
      events.push_back(op);
      events.push_back(span(std::string("mpi:") + names_of(t.collective.op).mpi_work, "cpu_op", host_tid(t), issued,
                            e.start_s + e.duration_s - issued));
      return;
    }
    const double kernel_start = e.kernel_start_s >= 0 ? e.kernel_start_s : e.start_s;
    const double kernel_end = e.kernel_end_s >= 0 ? e.kernel_end_s : e.start_s + e.duration_s;
    nlohmann::json op = span("record_param_comms", "cpu_op", host_tid(t), issued, 0, kHostPid);
    op["args"] = record_args;
    events.push_back(op);
    nlohmann::json& k =
        kernel(t, nccl_kernel_name(t, e, plan.comm_dtype), issued, kernel_start, kernel_end - kernel_start);
    k["args"].update(record_args);
    const int channels = e.args.contains("channels") && e.args.at("channels").is_number_integer()
                             ? std::max(1, e.args.at("channels").get<int>())
                             : 1;
    k["args"]["grid"] = {channels, 1, 1};
  }

  // A compute task's host op (`name`, `cat`), with its kernel where the layout has one.
  nlohmann::json& compute(const Task& t, const TraceEvent& e, const std::string& name, const char* cat) {
    events.push_back(span(name, cat, host_tid(t), e.start_s, e.duration_s, host_pid()));
    const std::size_t op = events.size() - 1;
    // Launched mid-span: a launch at the border of two touching spans could fall in either once rounded to us.
    if (gpu) kernel(t, "commsim::compute", e.start_s + e.duration_s / 2, e.start_s, e.duration_s);
    return events[op];
  }

  void task(const Task& t, const TraceEvent& e) {
    if (t.kind == TaskKind::Compute && starts_with(t.label, "fwd ")) {
      const std::string layer = t.label.substr(4);
      forward_sequence[layer] = sequence;
      events.push_back(
          span("nn.Module: " + layer, "python_function", host_tid(t), e.start_s, e.duration_s, host_pid()));
      compute(t, e, "commsim::emulated_compute", "cpu_op")["args"] = {{"Sequence number", sequence++}};
    } else if (t.kind == TaskKind::Compute && starts_with(t.label, "bwd ")) {
      nlohmann::json& op =
          compute(t, e, "autograd::engine::evaluate_function: commsim::emulated_computeBackward", "cpu_op");
      const auto it = forward_sequence.find(t.label.substr(4));
      if (it != forward_sequence.end()) op["args"] = {{"Sequence number", it->second}};
    } else if (t.kind == TaskKind::Collective) {
      collective(t, e);
    } else if (gpu) {
      kernel(t, t.label, e.start_s, e.start_s, e.duration_s);
    } else {
      events.push_back(span(t.label, "cpu_op", host_tid(t), e.start_s, e.duration_s));
    }
  }
};

// A traced step of the Result: its step number and its events, in the plan's task order.
struct TracedStep {
  int step = 0;
  std::size_t first = 0, count = 0;
};

// The simulator's events name their step and task (one rank's: a Kineto trace is one rank's); the MPI backend's are
// its first steps in order, every task of each.
std::vector<TracedStep> traced_steps(const Result& result, const Plan& plan) {
  std::vector<TracedStep> steps;
  const std::vector<TraceEvent>& trace = result.trace;
  const bool numbered = !trace.empty() && trace.front().task >= 0;
  for (std::size_t next = 0; next < trace.size();) {
    const int step = numbered ? trace[next].step : static_cast<int>(steps.size());
    if (step < 0 || step >= plan.steps() || static_cast<std::size_t>(step) >= result.steps_s.size()) break;
    const std::size_t tasks = plan.step_plan(step).tasks.size();
    std::size_t count = 0;
    while (next + count < trace.size() && count < tasks && (!numbered || trace[next + count].step == step)) ++count;
    steps.push_back({step, next, count});
    next += count;
    while (numbered && next < trace.size() && trace[next].step == step) ++next;  // other ranks' of the step
  }
  return steps;
}

}  // namespace

nlohmann::json kineto_trace(const Result& result, const Plan& plan, const CommLibrary& library) {
  // The MPI backend runs even an NCCL scenario on CPUs (compute emulated by waiting): the CPU layout.
  const bool gpu = library.kind == LibraryKind::Nccl && result.backend != "mpi";
  nlohmann::json events = nlohmann::json::array();
  add_names(result, plan, gpu, events);
  SpanWriter writer{plan, gpu, events, 0, 0, 0, {}};
  const std::vector<TracedStep> steps = traced_steps(result, plan);
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const TracedStep& st = steps[k];
    // This rank's own step (as a per-rank profiler sees it): from its first task's start to its last task's end, or
    // to the next traced step's first start where that comes earlier (priority forward_order starts the next forward
    // while collectives still run; prof.step() spans never overlap), and at most as long as the Result's step (the
    // last one). (Result::steps_s of a measured run is the slowest rank's step, not this one's.)
    const auto first_start_of = [&](const TracedStep& t) {
      double first = result.trace[t.first].start_s;
      for (std::size_t i = t.first; i < t.first + t.count; ++i) first = std::min(first, result.trace[i].start_s);
      return first;
    };
    const double first_start = first_start_of(st);
    double last_end = first_start;
    for (std::size_t i = st.first; i < st.first + st.count; ++i)
      last_end = std::max(last_end, result.trace[i].start_s + result.trace[i].duration_s);
    if (k + 1 < steps.size() && steps[k + 1].step == st.step + 1)
      last_end = std::min(last_end, first_start_of(steps[k + 1]));
    last_end = std::min(last_end, first_start + result.steps_s[static_cast<std::size_t>(st.step)]);
    events.push_back(span("ProfilerStep#" + std::to_string(st.step), "user_annotation", 1, first_start,
                          last_end - first_start, gpu ? kHostPid : 0));
    writer.forward_sequence.clear();
    const StepPlan& kind = plan.step_plan(st.step);
    for (std::size_t i = 0; i < st.count; ++i) writer.task(kind.tasks[i], result.trace[st.first + i]);
  }
  nlohmann::json trace = {{"schemaVersion", 1},
                          {"traceName", result.scenario},
                          {"distributedInfo",
                           {{"backend", result.backend},
                            {"rank", result.trace.empty() ? 0 : std::max(0, result.trace.front().rank)},
                            {"world_size", result.ranks}}},
                          {"displayTimeUnit", "ms"},
                          {"traceEvents", events}};
  // Kineto's device list; numSms is what a reader needs to take NCCL's SMs out of the compute beside it.
  if (gpu && library.sms > 0) trace["deviceProperties"] = {{{"id", 0}, {"numSms", library.sms}}};
  return trace;
}

}  // namespace commsim
