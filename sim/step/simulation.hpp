// One scenario, simulated: load (with overrides), derive the plan, run it. The entry point of every command that
// predicts (simulate, sweep, recommend, regress, validate).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sim/plan/plan.hpp"
#include "sim/result/result.hpp"
#include "sim/step/step_simulator.hpp"

namespace commsim {

struct SimulationRun {
  Scenario scenario;
  std::unique_ptr<Topology> topology;
  Plan plan;
  Result result;
};

// What every command that predicts or runs a scenario starts from: the document with its --set overrides (`sets`;
// `steps` > 0 overrides the step count), its scenario, topology and Plan; result carries the scenario's hash and
// settings, so a measured Result and a predicted one name the same run.
SimulationRun prepare_run(const std::string& path, const std::vector<std::string>& sets, int steps);
SimulationRun prepare_document(const Json& document, const std::string& file);

// prepare_run, then the simulation.
SimulationRun simulate_scenario(const std::string& path, const std::vector<std::string>& sets, int steps,
                                Fidelity fidelity, const TraceSelection& trace = {});
// The same from an already parsed document (after overrides); `file` names it and resolves its relative paths.
SimulationRun simulate_document(const Json& document, const std::string& file, Fidelity fidelity,
                                const TraceSelection& trace = {});

// The scenario's topology at its node count, priced with the scenario's nccl_version where it names one.
std::unique_ptr<Topology> load_scenario_topology(const Scenario& scenario);
// The same release applied to a topology loaded otherwise (validation's calibrated one, from memory).
void use_scenario_release(const Scenario& scenario, Topology& topology);

std::string fnv1a_hex(const std::string& text);
// The settings a Result records (Result::settings): nodes, batch_per_gpu, steps and every strategy.* leaf.
std::map<std::string, std::string> scenario_settings(const Json& document);

}  // namespace commsim
