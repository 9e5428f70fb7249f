#include "hw/nccl/launch_plan.hpp"

#include <algorithm>
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

    const std::vector<bool> recorded = waited_for(tasks);
    const std::vector<bool> used = used_streams(tasks);

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

  // Which tasks another stream waits for (they record an event).
  static std::vector<bool> waited_for(const std::vector<Task>& tasks) {
    const int n = static_cast<int>(tasks.size());
    std::vector<bool> recorded(n, false);
    for (int i = 0; i < n; ++i)
      for (int d : tasks[i].deps) {
        COMMSIM_CHECK(d >= 0 && d < i, "plan task " + std::to_string(i) + " depends on a later task");
        if (tasks[d].stream != tasks[i].stream) recorded[d] = true;
      }
    return recorded;
  }

  // Which streams the step's tasks use.
  std::vector<bool> used_streams(const std::vector<Task>& tasks) const {
    std::vector<bool> used(plan_.streams + 1, false);
    for (const Task& t : tasks) {
      COMMSIM_CHECK(t.stream >= 0 && t.stream <= plan_.streams, "plan task on stream " + std::to_string(t.stream));
      used[t.stream] = true;
    }
    return used;
  }

  std::uint64_t elements_of(const Task& t) const {
    if (t.purpose == Purpose::LossAverage) return kLossElements;
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
    // No tensors named: a buffer of its own, except the loss, which is one buffer for all its allreduces.
    if (key.empty() && holds != Buffer::Loss) key = {-1 - static_cast<int>(program_.buffers.size())};
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

  // Where a partition_mb piece starts in its tensor group's buffer: the pieces of a bucket are disjoint ranges of
  // one buffer, as the MPI backend cuts them (the Plan's ElementRange). Only allreduces are cut into pieces.
  static std::uint64_t first_of(const Task& t, const Shape& s) {
    if (t.piece.count == 0) return 0;
    COMMSIM_CHECK(s.call == Call::AllReduce,
                  "plan task '" + t.label + "': a piece of a collective other than allreduce");
    return t.piece.offset;
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
    const std::uint64_t first = first_of(c, s);
    const int b = buffer(c, first + s.buffer_elements);
    program_.buffers[b].comm_copy = true;
    // The input a rank sends: the whole buffer, except for an AllGather, which sends the rank's own shard.
    const bool own_shard = s.call == Call::AllGather;
    emit({.kind = OpKind::CastDown,
          .stream = step_->tasks[i].stream,
          .task = i,
          .buffer = b,
          .count = own_shard ? s.count : s.buffer_elements,
          .shard = own_shard,
          .first = first});
    cast_before[step_->tasks[i].prepares] = true;
  }

  void collective(int i, bool cast) {
    if (step_->tasks[i].purpose == Purpose::SparseGather) return sparse_gather(i);
    dense_collective(i, cast);
  }

  // DGC: the all-gather of every rank's packed (index, value) pairs, then their scatter-add into a dense buffer.
  void sparse_gather(int i) {
    const Task& t = step_->tasks[i];
    const Dtype wire = wire_dtype(program_.comm_dtype);
    const std::uint64_t e = elements_of(t), kept = t.kept;
    // Indices first (aligned), then values in the comm dtype, rounded up to whole words.
    const std::uint64_t words = ceil_div(kept * (4 + static_cast<std::uint64_t>(dtype_size(wire))), 4);
    const int b = buffer(t, e);
    BufferSpec& spec = program_.buffers[b];
    spec.packed_words = std::max(spec.packed_words, words);
    spec.gathered_words = std::max(spec.gathered_words, words * static_cast<std::uint64_t>(plan_.ranks));
    spec.dense_output = true;
    // A tensor that keeps no pair (sparsity leaves k = 0) has nothing to gather: no call of count 0 on the buffers
    // never allocated for it (NCCL would refuse them under NCCL_CHECK_POINTERS); the scatter still writes the zeros.
    if (words > 0)
      emit({.kind = OpKind::Collective,
            .stream = t.stream,
            .task = i,
            .buffer = b,
            .call = Call::AllGather,
            .comm = comm(t.stream, Scope::World),
            .count = words,
            .dtype = Dtype::Packed32});
    emit({.kind = OpKind::Scatter, .stream = t.stream, .task = i, .buffer = b, .count = kept, .elements = e});
  }

  // A dense collective in fp32, or in the comm dtype after a cast; then the cast back (and Local SGD's scaling).
  void dense_collective(int i, bool cast) {
    const Task& t = step_->tasks[i];
    const Shape s = shape(t);
    const std::uint64_t first = first_of(t, s);
    const int b = buffer(t, first + s.buffer_elements);
    if (cast) program_.buffers[b].comm_copy = true;
    const Dtype dtype = cast ? wire_dtype(program_.comm_dtype) : Dtype::Float32;
    LaunchOp op{.kind = OpKind::Collective,
                .stream = t.stream,
                .task = i,
                .buffer = b,
                .call = s.call,
                .count = s.count,
                .dtype = dtype,
                .first = first};
    if (s.call == Call::AllReduce && t.collective.algorithm == Algorithm::Hierarchical) {
      hierarchical_allreduce(op, t.stream);
    } else {
      // Ring, tree, auto and the rest: one ncclAllReduce; NCCL picks (or is told, through NCCL_ALGO) the algorithm.
      op.comm = comm(t.stream, Scope::World);
      emit(op);
    }
    // The sum becomes the average (the Plan's purposes; plan.hpp), scaled by 1/ranks on the way back to fp32 (in
    // place for an fp32 collective), as the MPI backend divides: gradients (DDP's division by the world size),
    // Local SGD's parameters and adaptive Local SGD's loss. A gather of parameter shards is not summed.
    const bool averaged = t.purpose == Purpose::DenseGradients || t.purpose == Purpose::ParameterAverage ||
                          t.purpose == Purpose::LossAverage;
    const float scale = averaged ? 1.0f / static_cast<float>(plan_.ranks) : 1.0f;
    if (cast || scale != 1.0f) {
      const bool own_shard = s.call == Call::ReduceScatter;  // a reduce-scatter leaves each rank its shard
      emit({.kind = OpKind::CastUp,
            .stream = t.stream,
            .task = i,
            .buffer = b,
            .count = own_shard ? s.count : s.buffer_elements,
            .dtype = dtype,  // what the collective left: the comm dtype's copy, or the fp32 buffer itself
            .shard = own_shard,
            .first = first,
            .scale = scale});
    }
  }

  // Paddle use_hierarchical_allreduce as the Plan defines it (the seed document's three phases, which the
  // simulator's schedule and the MPI backend run too): allreduce inside the group, allreduce among the group
  // leaders, broadcast from the leader inside the group.
  void hierarchical_allreduce(const LaunchOp& op, int stream) {
    LaunchOp group = op, leaders = op, broadcast = op;
    group.comm = comm(stream, Scope::Intra);
    leaders.comm = comm(stream, Scope::Inter);
    broadcast.call = Call::Broadcast;
    broadcast.comm = group.comm;
    emit(group);
    emit(leaders);
    emit(broadcast);
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

}  // namespace commsim::nccl
