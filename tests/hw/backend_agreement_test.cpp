// The two hardware backends read one Plan the same way: for every shipped scenario (scenarios/*.json with a model)
// and for variants that reach every step kind and task kind, the MPI backend's preparation (hw/mpi/task_work.hpp)
// and the NCCL backend's translation (hw/nccl/launch_plan.hpp) must name the same collectives, in the same order,
// of the same sizes, on the same state (gradients or parameters), each prepared by the same Cast or TopK task.
// Neither needs MPI running or a GPU: both are the pure halves of their backends.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "hw/mpi/task_work.hpp"
#include "hw/nccl/launch_plan.hpp"
#include "sim/plan/plan.hpp"

namespace commsim {
namespace {

namespace fs = std::filesystem;

// What a backend does for one collective task of a step.
struct Target {
  int task = -1;
  Collective op = Collective::AllReduce;
  bool sparse = false;         // DGC's gather of (value, index) pairs
  std::uint64_t elements = 0;  // the tensors' elements it covers
  std::uint64_t per_rank = 0;  // AllReduce: elements; ReduceScatter / AllGather: a rank's shard; sparse: kept pairs
  Buffer buffer = Buffer::Gradients;
  int prepared_by = -1;  // the Cast or TopK task before it, -1 for none
  bool operator==(const Target&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Target& t) {
  return os << "task " << t.task << " " << to_string(t.op) << (t.sparse ? " sparse" : "") << " elements " << t.elements
            << " per rank " << t.per_rank << " on " << to_string(t.buffer) << " prepared by " << t.prepared_by;
}

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

std::vector<Target> mpi_targets(const Plan& plan, const StepPlan& step) {
  const std::vector<hw::TaskWork> work = hw::task_work(plan, step, hw::gradient_layout(plan));
  std::vector<Target> out(work.size());
  for (std::size_t i = 0; i < work.size(); ++i) {
    const hw::TaskWork& w = work[i];
    if (w.target >= 0) out[static_cast<std::size_t>(w.target)].prepared_by = static_cast<int>(i);
    if (w.work != hw::Work::Dense && w.work != hw::Work::SparseGather) continue;
    Target& t = out[i];
    t.task = static_cast<int>(i);
    t.op = w.op;
    t.sparse = w.work == hw::Work::SparseGather;
    t.elements = w.elements;
    const auto p = static_cast<std::uint64_t>(plan.ranks);
    t.per_rank = t.sparse || w.op == Collective::AllReduce ? (t.sparse ? w.kept : w.elements) : ceil_div(w.elements, p);
    t.buffer = w.buffer;
  }
  std::erase_if(out, [](const Target& t) { return t.task < 0; });
  return out;
}

std::vector<Target> nccl_targets(const Plan& plan, const nccl::LaunchProgram& program, const nccl::LaunchStep& step,
                                 const StepPlan& plan_step) {
  using nccl::Call;
  using nccl::OpKind;
  std::vector<Target> out;
  std::map<int, int> prepared_by;  // collective task -> the task of the CastDown / TopK on its buffer before it
  std::map<int, int> pending;      // stream -> the last CastDown / TopK task not yet followed by a collective
  for (const nccl::LaunchOp& op : step.ops) {
    if (op.kind == OpKind::CastDown || op.kind == OpKind::TopK) pending[op.stream] = op.task;
    if (op.kind != OpKind::Collective) continue;
    if (auto it = pending.find(op.stream); it != pending.end()) prepared_by[op.task] = it->second, pending.erase(it);
    const nccl::BufferSpec& buffer = program.buffers.at(static_cast<std::size_t>(op.buffer));
    // A hierarchical allreduce is Reduce, AllReduce among leaders, Broadcast: one target, the plan's AllReduce.
    if (!out.empty() && out.back().task == op.task) continue;
    Target t;
    t.task = op.task;
    t.sparse = op.dtype == nccl::Dtype::Packed32;
    t.op = op.call == Call::ReduceScatter ? Collective::ReduceScatter
           : op.call == Call::AllGather   ? Collective::AllGather
                                          : Collective::AllReduce;
    // A piece (partition_mb) runs on its tensor group's buffer: its elements are the piece's, its count NCCL's.
    const ElementRange piece = plan_step.tasks[static_cast<std::size_t>(op.task)].piece;
    for (int tensor : buffer.tensors) t.elements += plan.model.tensors[static_cast<std::size_t>(tensor)].elements;
    if (piece.count > 0) t.elements = piece.count;
    if (buffer.holds == Buffer::Loss) t.elements = buffer.elements;  // the loss is no model tensor
    t.per_rank = op.count;
    t.buffer = buffer.holds;
    out.push_back(t);
  }
  // The sparse gather's count is in 32-bit words; its TopK op says how many pairs.
  for (const nccl::LaunchOp& op : step.ops)
    if (op.kind == OpKind::TopK)
      for (Target& t : out)
        if (t.sparse && prepared_by[t.task] == op.task) t.per_rank = op.count;
  for (Target& t : out)
    if (auto it = prepared_by.find(t.task); it != prepared_by.end()) t.prepared_by = it->second;
  return out;
}

struct Case {
  std::string name, file;
  std::vector<std::string> sets;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const auto& entry : fs::directory_iterator("scenarios")) {
    if (entry.path().extension() != ".json") continue;
    std::ifstream in(entry.path());
    if (nlohmann::json::parse(in).contains("model"))
      out.push_back({entry.path().stem().string(), entry.path().string(), {}});
  }
  // What the shipped scenarios leave out, on one of them: hierarchy, casts, DGC, Local SGD, both sharding stages.
  const std::string base = "scenarios/resnet50-cloud-p3.json";
  out.push_back({"hierarchy_fp16",
                 base,
                 {"strategy.use_hierarchical_allreduce=true", "strategy.hierarchical_allreduce_leaders=2",
                  "strategy.comm_dtype=fp16", "strategy.nccl_comm_num=2"}});
  out.push_back(
      {"dgc_bf16",
       base,
       {"strategy.comm_dtype=bf16", R"(strategy.dgc={"rampup_begin_step":1,"rampup_step":2,"sparsity":[0.9,0.999]})"}});
  out.push_back({"localsgd_fp16", base, {"strategy.comm_dtype=fp16", R"(strategy.localsgd={"k_steps":3})"}});
  out.push_back({"adaptive_localsgd", base, {R"(strategy.adaptive_localsgd={"init_k_steps":2,"begin_step":1})"}});
  out.push_back({"sharded2", base, {R"(strategy.sharding={"stage":2})", "strategy.nccl_comm_num=2"}});
  out.push_back({"sharded3_fp8", base, {R"(strategy.sharding={"stage":3})", "strategy.comm_dtype=fp8"}});
  // ByteScheduler: 4 MiB pieces (cut inside tensors and across them), each cast to fp16, on two streams.
  out.push_back({"partitioned_fp16",
                 base,
                 {"strategy.partition_mb=4", "strategy.priority=forward_order", "strategy.comm_dtype=fp16",
                  "strategy.nccl_comm_num=2"}});
  return out;
}

class BackendAgreement : public testing::TestWithParam<Case> {};

TEST_P(BackendAgreement, SameCollectivesSizesBuffersAndOrder) {
  const Case& c = GetParam();
  const Scenario scenario = load_scenario(c.file, c.sets);
  const std::unique_ptr<Topology> topology = load_topology(scenario.topology_path, scenario.nodes);
  const Plan plan = build_plan(scenario, *topology, load_model(scenario.model_path));
  const nccl::LaunchProgram program = nccl::translate_plan(plan, topology->ranks_per_node());
  ASSERT_EQ(program.step_plans.size(), plan.step_plans.size());
  std::size_t collectives = 0;
  for (std::size_t k = 0; k < plan.step_plans.size(); ++k) {
    const std::vector<Target> mpi = mpi_targets(plan, plan.step_plans[k]);
    const std::vector<Target> nccl = nccl_targets(plan, program, program.step_plans[k], plan.step_plans[k]);
    ASSERT_EQ(mpi.size(), nccl.size()) << c.name << " step kind " << k;
    for (std::size_t i = 0; i < mpi.size(); ++i) EXPECT_EQ(mpi[i], nccl[i]) << c.name << " step kind " << k;
    // Each side agrees with the Plan task it came from: the task's purpose fixes the buffer and the sparse form.
    for (const Target& t : mpi) {
      const Task& task = plan.step_plans[k].tasks[static_cast<std::size_t>(t.task)];
      EXPECT_EQ(t.buffer, buffer_of(task.purpose));
      EXPECT_EQ(t.sparse, task.purpose == Purpose::SparseGather);
    }
    collectives += mpi.size();
  }
  EXPECT_GT(collectives, 0u) << c.name << ": a plan without collectives compares nothing";
}

INSTANTIATE_TEST_SUITE_P(Scenarios, BackendAgreement, testing::ValuesIn(cases()),
                         [](const testing::TestParamInfo<Case>& param) {
                           std::string name = param.param.name;
                           for (char& ch : name)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return name;
                         });

// The variants reach what they are meant to: sparse gathers, parameter averages and gathers, loss averages, casts,
// reduce-scatters.
TEST(BackendAgreement, VariantsCoverEveryTaskKindAndPurpose) {
  std::set<std::pair<TaskKind, Purpose>> seen;
  for (const Case& c : cases()) {
    const Scenario scenario = load_scenario(c.file, c.sets);
    const std::unique_ptr<Topology> topology = load_topology(scenario.topology_path, scenario.nodes);
    for (const StepPlan& step : build_plan(scenario, *topology, load_model(scenario.model_path)).step_plans)
      for (const Task& t : step.tasks)
        seen.insert({t.kind, t.kind == TaskKind::Collective ? t.purpose : Purpose::DenseGradients});
  }
  for (TaskKind k : {TaskKind::Compute, TaskKind::Cast, TaskKind::TopK})
    EXPECT_TRUE(seen.count({k, Purpose::DenseGradients})) << to_string(k);
  for (Purpose p : {Purpose::DenseGradients, Purpose::SparseGather, Purpose::ParameterGather, Purpose::ParameterAverage,
                    Purpose::LossAverage})
    EXPECT_TRUE(seen.count({TaskKind::Collective, p})) << to_string(p);
}

}  // namespace
}  // namespace commsim
