#include "hw/common/schedule_program.hpp"

#include <algorithm>
#include <string>

#include "sim/core/error.hpp"

namespace commsim::hw {
namespace {

bool overlaps(const Range& a, const Range& b) {
  return a.count > 0 && b.count > 0 && a.offset < b.offset + b.count && b.offset < a.offset + a.count;
}

// `ranges` minus `cut`: the parts of each range that `cut` does not cover.
std::vector<Range> subtract(const std::vector<Range>& ranges, const Range& cut) {
  std::vector<Range> left;
  for (const Range& r : ranges) {
    if (!overlaps(r, cut)) {
      left.push_back(r);
      continue;
    }
    if (r.offset < cut.offset) left.push_back({r.offset, cut.offset - r.offset});
    const std::uint64_t r_end = r.offset + r.count, cut_end = cut.offset + cut.count;
    if (cut_end < r_end) left.push_back({cut_end, r_end - cut_end});
  }
  return left;
}

bool writes_vector(const Action& a) {
  return a.kind == Action::Kind::Reduce || (a.kind == Action::Kind::Receive && a.staging_offset < 0);
}

// Which received transfer each reduce of `rank` adds (kNoOp for other ops): the newest transfer into this rank
// among the reduce's dependencies (the generators list the piece just received last-created; older ones are earlier
// collectives' results).
std::vector<OpId> reduce_operands(const Schedule& schedule, int rank) {
  const std::size_t n = schedule.ops.size();
  std::vector<OpId> operand_of(n, kNoOp);
  for (OpId id = 0; id < n; ++id) {
    const Op& op = schedule.ops[id];
    if (op.kind != OpKind::Reduce || op.src != rank || op.bytes == 0) continue;
    OpId operand = kNoOp;
    for (std::uint32_t d = op.dep_begin; d < op.dep_end(); ++d) {
      const OpId dep = schedule.deps[d];
      const Op& before = schedule.ops[dep];
      if (before.kind == OpKind::Transfer && before.dst == rank && (operand == kNoOp || dep > operand)) operand = dep;
    }
    COMMSIM_CHECK(operand != kNoOp, "schedule op " + std::to_string(id) + ": reduce at rank " + std::to_string(rank) +
                                        " has no received operand");
    const Op& received = schedule.ops[operand];
    COMMSIM_CHECK(received.offset == op.offset && received.bytes == op.bytes,
                  "schedule op " + std::to_string(id) + ": reduce range differs from the range received by op " +
                      std::to_string(operand));
    operand_of[id] = operand;
  }
  return operand_of;
}

// Fills the kind, peer and range of the action of schedule op `id` on `rank`; false when the op is another rank's.
// A Receive whose piece a reduce adds goes to staging (`reduced_operand`).
bool describe_action(const Op& op, OpId id, int rank, bool reduced_operand, OpId operand,
                     const std::vector<int>& action_of, RankProgram& program, Action& a) {
  a.tag = id;
  a.range = {op.offset, op.bytes};
  if (op.kind == OpKind::Transfer && op.src == rank) {
    a.kind = Action::Kind::Send;
    a.peer = op.dst;
    program.sent_elements += op.bytes;
  } else if (op.kind == OpKind::Transfer && op.dst == rank) {
    a.kind = Action::Kind::Receive;
    a.peer = op.src;
    if (reduced_operand) {
      a.staging_offset = static_cast<std::int64_t>(program.staging_elements);
      program.staging_elements += op.bytes;
    }
  } else if (op.kind != OpKind::Transfer && op.src == rank) {
    a.kind = op.kind == OpKind::Reduce && op.bytes > 0 ? Action::Kind::Reduce : Action::Kind::Join;
    if (a.kind == Action::Kind::Reduce) {
      a.operand = action_of[operand];
      a.staging_offset = program.actions[a.operand].staging_offset;
    } else {
      a.range = {};
    }
  } else {
    return false;
  }
  return true;
}

// The action's dependencies: the op's own on this rank, and the buffer hazards on this rank's vector (write after
// read or write, read after write), sorted and unique.
void add_dependencies(const Schedule& schedule, const Op& op, const std::vector<int>& action_of,
                      const RankProgram& program, Action& a) {
  for (std::uint32_t d = op.dep_begin; d < op.dep_end(); ++d) {
    const int local = action_of[schedule.deps[d]];
    if (local >= 0) a.deps.push_back(local);
  }
  const bool writes = writes_vector(a);
  if (a.kind == Action::Kind::Send || writes) {
    for (int before = 0; before < static_cast<int>(program.actions.size()); ++before) {
      const Action& b = program.actions[before];
      const bool conflict = writes ? (b.kind == Action::Kind::Send || writes_vector(b)) : writes_vector(b);
      if (conflict && overlaps(a.range, b.range)) a.deps.push_back(before);
    }
  }
  std::sort(a.deps.begin(), a.deps.end());
  a.deps.erase(std::unique(a.deps.begin(), a.deps.end()), a.deps.end());
}

// Layout of allgather inputs and reduce-scatter outputs, read off the program itself.
void record_layout(RankProgram& program) {
  std::vector<Range> received;
  for (const Action& a : program.actions) {
    if (a.kind == Action::Kind::Send) {
      std::vector<Range> own{a.range};
      for (const Range& r : received) own = subtract(own, r);
      program.contributed.insert(program.contributed.end(), own.begin(), own.end());
      received.push_back(a.range);  // sent once = known to others; a second send of it is not a contribution
    } else if (a.kind == Action::Kind::Receive) {
      received.push_back(a.range);
    }
  }
  for (std::size_t i = 0; i < program.actions.size(); ++i) {
    if (program.actions[i].kind != Action::Kind::Reduce) continue;
    std::vector<Range> kept{program.actions[i].range};
    for (std::size_t later = i + 1; later < program.actions.size(); ++later)
      if (program.actions[later].kind == Action::Kind::Send) kept = subtract(kept, program.actions[later].range);
    program.reduced.insert(program.reduced.end(), kept.begin(), kept.end());
  }
}

}  // namespace

RankProgram rank_program(const Schedule& schedule, int rank) {
  RankProgram program;
  program.rank = rank;
  const std::size_t n = schedule.ops.size();
  const std::vector<OpId> operand_of = reduce_operands(schedule, rank);
  std::vector<bool> reduced_operand(n, false);
  for (OpId operand : operand_of)
    if (operand != kNoOp) reduced_operand[operand] = true;
  std::vector<int> action_of(n, -1);
  for (OpId id = 0; id < n; ++id) {
    const Op& op = schedule.ops[id];
    Action a;
    if (!describe_action(op, id, rank, reduced_operand[id], operand_of[id], action_of, program, a)) continue;
    add_dependencies(schedule, op, action_of, program, a);
    action_of[id] = static_cast<int>(program.actions.size());
    program.actions.push_back(std::move(a));
  }
  record_layout(program);
  return program;
}

}  // namespace commsim::hw
