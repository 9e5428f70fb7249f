#include "hw/mpi/rank_buffers.hpp"

#include <algorithm>

#include "hw/common/dtype.hpp"

namespace commsim::hw {

RankBuffers::RankBuffers(const RankContext& context, const PreparedTasks& tasks, const GradientLayout& layout) {
  const Plan& plan = context.plan;
  for (std::uint64_t elements : tasks.residual_elements) {
    residuals.emplace_back(elements, 0.0f);
    expected_sparse.emplace_back();
    if (context.options.check)
      shadows.emplace_back(static_cast<std::size_t>(context.ranks), std::vector<float>(elements, 0.0f));
  }
  std::uint64_t largest = 0, largest_gather = 0;
  for (const auto& kind : tasks.by_step_kind)
    for (const PreparedTask& p : kind) {
      largest = std::max(largest, p.elements);
      if (p.work == Work::SparseGather) largest_gather = std::max(largest_gather, p.kept);
    }
  const std::size_t element = element_bytes(context.dtype);
  const std::size_t pair = element + sizeof(std::uint32_t);
  gradients.assign(layout.elements, 0.0f);
  if (plan.local_sgd || plan.sharded) parameters.assign(layout.elements, 0.0f);
  streams.resize(plan.streams + 1);
  const int group_size = hierarchy_group_size(plan, context.topology.ranks_per_node());
  for (int s = 1; s <= plan.streams; ++s) {  // collective over the world: the same order on every rank
    Stream& stream = streams[s];
    stream.comms = StreamComms::create(MPI_COMM_WORLD, group_size);
    stream.vector.resize(std::max<std::size_t>(largest * element, largest_gather * pair));
    stream.staging.resize(
        std::max({tasks.staging_elements * element, largest * element, largest_gather * pair * context.ranks}));
    stream.floats.resize(largest);
  }
  reset(context.rank);
}

void RankBuffers::reset(int rank) {
  for (std::size_t i = 0; i < gradients.size(); ++i)
    gradients[i] =
        static_cast<float>((i * 2654435761u + static_cast<std::size_t>(rank) * 40503u) % 1000) / 1000.0f - 0.5f;
  std::fill(parameters.begin(), parameters.end(), 0.0f);
  for (auto& r : residuals) std::fill(r.begin(), r.end(), 0.0f);
  for (auto& per_rank : shadows)
    for (auto& r : per_rank) std::fill(r.begin(), r.end(), 0.0f);
  window_salts.clear();
}

void RankBuffers::free_communicators() {
  for (Stream& stream : streams) stream.comms.free();
}

}  // namespace commsim::hw
