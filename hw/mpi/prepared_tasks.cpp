#include "hw/mpi/prepared_tasks.hpp"

#include <algorithm>
#include <map>
#include <string>

#include "hw/common/dtype.hpp"
#include "sim/core/error.hpp"

namespace commsim::hw {
namespace {

// Compiles the simulator's schedules for this rank, each distinct one once.
class ScheduleCompiler {
 public:
  explicit ScheduleCompiler(const RankContext& context) : context_(context) {}

  // The simulator's schedule for `spec` in elements (CollectiveSpec::unit_bytes), compiled for this rank.
  // Reduce-scatter, all-gather and 2d-ring take one channel, so each rank's block is one contiguous range.
  // `unit` sets the unit of `elements`; an all-gather's block of every rank is recorded with `all_blocks` or --check.
  std::shared_ptr<const CompiledSchedule> compile(CollectiveSpec spec, std::uint64_t elements, CommDtype unit,
                                                  bool all_blocks) {
    spec.bytes = elements;
    spec.unit_bytes = dtype_bytes(unit);
    spec.offset = 0;
    spec.aggregate = false;
    spec.reduce_Bps = 1;  // any rate > 0: reductions must appear as operations; their time is measured, not modelled
    if (spec.op != Collective::AllReduce || spec.algorithm == Algorithm::Ring2D) spec.channels = 1;
    const CollectiveKey key = collective_key(spec);  // every field of the normalised spec
    if (auto it = compiled_.find(key); it != compiled_.end()) return it->second;
    Schedule schedule;
    std::vector<OpId> frontier(context_.topology.ranks(), kNoOp);
    generate(spec, context_.topology, schedule, frontier);
    auto compiled = std::make_shared<CompiledSchedule>();
    compiled->program = rank_program(schedule, context_.rank);
    if ((context_.options.check || all_blocks) && spec.op == Collective::AllGather)
      for (int r = 0; r < context_.ranks; ++r)
        compiled->contributed.push_back(r == context_.rank ? compiled->program.contributed
                                                           : rank_program(schedule, r).contributed);
    staging_elements_ = std::max(staging_elements_, compiled->program.staging_elements);
    compiled_[key] = compiled;
    return compiled;
  }

  std::uint64_t staging_elements() const { return staging_elements_; }

 private:
  const RankContext& context_;
  std::map<CollectiveKey, std::shared_ptr<const CompiledSchedule>> compiled_;
  std::uint64_t staging_elements_ = 0;
};

// DGC: one residual per bucket, shared by every step kind that gathers it.
int residual_index(PreparedTasks& tasks, std::map<int, int>& residual_of_bucket, int bucket, std::uint64_t elements) {
  if (auto it = residual_of_bucket.find(bucket); it != residual_of_bucket.end()) return it->second;
  tasks.residual_elements.push_back(elements);
  residual_of_bucket[bucket] = static_cast<int>(tasks.residual_elements.size() - 1);
  return residual_of_bucket[bucket];
}

}  // namespace

PreparedTasks prepare_tasks(const RankContext& context, const GradientLayout& layout) {
  const Plan& plan = context.plan;
  const bool schedules = context.options.impl == CollectiveImpl::Schedule;
  ScheduleCompiler compiler(context);
  std::map<int, int> residual_of_bucket;
  PreparedTasks prepared;
  prepared.by_step_kind.resize(plan.step_plans.size());
  for (std::size_t k = 0; k < plan.step_plans.size(); ++k) {
    const StepPlan& kind = plan.step_plans[k];
    const std::vector<TaskWork> work = task_work(plan, kind, layout);
    std::vector<PreparedTask>& tasks = prepared.by_step_kind[k];
    tasks.resize(work.size());
    for (std::size_t i = 0; i < work.size(); ++i) {
      const Task& t = kind.tasks[i];
      PreparedTask& p = tasks[i];
      static_cast<TaskWork&>(p) = work[i];
      if (p.work == Work::SparseGather) {
        p.residual = residual_index(prepared, residual_of_bucket, t.bucket, p.elements);
        if (schedules) {
          // The plan's ring all-gather of every rank's pairs, run on bytes (an all-gather does no arithmetic, so
          // the 1-byte fp8 unit only sets the unit of offsets).
          CollectiveSpec spec = t.collective;
          spec.op = Collective::AllGather;
          const std::uint64_t pair_bytes = element_bytes(context.dtype) + sizeof(std::uint32_t);
          p.compiled = compiler.compile(spec, context.ranks * p.kept * pair_bytes, CommDtype::Fp8, true);
          COMMSIM_CHECK(p.compiled->program.staging_elements == 0, "the DGC all-gather schedule needs no staging");
        }
      } else if (p.work == Work::Dense) {
        CollectiveSpec spec = t.collective;
        if (spec.algorithm == Algorithm::Auto) spec.algorithm = choose_algorithm(spec, context.topology);
        p.hierarchical = spec.algorithm == Algorithm::Hierarchical;
        if (schedules) p.compiled = compiler.compile(spec, p.elements, context.dtype, false);
      }
    }
  }
  prepared.staging_elements = compiler.staging_elements();
  return prepared;
}

}  // namespace commsim::hw
