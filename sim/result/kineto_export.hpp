// A step timeline written as a PyTorch profiler (Kineto) Chrome trace, so that a run of the project's own backends
// (or a prediction) reads like a trace of a PyTorch job: `commsim run --trace F --trace-format kineto`. The event
// names and args are those sim/model/kineto_trace.hpp reads (and PyTorch writes); what differs from PyTorch is
// said in the trace's names: the compute op is "commsim::emulated_compute" (the MPI backend emulates a GPU's compute
// by waiting). On a CPU library, collectives are CPU spans ("record_param_comms", as CPU process groups record
// them); on NCCL, the GPU's kernels with their launches, as a CUDA job's trace has them (kineto_export.cpp).
#pragma once

#include <nlohmann/json.hpp>

#include "sim/plan/plan.hpp"
#include "sim/result/result.hpp"
#include "sim/topology/library.hpp"

namespace commsim {

// `result.trace` holds the first steps of rank 0 on one clock (the simulator's and the MPI backend's both run on
// from step to step), each step's tasks in plan order.
nlohmann::json kineto_trace(const Result& result, const Plan& plan, const CommLibrary& library);

}  // namespace commsim
