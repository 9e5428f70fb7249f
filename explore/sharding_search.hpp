// The knobs `commsim recommend` searches for a sharded (ZeRO-2/3, FSDP, MindSpore optimizer parallel) scenario:
// the fusion bucket sizes of the parameter all-gathers and of the gradient reduce-scatters, the communication
// streams, and for stage 3 how far the all-gathers prefetch. Allreduce buckets and allreduce algorithms are not
// searched there: a sharded step has no allreduce.
#pragma once

#include <vector>

#include "explore/tuner.hpp"

namespace commsim::explore {

// Bucket sizes tried for the all-gathers and the reduce-scatters, in MB (MindSpore comm_fusion "size" units).
inline constexpr double kShardingFusionMb[] = {8, 16, 32, 64, 128, 256, 512};

std::vector<Knob> sharding_knobs(const Scenario& given);

}  // namespace commsim::explore
