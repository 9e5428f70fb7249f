#include "hw/nccl/launch_plan.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

#include "sim/core/error.hpp"

namespace commsim::nccl {

int dtype_size(Dtype d) {
  switch (d) {
    case Dtype::Float32:
      return 4;
    case Dtype::Float16:
    case Dtype::Bfloat16:
      return 2;
    case Dtype::Float8e4m3:
      return 1;
    case Dtype::Packed32:
      return 4;
  }
  return 4;
}

Dtype wire_dtype(CommDtype d) {
  switch (d) {
    case CommDtype::Fp32:
      return Dtype::Float32;
    case CommDtype::Fp16:
      return Dtype::Float16;
    case CommDtype::Bf16:
      return Dtype::Bfloat16;
    case CommDtype::Fp8:
      return Dtype::Float8e4m3;  // e4m3: the format meant for values (e5m2 is for ranges)
  }
  return Dtype::Float32;
}

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

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

class Translator {
 public:
  Translator(const Plan& plan, int ranks_per_node, LaunchProgram& program) : plan_(plan), program_(program) {
    program_.ranks = plan.ranks;
    program_.streams = plan.streams;
    program_.group_size = hierarchy_group_size(plan, ranks_per_node);
    program_.comm_dtype = plan.comm_dtype;
  }

  LaunchStep step(const StepPlan& step) {
    step_ = &step;
    out_ = LaunchStep{};
    out_.kind = step.kind;
    out_.sparsity = step.sparsity;
    const auto& tasks = step.tasks;
    const int n = static_cast<int>(tasks.size());
    const int start_event = n, join_event0 = n + 1;  // events: one per task, the start, one join per comm stream
    out_.events = n + 1 + plan_.streams;

    // Which tasks another stream waits for (they record an event).
    std::vector<bool> recorded(n, false);
    for (int i = 0; i < n; ++i)
      for (int d : tasks[i].deps) {
        COMMSIM_CHECK(d >= 0 && d < i, "plan task " + std::to_string(i) + " depends on a later task");
        if (tasks[d].stream != tasks[i].stream) recorded[d] = true;
      }
    std::vector<bool> used(plan_.streams + 1, false);
    for (const Task& t : tasks) {
      COMMSIM_CHECK(t.stream >= 0 && t.stream <= plan_.streams, "plan task on stream " + std::to_string(t.stream));
      used[t.stream] = true;
    }

    emit({.kind = OpKind::Record, .stream = 0, .event = start_event});
    for (int s = 1; s <= plan_.streams; ++s)
      if (used[s]) emit({.kind = OpKind::Wait, .stream = s, .event = start_event});

    std::vector<bool> cast_before(n, false);
    for (int i = 0; i < n; ++i) {
      const Task& t = tasks[i];
      std::vector<int> waited;
      for (int d : t.deps)
        if (tasks[d].stream != t.stream && std::find(waited.begin(), waited.end(), d) == waited.end()) {
          emit({.kind = OpKind::Wait, .stream = t.stream, .task = i, .event = d});
          waited.push_back(d);
        }
      switch (t.kind) {
        case TaskKind::Compute:
          emit({.kind = OpKind::Spin, .stream = t.stream, .task = i, .seconds = t.seconds});
          break;
        case TaskKind::Cast:
          cast_down(i, cast_before);
          break;
        case TaskKind::TopK:
          top_k(i);
          break;
        case TaskKind::Collective:
          collective(i, cast_before[i]);
          break;
      }
      if (recorded[i]) emit({.kind = OpKind::Record, .stream = t.stream, .task = i, .event = i});
    }

    for (int s = 1; s <= plan_.streams; ++s)
      if (used[s]) {
        emit({.kind = OpKind::Record, .stream = s, .event = join_event0 + s - 1});
        emit({.kind = OpKind::Wait, .stream = 0, .event = join_event0 + s - 1});
      }
    return std::move(out_);
  }

 private:
  void emit(LaunchOp op) { out_.ops.push_back(op); }

