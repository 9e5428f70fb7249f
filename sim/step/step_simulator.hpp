// Executes a Plan in simulated time: the compute stream and the communication streams of a representative rank
// (the critical one: synchronous collectives wait for the slowest), collectives either in closed form
// (`analytical`, concurrent collectives sharing bandwidth as processor sharing) or as schedules on the flow network.
#pragma once

#include "sim/network/network.hpp"
#include "sim/plan/plan.hpp"
#include "sim/result/result.hpp"
#include "sim/result/trace.hpp"

namespace commsim {

// `trace` selects the steps and ranks whose events go to Result::trace (each with its details and flows).
Result simulate_plan(const Plan& plan, const Topology& topology, Fidelity fidelity, const TraceSelection& trace = {});

}  // namespace commsim
