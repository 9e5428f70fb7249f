// Executes a Plan in simulated time: the compute stream and the communication streams of a representative rank
// (the critical one: synchronous collectives wait for the slowest), collectives either in closed form
// (`analytical`, concurrent collectives sharing bandwidth as processor sharing) or as schedules on the flow network.
#pragma once

#include "sim/network/network.hpp"
#include "sim/plan/plan.hpp"
#include "sim/result/result.hpp"
#include "sim/result/trace.hpp"

namespace commsim {

// How the flow fidelity runs the collectives: once per class of operations that the network cannot tell apart
// (sim/network/flow_partition.hpp; the same times, found faster), or every operation (the reference in tests).
enum class FlowLumping : std::uint8_t { Classes, None };

// `trace` selects the steps and ranks whose events go to Result::trace (each with its details and flows).
Result simulate_plan(const Plan& plan, const Topology& topology, Fidelity fidelity, const TraceSelection& trace = {},
                     FlowLumping lumping = FlowLumping::Classes);

}  // namespace commsim
