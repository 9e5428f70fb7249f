#include "hw/nccl/result_check.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "hw/nccl/checks.hpp"

namespace commsim::nccl {
namespace {

// Verifiable inputs of every checked buffer on one GPU, and its wrong-element counter zeroed.
void fill_inputs(Rank& r, const LaunchProgram& program, const std::vector<CheckItem>& items, int modulus) {
  COMMSIM_CUDA(cudaSetDevice(r.device));
  for (const CheckItem& c : items) {
    Buffers& b = r.buffers[static_cast<std::size_t>(c.buffer)];
    if (c.kind == CheckItem::Dgc)
      kernels::fill_dgc(b.f32, c.elements, c.count, r.rank, r.streams[0]);
    else
      kernels::fill_verifiable(b.f32, program.buffers[static_cast<std::size_t>(c.buffer)].elements, r.rank, modulus,
                               r.streams[0]);
  }
  COMMSIM_CUDA(cudaMemsetAsync(r.wrong, 0, sizeof(unsigned long long), r.streams[0]));
}

// Enqueues the kernel that counts the wrong elements of one result on one GPU.
void count_wrong(Rank& r, const LaunchProgram& program, const CheckItem& c, int modulus) {
  const Buffers& b = r.buffers[static_cast<std::size_t>(c.buffer)];
  const std::uint64_t shard_begin = static_cast<std::uint64_t>(r.rank) * c.count;
  switch (c.kind) {
    case CheckItem::Sum:
      kernels::count_wrong_sum(b.f32, c.first, c.first + c.count, program.ranks, modulus, c.scale, r.wrong,
                               r.streams[0]);
      break;
    case CheckItem::ShardSum:
      kernels::count_wrong_sum(b.f32, shard_begin, shard_begin + c.count, program.ranks, modulus, c.scale, r.wrong,
                               r.streams[0]);
      break;
    case CheckItem::Gathered:
      kernels::count_wrong_gathered(b.f32, c.count * static_cast<std::uint64_t>(program.ranks), c.count, modulus,
                                    r.wrong, r.streams[0]);
      break;
    case CheckItem::Dgc:
      kernels::count_wrong_dgc(b.dense, c.elements, c.count, program.ranks, r.wrong, r.streams[0]);
      break;
  }
}

// Whether another result of the step lands on elements of c's buffer that c's check reads: a buffer reused within a
// step holds only the last result there. The pieces of a bucket (Sum items) are disjoint ranges of one buffer.
bool overlaps_another(const std::vector<CheckItem>& items, const CheckItem& c) {
  const auto range = [](const CheckItem& x) {
    return x.kind == CheckItem::Sum ? std::pair{x.first, x.first + x.count}
                                    : std::pair{std::uint64_t{0}, ~std::uint64_t{0}};
  };
  return std::any_of(items.begin(), items.end(), [&](const CheckItem& o) {
    return &o != &c && o.buffer == c.buffer && range(o).first < range(c).second && range(c).first < range(o).second;
  });
}

}  // namespace

std::vector<CheckItem> check_items(const LaunchStep& step) {
  std::map<int, CheckItem> items;  // by task
  for (const LaunchOp& op : step.ops) {
    if (op.task < 0) continue;
    if (op.kind == OpKind::Scatter) {
      items[op.task] = {CheckItem::Dgc, op.task, op.buffer, op.count, op.elements, 0, 1};
    } else if (op.kind == OpKind::Collective && op.dtype != Dtype::Packed32 && !items.count(op.task)) {
      const CheckItem::Kind k = op.call == Call::ReduceScatter ? CheckItem::ShardSum
                                : op.call == Call::AllGather   ? CheckItem::Gathered
                                                               : CheckItem::Sum;
      items[op.task] = {k, op.task, op.buffer, op.count, 0, op.first, 1};
    } else if (op.kind == OpKind::CastUp && items.count(op.task)) {
      items[op.task].scale = op.scale;
    }
  }
  std::vector<CheckItem> out;
  for (auto& [task, item] : items) out.push_back(item);
  return out;
}

std::uint64_t check_results(const Plan& plan, const LaunchProgram& program, GpuRanks& gpus, const World& world,
                            const std::function<void(int)>& run_untimed, std::vector<std::string>& notes) {
  std::uint64_t wrong = 0;
  const int modulus = static_cast<int>(std::min(64.0, std::floor(exact_limit(program.comm_dtype) / program.ranks) + 1));
  const std::set<int> kinds(plan.step_plan_of.begin(), plan.step_plan_of.end());
  int checked = 0, skipped = 0;
  for (int k : kinds) {
    const std::vector<CheckItem> items = check_items(program.step_plans[static_cast<std::size_t>(k)]);
    for (Rank& r : gpus.ranks()) fill_inputs(r, program, items, modulus);
    run_untimed(k);
    gpus.synchronize();
    for (Rank& r : gpus.ranks()) {
      COMMSIM_CUDA(cudaSetDevice(r.device));
      for (const CheckItem& c : items) {
        const bool dgc = c.kind == CheckItem::Dgc;
        if ((!dgc && modulus < 2) || overlaps_another(items, c)) {
          ++skipped;
          continue;
        }
        ++checked;
        count_wrong(r, program, c, modulus);
      }
      unsigned long long w = 0;
      COMMSIM_CUDA(cudaMemcpyAsync(&w, r.wrong, sizeof w, cudaMemcpyDeviceToHost, r.streams[0]));
      COMMSIM_CUDA(cudaStreamSynchronize(r.streams[0]));
      wrong += w;
    }
  }
  wrong = world.sum(wrong);
  const int local_ranks = static_cast<int>(gpus.ranks().size());
  notes.push_back("check: " + std::to_string(checked / local_ranks) +
                  " collective result(s) per rank compared with exact sums of verifiable integers (modulus " +
                  std::to_string(modulus) + "), " + std::to_string(wrong) + " wrong element(s)" +
                  (skipped ? "; " + std::to_string(skipped / local_ranks) +
                                 " not checkable (buffer reused within a step, or fp8 sums over too many ranks)"
                           : ""));
  return wrong;
}

}  // namespace commsim::nccl
