#include "hw/common/plan_buffers.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "sim/core/error.hpp"

namespace commsim::hw {

std::vector<Range> GradientLayout::ranges(const std::vector<int>& tensors, const Model& model) const {
  std::vector<Range> out;
  for (int t : tensors) {
    const Range r{offset[t], model.tensors[t].elements};
    if (!out.empty() && out.back().offset + out.back().count == r.offset) {
      out.back().count += r.count;
    } else {
      out.push_back(r);
    }
  }
  return out;
}

std::vector<Range> GradientLayout::task_ranges(const Task& task, const Model& model) const {
  if (task.purpose == Purpose::LossAverage) return {{0, kLossElements}};  // the loss buffer, not the flat one
  std::vector<Range> all = ranges(task.tensors, model);
  if (task.piece.count == 0) return all;
  // Skip piece.offset elements of the concatenation, then keep piece.count.
  std::vector<Range> out;
  std::uint64_t skip = task.piece.offset, keep = task.piece.count;
  for (const Range& r : all) {
    if (skip >= r.count) {
      skip -= r.count;
      continue;
    }
    const std::uint64_t take = std::min(keep, r.count - skip);
    out.push_back({r.offset + skip, take});
    keep -= take;
    skip = 0;
    if (keep == 0) break;
  }
  return out;
}

GradientLayout gradient_layout(const Plan& plan) {
  GradientLayout layout;
  layout.offset.assign(plan.model.tensors.size(), 0);
  std::vector<bool> placed(plan.model.tensors.size(), false);
  auto place = [&](int t) {
    if (placed[t]) return;
    placed[t] = true;
    layout.offset[t] = layout.elements;
    layout.elements += plan.model.tensors[t].elements;
  };
  for (const Bucket& b : plan.buckets)
    for (int t : b.tensors) place(t);
  for (std::size_t t = 0; t < plan.model.tensors.size(); ++t) place(static_cast<int>(t));  // none left, normally
  return layout;
}

std::uint64_t largest_collective_elements(const Plan& plan) {
  std::uint64_t largest = 0;
  for (const StepPlan& kind : plan.step_plans)
    for (const Task& t : kind.tasks) {
      if (t.kind != TaskKind::Collective) continue;
      std::uint64_t elements = t.purpose == Purpose::LossAverage ? kLossElements : t.piece.count;
      if (elements == 0)
        for (int tensor : t.tensors) elements += plan.model.tensors[tensor].elements;
      largest = std::max(largest, elements);
    }
  return largest;
}

std::uint64_t bytes_per_rank(const Plan& plan) {
  const std::uint64_t parameters = plan.model.parameters();
  const std::uint64_t state_copies = 1 + (plan.local_sgd || plan.sharded ? 1 : 0) + (plan.dgc ? 1 : 0);
  // Per stream: packed vector (<= 4 B/element), fp32 view (4 B), staging (<= 2 x 4 B).
  const std::uint64_t per_stream = 16 * largest_collective_elements(plan);
  return 4 * parameters * state_copies + static_cast<std::uint64_t>(plan.streams) * per_stream;
}

std::uint64_t available_memory_bytes() {
  const long pages = sysconf(_SC_AVPHYS_PAGES), page_bytes = sysconf(_SC_PAGESIZE);
  return pages > 0 && page_bytes > 0 ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_bytes) : 0;
}

void check_memory(const Plan& plan, std::uint64_t available_bytes) {
  const double per_rank = static_cast<double>(bytes_per_rank(plan));
  const double needed = per_rank * plan.ranks;
  if (needed <= static_cast<double>(available_bytes)) return;
  char what[256];
  std::snprintf(what, sizeof what,
                "%d ranks need %.3g GB (%.3g GB each for %s's buffers), more than the %.3g GB of memory available",
                plan.ranks, needed / 1e9, per_rank / 1e9, plan.model.name.c_str(),
                static_cast<double>(available_bytes) / 1e9);
  throw InputError(plan.scenario_file, "model", what);
}

}  // namespace commsim::hw
