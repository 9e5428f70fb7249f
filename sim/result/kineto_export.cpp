#include "sim/result/kineto_export.hpp"

#include <algorithm>
#include <map>

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

const char* collective_name(Collective op) {
  switch (op) {
    case Collective::AllReduce:
      return "allreduce";
    case Collective::ReduceScatter:
      return "_reduce_scatter_base";
    case Collective::AllGather:
      return "_allgather_base";
    case Collective::Broadcast:
      return "broadcast";
    case Collective::Reduce:
      return "reduce";
  }
  return "allreduce";
}

nlohmann::json span(const std::string& name, const char* cat, int tid, double start_s, double duration_s) {
  return {{"ph", "X"},  {"cat", cat},          {"name", name},           {"pid", 0},
          {"tid", tid}, {"ts", start_s * 1e6}, {"dur", duration_s * 1e6}};
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

namespace {

// The process and thread names of rank 0's timeline.
void add_names(const Result& result, const Plan& plan, nlohmann::json& events) {
  events.push_back(
      {{"ph", "M"}, {"name", "process_name"}, {"pid", 0}, {"args", {{"name", result.scenario + " rank 0"}}}});
  for (int s = 0; s <= plan.streams; ++s)
    events.push_back({{"ph", "M"},
                      {"name", "thread_name"},
                      {"pid", 0},
                      {"tid", s + 1},
                      {"args", {{"name", s == 0 ? std::string("compute") : "comm stream " + std::to_string(s)}}}});
}

// Writes tasks as the profiler's spans, numbering forward ops (Sequence number) and collectives (Seq) as it does.
struct SpanWriter {
  const Plan& plan;
  nlohmann::json& events;
  std::int64_t sequence = 0, collective_seq = 0;
  std::map<std::string, std::int64_t> forward_sequence;  // this step's layers -> their forward op's sequence number

  void collective(const Task& t, const TraceEvent& e) {
    const int elem_bytes = dtype_bytes(plan.comm_dtype);
    const auto elements = static_cast<std::int64_t>(t.collective.bytes / static_cast<Bytes>(elem_bytes));
    const int group = t.collective.ranks.empty() ? plan.ranks : static_cast<int>(t.collective.ranks.size());
    const bool gather = t.collective.op == Collective::AllGather,
               scatter = t.collective.op == Collective::ReduceScatter;
    nlohmann::json op = span("record_param_comms", "cpu_op", t.stream + 1, e.start_s, e.duration_s);
    op["args"] = {{"Collective name", collective_name(t.collective.op)},
                  {"In msg nelems", gather ? elements / group : elements},
                  {"Out msg nelems", scatter ? elements / group : elements},
                  {"dtype", scalar_type(plan.comm_dtype)},
                  {"Group size", group},
                  {"Process Group Name", std::to_string(t.stream)},
                  {"Seq", collective_seq++},
                  {"label", t.label}};
    events.push_back(op);
  }

  void task(const Task& t, const TraceEvent& e) {
    const double start = e.start_s;
    if (t.kind == TaskKind::Compute && starts_with(t.label, "fwd ")) {
      const std::string layer = t.label.substr(4);
      forward_sequence[layer] = sequence;
      events.push_back(span("nn.Module: " + layer, "python_function", 1, start, e.duration_s));
      nlohmann::json op = span("commsim::emulated_compute", "cpu_op", 1, start, e.duration_s);
      op["args"] = {{"Sequence number", sequence++}};
      events.push_back(op);
    } else if (t.kind == TaskKind::Compute && starts_with(t.label, "bwd ")) {
      nlohmann::json op = span("autograd::engine::evaluate_function: commsim::emulated_computeBackward", "cpu_op", 1,
                               start, e.duration_s);
      const auto it = forward_sequence.find(t.label.substr(4));
      if (it != forward_sequence.end()) op["args"] = {{"Sequence number", it->second}};
      events.push_back(op);
    } else if (t.kind == TaskKind::Collective) {
      collective(t, e);
    } else {
      events.push_back(span(t.label, "cpu_op", t.stream + 1, start, e.duration_s));
    }
  }
};

}  // namespace

nlohmann::json kineto_trace(const Result& result, const Plan& plan) {
  nlohmann::json events = nlohmann::json::array();
  add_names(result, plan, events);
  SpanWriter writer{plan, events, 0, 0, {}};
  std::size_t next = 0;
  for (std::size_t step = 0; step < result.steps_s.size() && next < result.trace.size(); ++step) {
    const StepPlan& kind = plan.step_plans[static_cast<std::size_t>(plan.step_plan_of[step])];
    // This rank's own step (as a per-rank profiler sees it): from its first task's start to its last task's end, or
    // to the next step's first start where that comes earlier (priority forward_order starts the next forward while
    // collectives still run; prof.step() spans never overlap). (Result::steps_s of a measured run is the slowest
    // rank's step, not this one's.)
    const auto first_start_of = [&](std::size_t from, std::size_t count) {
      double first = result.trace[from].start_s;
      for (std::size_t i = from; i < std::min(result.trace.size(), from + count); ++i)
        first = std::min(first, result.trace[i].start_s);
      return first;
    };
    const std::size_t last = std::min(result.trace.size(), next + kind.tasks.size());
    const double first_start = first_start_of(next, kind.tasks.size());
    double last_end = first_start;
    for (std::size_t i = next; i < last; ++i)
      last_end = std::max(last_end, result.trace[i].start_s + result.trace[i].duration_s);
    if (step + 1 < result.steps_s.size() && last < result.trace.size()) {
      const StepPlan& following = plan.step_plans[static_cast<std::size_t>(plan.step_plan_of[step + 1])];
      last_end = std::min(last_end, first_start_of(last, following.tasks.size()));
    }
    last_end = std::min(last_end, first_start + result.steps_s[step]);  // the last step: as long as the Result says
    events.push_back(
        span("ProfilerStep#" + std::to_string(step), "user_annotation", 1, first_start, last_end - first_start));
    writer.forward_sequence.clear();
    for (std::size_t i = 0; i < kind.tasks.size() && next < result.trace.size(); ++i, ++next)
      writer.task(kind.tasks[i], result.trace[next]);
  }
  return {{"schemaVersion", 1},
          {"traceName", result.scenario},
          {"distributedInfo", {{"backend", result.backend}, {"rank", 0}, {"world_size", result.ranks}}},
          {"displayTimeUnit", "ms"},
          {"traceEvents", events}};
}

}  // namespace commsim