  std::uint64_t elements_of(const Task& t) const {
    if (t.piece.count > 0) return t.piece.count;  // a piece (partition_mb), run on its tensor group's buffer
    std::uint64_t e = 0;
    for (int x : t.tensors) e += plan_.model.tensors[x].elements;
    if (e == 0) e = t.collective.bytes / static_cast<std::uint64_t>(dtype_bytes(program_.comm_dtype));
    return e;
  }
  // The collective task a Cast or TopK prepares: later, on the same stream.
  const Task& prepared(int i) const {
    const Task& t = step_->tasks[i];
    COMMSIM_CHECK(t.prepares > i && t.prepares < static_cast<int>(step_->tasks.size()) &&
                      step_->tasks[t.prepares].kind == TaskKind::Collective &&
                      step_->tasks[t.prepares].stream == t.stream,
                  "plan task '" + t.label + "' prepares no later collective on its stream");
    return step_->tasks[t.prepares];
  }

  // One buffer per distinct tensor group and state (gradients or parameters); sized by the largest use.
  int buffer(const Task& t, std::uint64_t elements) {
    const Buffer holds = buffer_of(t.purpose);
    std::vector<int> key = t.tensors;
    if (key.empty()) key = {-1 - static_cast<int>(program_.buffers.size())};  // no tensors named: a buffer of its own
    auto [it, fresh] = index_.try_emplace({holds, key}, static_cast<int>(program_.buffers.size()));
    if (fresh) program_.buffers.push_back(BufferSpec{.tensors = t.tensors, .holds = holds});
    BufferSpec& b = program_.buffers[it->second];
    b.elements = std::max(b.elements, elements);
    return it->second;
  }

  int comm(int stream, Scope scope) {
    for (std::size_t c = 0; c < program_.comms.size(); ++c)
      if (program_.comms[c].stream == stream && program_.comms[c].scope == scope) return static_cast<int>(c);
    program_.comms.push_back({stream, scope});
    return static_cast<int>(program_.comms.size() - 1);
  }

  // Per-rank count and buffer size of a collective task, as NCCL takes them.
  struct Shape {
    Call call;
    std::uint64_t count, buffer_elements;
  };
  Shape shape(const Task& t) const {
    const std::uint64_t e = elements_of(t), p = static_cast<std::uint64_t>(plan_.ranks);
    switch (t.collective.op) {
      case Collective::AllReduce:
        return {Call::AllReduce, e, e};
      // Sharded groups are padded to a multiple of the ranks so every rank holds an equal shard.
      case Collective::ReduceScatter:
        return {Call::ReduceScatter, ceil_div(e, p), ceil_div(e, p) * p};
      case Collective::AllGather:
        return {Call::AllGather, ceil_div(e, p), ceil_div(e, p) * p};
      case Collective::Reduce:
        return {Call::Reduce, e, e};
      case Collective::Broadcast:
        return {Call::Broadcast, e, e};
    }
    return {Call::AllReduce, e, e};
  }

  // DGC: the top-k selection of the sparse gather it prepares.
  void top_k(int i) {
    const Task& gather = prepared(i);
    COMMSIM_CHECK(gather.purpose == Purpose::SparseGather,
                  "top-k task '" + step_->tasks[i].label + "' prepares no sparse gather");
    const std::uint64_t e = elements_of(gather);
    emit({.kind = OpKind::TopK,
          .stream = step_->tasks[i].stream,
          .task = i,
          .buffer = buffer(gather, e),
          .count = gather.kept,
          .elements = e});
  }

  // The cast to the comm dtype before a collective (the Plan's one Cast covers both ways: CastUp follows it).
  void cast_down(int i, std::vector<bool>& cast_before) {
    const Task& c = prepared(i);
    const Shape s = shape(c);
    const int b = buffer(c, s.buffer_elements);
    program_.buffers[b].comm_copy = true;
    // The input a rank sends: the whole buffer, except for an AllGather, which sends the rank's own shard.
    const bool own_shard = s.call == Call::AllGather;
    emit({.kind = OpKind::CastDown,
          .stream = step_->tasks[i].stream,
          .task = i,
          .buffer = b,
          .count = own_shard ? s.count : s.buffer_elements,
          .shard = own_shard});
    cast_before[step_->tasks[i].prepares] = true;
  }

