#include "hw/mpi/task_work.hpp"

#include "sim/core/error.hpp"

namespace commsim::hw {

std::vector<TaskWork> task_work(const Plan& plan, const StepPlan& step, const GradientLayout& layout) {
  const int n = static_cast<int>(step.tasks.size());
  std::vector<TaskWork> work(step.tasks.size());
  for (int i = 0; i < n; ++i) {
    const Task& t = step.tasks[i];
    TaskWork& w = work[i];
    switch (t.kind) {
      case TaskKind::Compute:
        break;
      case TaskKind::Cast:
      case TaskKind::TopK:
        COMMSIM_CHECK(t.prepares > i && t.prepares < n && step.tasks[t.prepares].kind == TaskKind::Collective,
                      "plan task '" + t.label + "' prepares no later collective");
        w.work = t.kind == TaskKind::Cast ? Work::Cast : Work::TopK;
        w.target = t.prepares;
        break;
      case TaskKind::Collective:
        w.work = t.purpose == Purpose::SparseGather ? Work::SparseGather : Work::Dense;
        w.op = t.collective.op;
        w.ranges = layout.task_ranges(t, plan.model);
        for (const Range& r : w.ranges) w.elements += r.count;
        w.purpose = t.purpose;
        w.buffer = buffer_of(t.purpose);
        w.plan_bytes_sent = t.bytes_sent_per_rank;
        w.kept = t.kept;
        break;
    }
  }
  for (const TaskWork& w : work)
    if (w.target >= 0) {
      COMMSIM_CHECK((w.work == Work::TopK) == (work[w.target].work == Work::SparseGather),
                    "plan: a top-k task prepares a dense collective, or a cast a sparse gather");
      work[w.target].prepared_early = true;
    }
  return work;
}

}  // namespace commsim::hw
