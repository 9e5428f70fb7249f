// The text form of a translated Plan (launch_plan.hpp): names of calls, dtypes and scopes, one line per op, and the
// whole program as `commsim run --backend nccl --dry-run` prints it.
#include <cstdio>

#include "hw/nccl/launch_plan.hpp"

namespace commsim::nccl {

std::string to_string(Call c) {
  switch (c) {
    case Call::AllReduce:
      return "AllReduce";
    case Call::ReduceScatter:
      return "ReduceScatter";
    case Call::AllGather:
      return "AllGather";
    case Call::Reduce:
      return "Reduce";
    case Call::Broadcast:
      return "Broadcast";
  }
  return "?";
}

std::string to_string(Dtype d) {
  switch (d) {
    case Dtype::Float32:
      return "float";
    case Dtype::Float16:
      return "half";
    case Dtype::Bfloat16:
      return "bfloat16";
    case Dtype::Float8e4m3:
      return "f8e4m3";
    case Dtype::Packed32:
      return "packed32";
  }
  return "?";
}

std::string to_string(Scope s) {
  switch (s) {
    case Scope::World:
      return "world";
    case Scope::Intra:
      return "intra";
    case Scope::Inter:
      return "inter";
  }
  return "?";
}

namespace {
// A partition_mb piece's place in its buffer.
std::string from(const LaunchOp& op) { return op.first > 0 ? " from element " + std::to_string(op.first) : ""; }
}  // namespace

std::string describe(const LaunchOp& op, const LaunchProgram& program) {
  char buf[256];
  const char* k = "";
  switch (op.kind) {
    case OpKind::Record:
      std::snprintf(buf, sizeof buf, "s%d record event %d", op.stream, op.event);
      break;
    case OpKind::Wait:
      std::snprintf(buf, sizeof buf, "s%d wait event %d", op.stream, op.event);
      break;
    case OpKind::Spin:
      std::snprintf(buf, sizeof buf, "s%d spin %.3f us", op.stream, op.seconds * 1e6);
      break;
    case OpKind::CastDown:
      k = "cast fp32 ->";
      [[fallthrough]];
    case OpKind::CastUp:
      if (!*k) k = "cast -> fp32 from";
      std::snprintf(buf, sizeof buf, "s%d %s %s buffer %d%s count %llu%s scale %g", op.stream, k,
                    to_string(wire_dtype(program.comm_dtype)).c_str(), op.buffer, from(op).c_str(),
                    static_cast<unsigned long long>(op.count), op.shard ? " (own shard)" : "",
                    static_cast<double>(op.scale));
      break;
    case OpKind::TopK:
      std::snprintf(buf, sizeof buf, "s%d top-k %llu of %llu buffer %d", op.stream,
                    static_cast<unsigned long long>(op.count), static_cast<unsigned long long>(op.elements), op.buffer);
      break;
    case OpKind::Scatter:
      std::snprintf(buf, sizeof buf, "s%d scatter-add %d x %llu pairs into %llu buffer %d", op.stream, program.ranks,
                    static_cast<unsigned long long>(op.count), static_cast<unsigned long long>(op.elements), op.buffer);
      break;
    case OpKind::Collective: {
      const CommSpec& c = program.comms.at(static_cast<std::size_t>(op.comm));
      const bool rooted = op.call == Call::Reduce || op.call == Call::Broadcast;
      std::snprintf(buf, sizeof buf, "s%d nccl%s comm %d (s%d %s) count %llu %s%s%s buffer %d%s", op.stream,
                    to_string(op.call).c_str(), op.comm, c.stream, to_string(c.scope).c_str(),
                    static_cast<unsigned long long>(op.count), to_string(op.dtype).c_str(),
                    op.call == Call::AllGather || op.call == Call::Broadcast ? "" : " sum", rooted ? " root 0" : "",
                    op.buffer, from(op).c_str());
      break;
    }
  }
  return buf;
}

std::string format_program(const Plan& plan, const LaunchProgram& program) {
  static const char* kKinds[] = {"sync", "dgc-sparse", "local-only", "local-average", "sharded"};
  std::string out;
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "# %d ranks, hierarchy groups of %d, %d communication stream(s), %zu communicator(s), %zu buffer(s)\n",
                program.ranks, program.group_size, program.streams, program.comms.size(), program.buffers.size());
  out += buf;
  for (std::size_t k = 0; k < program.step_plans.size(); ++k) {
    std::string steps;
    for (std::size_t s = 0; s < plan.step_plan_of.size(); ++s)
      if (plan.step_plan_of[s] == static_cast<int>(k)) {
        if (!steps.empty()) steps += ',';
        steps += std::to_string(s);
      }
    const LaunchStep& step = program.step_plans[k];
    std::snprintf(buf, sizeof buf, "step kind %zu: %s", k, kKinds[static_cast<int>(step.kind)]);
    out += buf;
    if (step.kind == StepKind::DgcSparse) out += " sparsity " + std::to_string(step.sparsity);
    out += " (steps " + steps + ")\n";
    for (const LaunchOp& op : step.ops) {
      out += "  " + describe(op, program);
      if (op.task >= 0 && op.kind != OpKind::Record && op.kind != OpKind::Wait)
        out += "  [" + plan.step_plans[k].tasks[static_cast<std::size_t>(op.task)].label + "]";
      out += "\n";
    }
  }
  return out;
}

}  // namespace commsim::nccl
