// Ready-to-paste settings for the frameworks from a scenario's communication strategy: Paddle fleet
// DistributedStrategy, MindSpore comm_fusion, PyTorch DDP (bucket_cap_mb, comm hooks) and NCCL environment variables.
#pragma once

#include <string>

#include "sim/training/scenario.hpp"

namespace commsim::reports {

// `nodes`: the cluster's node count, which a hierarchical_allreduce_inter_nranks of 0 stands for.
std::string paddle_snippet(const Strategy& s, int nodes);
std::string mindspore_snippet(const Strategy& s);
std::string pytorch_snippet(const Strategy& s);
std::string nccl_env_snippet(const Strategy& s);

}  // namespace commsim::reports
