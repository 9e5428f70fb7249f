// Ready-to-paste settings for the frameworks from a scenario's communication strategy: Paddle fleet
// DistributedStrategy, MindSpore comm_fusion, PyTorch DDP (bucket_cap_mb, comm hooks) and NCCL environment variables.
#pragma once

#include <string>

#include "sim/scenario/scenario.hpp"

namespace commsim::reports {

// `nodes` and `ranks`: the cluster's, for the hierarchy's groups when the strategy leaves them to one per node.
std::string paddle_snippet(const Strategy& s, int nodes, int ranks);
std::string mindspore_snippet(const Strategy& s);
std::string pytorch_snippet(const Strategy& s);
std::string nccl_env_snippet(const Strategy& s);
// Open MPI's tuned allreduce for the strategy's algorithm, on a topology whose library is MPI; says where Open MPI
// has no such algorithm.
std::string mpi_env_snippet(const Strategy& s);
// Horovod (PyTorch): DistributedOptimizer's compression and the fusion threshold; says where it has no switch.
std::string horovod_snippet(const Strategy& s);
// The hierarchy's number of groups (= leaders) on a cluster of `nodes` nodes and `ranks` ranks.
int hierarchy_leaders(const Strategy& s, int nodes, int ranks);

}  // namespace commsim::reports
