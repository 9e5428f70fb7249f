#include "hw/nccl/step_marks.hpp"

namespace commsim::nccl {

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

std::vector<Issue> issues_of(const LaunchStep& step, const Marks& marks) {
  std::vector<Issue> out;
  const int n = static_cast<int>(step.ops.size());
  for (int j = 0; j < n; ++j) {
    const LaunchOp& op = step.ops[static_cast<std::size_t>(j)];
    const bool continues = !out.empty() && out.back().op.kind == OpKind::Spin && out.back().last == j - 1 &&
                           op.kind == OpKind::Spin && op.stream == out.back().op.stream && !marks.end_at.count(j - 1) &&
                           !marks.begin_at.count(j);
    if (continues) {
      out.back().last = j;
      out.back().op.seconds += op.seconds;
    } else {
      out.push_back({j, j, op});
    }
  }
  return out;
}

}  // namespace commsim::nccl
