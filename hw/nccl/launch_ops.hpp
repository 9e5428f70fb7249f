// How the NCCL runtime enqueues one LaunchOp of a translated Plan (launch_plan.hpp) on the GPUs of this process: a
// collective as one NCCL group over every local GPU, any other op on each GPU's stream. Internal to the backend.
#pragma once

#include <vector>

#include "hw/nccl/gpu_ranks.hpp"

namespace commsim::nccl {

// Enqueues a Collective op's NCCL call on one GPU; nothing where the GPU is not a member of the op's communicator.
void enqueue_collective(Rank& r, const LaunchOp& op);

// Enqueues `op` on every GPU of `ranks`. Spin ops wait `factor` x their time (not at all with `no_spin`).
void enqueue_op(std::vector<Rank>& ranks, const LaunchProgram& program, const LaunchOp& op, double factor,
                bool no_spin);

}  // namespace commsim::nccl
