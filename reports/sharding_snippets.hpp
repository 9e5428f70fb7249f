// Ready-to-paste settings for a sharded scenario (sharding.stage 2 or 3): PyTorch FSDP, DeepSpeed ZeRO, Paddle
// group_sharded_parallel and MindSpore optimizer parallel, each with the knobs the framework has for the
// all-gather and reduce-scatter buckets, prefetch and overlap, and a comment where it has none.
#pragma once

#include <cstdint>
#include <string>

#include "sim/scenario/scenario.hpp"

namespace commsim::reports {

// `model_elements`: the model's parameter count (DeepSpeed sizes its buckets in elements; unlimited prefetch is a
// prefetch bucket as large as the model).
std::string fsdp_snippet(const Strategy& s);
std::string deepspeed_snippet(const Strategy& s, std::uint64_t model_elements);
std::string paddle_sharding_snippet(const Strategy& s);
std::string mindspore_sharding_snippet(const Strategy& s);

// fp32 elements in a bucket of `mb` MiB (the unit of the scenario's fusion sizes).
std::uint64_t elements_in_mb(double mb);

}  // namespace commsim::reports
