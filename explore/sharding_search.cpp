#include "explore/sharding_search.hpp"

#include "reports/format.hpp"

namespace commsim::explore {

using namespace commsim::reports;  // the writers: tables, CSV, SVG, HTML, progress

namespace {

Knob fusion_size_knob(const std::string& name, const std::string& field, double given_mb) {
  Knob k{name, false, {}, 0};
  bool matched = false;
  for (double size : kShardingFusionMb) {
    if (size == given_mb) k.given = k.choices.size(), matched = true;
    k.choices.push_back(
        {number(size) + " MB " + name + " buckets", {"strategy.sharding." + field + "=" + number(size)}});
  }
  if (!matched) {
    k.choices.insert(k.choices.begin(), {number(given_mb) + " MB " + name + " buckets (as given)", {}});
    k.given = 0;
  }
  return k;
}

// Prefetch depth in buckets: on demand, one or two ahead, or as far as the stream allows.
Knob prefetch_knob(const Sharding& sh) {
  Knob k{"prefetch", false, {}, 0};
  bool matched = false;
  for (int depth : {0, 1, 2, -1}) {
    if (depth == sh.prefetch_buckets) k.given = k.choices.size(), matched = true;
    const std::string label = depth < 0 ? "unlimited all-gather prefetch"
                              : depth == 0
                                  ? "all-gathers on demand (no prefetch)"
                                  : "prefetch " + std::to_string(depth) + (depth == 1 ? " bucket" : " buckets");
    k.choices.push_back(
        {label,
         {"strategy.sharding.prefetch_buckets=" + (depth < 0 ? std::string("unlimited") : std::to_string(depth))}});
  }
  if (!matched) {
    k.choices.insert(k.choices.begin(),
                     {"prefetch " + std::to_string(sh.prefetch_buckets) + " buckets (as given)", {}});
    k.given = 0;
  }
  return k;
}

}  // namespace

std::vector<Knob> sharding_knobs(const Scenario& given) {
  const Sharding& sh = given.strategy.sharding;
  std::vector<Knob> knobs = {fusion_size_knob("allgather", "allgather_fusion_mb", sh.allgather_fusion_mb),
                             fusion_size_knob("reducescatter", "reducescatter_fusion_mb", sh.reducescatter_fusion_mb)};
  if (sh.stage == 3) knobs.push_back(prefetch_knob(sh));
  return knobs;
}

}  // namespace commsim::explore