  void collective(int i, bool cast) {
    const Task& t = step_->tasks[i];
    const Dtype wire = wire_dtype(program_.comm_dtype);
    if (t.purpose == Purpose::SparseGather) {
      const std::uint64_t e = elements_of(t), kept = t.kept;
      // Indices first (aligned), then values in the comm dtype, rounded up to whole words.
      const std::uint64_t words = ceil_div(kept * (4 + static_cast<std::uint64_t>(dtype_size(wire))), 4);
      const int b = buffer(t, e);
      BufferSpec& spec = program_.buffers[b];
      spec.packed_words = std::max(spec.packed_words, words);
      spec.gathered_words = std::max(spec.gathered_words, words * static_cast<std::uint64_t>(plan_.ranks));
      spec.dense_output = true;
      emit({.kind = OpKind::Collective,
            .stream = t.stream,
            .task = i,
            .buffer = b,
            .call = Call::AllGather,
            .comm = comm(t.stream, Scope::World),
            .count = words,
            .dtype = Dtype::Packed32});
      emit({.kind = OpKind::Scatter, .stream = t.stream, .task = i, .buffer = b, .count = kept, .elements = e});
      return;
    }
    const Shape s = shape(t);
    const int b = buffer(t, s.buffer_elements);
    if (cast) program_.buffers[b].comm_copy = true;
    const Dtype dtype = cast ? wire : Dtype::Float32;
    LaunchOp op{.kind = OpKind::Collective,
                .stream = t.stream,
                .task = i,
                .buffer = b,
                .call = s.call,
                .count = s.count,
                .dtype = dtype};
    if (s.call == Call::AllReduce && t.collective.algorithm == Algorithm::Hierarchical) {
      // Paddle use_hierarchical_allreduce as the Plan defines it (the seed document's three phases, which the
      // simulator's schedule and the MPI backend run too): allreduce inside the group, allreduce among the group
      // leaders, broadcast from the leader inside the group.
      LaunchOp group = op, leaders = op, broadcast = op;
      group.comm = comm(t.stream, Scope::Intra);
      leaders.comm = comm(t.stream, Scope::Inter);
      broadcast.call = Call::Broadcast;
      broadcast.comm = group.comm;
      emit(group);
      emit(leaders);
      emit(broadcast);
    } else {
      // Ring, tree, auto and the rest: one ncclAllReduce; NCCL picks (or is told, through NCCL_ALGO) the algorithm.
      op.comm = comm(t.stream, Scope::World);
      emit(op);
    }
    // Local SGD averages parameters: the sum is scaled by 1/ranks on the way back to fp32.
    const float scale = t.purpose == Purpose::ParameterAverage ? 1.0f / static_cast<float>(plan_.ranks) : 1.0f;
    if (cast || scale != 1.0f) {
      const bool own_shard = s.call == Call::ReduceScatter;  // a reduce-scatter leaves each rank its shard
      emit({.kind = OpKind::CastUp,
            .stream = t.stream,
            .task = i,
            .buffer = b,
            .count = own_shard ? s.count : s.buffer_elements,
            .shard = own_shard,
            .scale = scale});
    }
  }

  const Plan& plan_;
  LaunchProgram& program_;
  const StepPlan* step_ = nullptr;
  LaunchStep out_;
  std::map<std::pair<Buffer, std::vector<int>>, int> index_;
};

}  // namespace

LaunchProgram translate_plan(const Plan& plan, int ranks_per_node) {
  LaunchProgram program;
  Translator tr(plan, ranks_per_node, program);
  for (const StepPlan& k : plan.step_plans) program.step_plans.push_back(tr.step(k));
  return program;
}

std::vector<LaunchOp> translate(const Plan& plan, const StepPlan& step, int ranks_per_node) {
  LaunchProgram program;
  Translator tr(plan, ranks_per_node, program);
  return tr.step(step).ops;
}

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
      std::snprintf(buf, sizeof buf, "s%d %s %s buffer %d count %llu%s scale %g", op.stream, k,
                    to_string(wire_dtype(program.comm_dtype)).c_str(), op.buffer,
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
      std::snprintf(buf, sizeof buf, "s%d nccl%s comm %d (s%d %s) count %llu %s%s%s buffer %d", op.stream,
                    to_string(op.call).c_str(), op.comm, c.stream, to_string(c.scope).c_str(),
                    static_cast<unsigned long long>(op.count), to_string(op.dtype).c_str(),
                    op.call == Call::AllGather || op.call == Call::Broadcast ? "" : " sum", rooted ? " root 0" : "",
                    op.buffer);
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
