#include "sim/step/simulation.hpp"

#include <cstdio>

#include "sim/collective/nccl_model.hpp"
#include "sim/topology/calibration_band.hpp"

namespace commsim {

std::string fnv1a_hex(const std::string& text) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::map<std::string, std::string> scenario_settings(const Json& document) {
  std::map<std::string, std::string> out;
  auto walk = [&](auto& self, const Json& value, const std::string& key) -> void {
    if (value.is_object()) {
      for (const auto& [k, v] : value.items()) self(self, v, key.empty() ? k : key + "." + k);
      return;
    }
    out[key] = value.is_string() ? value.get<std::string>() : value.dump();
  };
  for (const char* key : {"nodes", "nccl_version", "batch_per_gpu", "steps", "strategy"})
    if (document.contains(key)) walk(walk, document[key], key);
  return out;
}

void use_scenario_release(const Scenario& scenario, Topology& topology) {
  if (!scenario.nccl_version.empty()) nccl::use_release(topology, scenario.nccl_version, scenario.file, "nccl_version");
}

std::unique_ptr<Topology> load_scenario_topology(const Scenario& scenario) {
  std::unique_ptr<Topology> topology = load_topology(scenario.topology_path, scenario.nodes);
  use_scenario_release(scenario, *topology);
  return topology;
}

SimulationRun prepare_document(const Json& document, const std::string& file) {
  SimulationRun run;
  run.scenario = parse_scenario(document, file);
  run.topology = load_scenario_topology(run.scenario);
  run.plan = build_plan(run.scenario, *run.topology, load_model(run.scenario.model_path));
  run.result.scenario_hash = fnv1a_hex(document.dump());
  run.result.settings = scenario_settings(document);
  return run;
}

namespace {

Json document_with_overrides(const std::string& path, const std::vector<std::string>& sets, int steps) {
  std::vector<std::string> all = sets;
  if (steps > 0) all.push_back("steps=" + std::to_string(steps));
  return apply_overrides(read_json_file(path), all, path);
}

}  // namespace

SimulationRun prepare_run(const std::string& path, const std::vector<std::string>& sets, int steps) {
  return prepare_document(document_with_overrides(path, sets, steps), path);
}

SimulationRun simulate_document(const Json& document, const std::string& file, Fidelity fidelity,
                                const TraceSelection& trace) {
  SimulationRun run = prepare_document(document, file);
  Result prepared = std::move(run.result);
  try {
    run.result = simulate_plan(run.plan, *run.topology, fidelity, trace);
  } catch (const TimeRangeError& e) {  // a rate of the scenario or its topology is out of proportion: name both files
    throw InputError(file, e.quantity(), e.detail() + " (topology " + run.scenario.topology_path + ")");
  }
  run.result.scenario_hash = prepared.scenario_hash;
  run.result.settings = std::move(prepared.settings);
  run.result.comm_band_rel = calibration_band_rel(run.scenario.topology_path);
  return run;
}

SimulationRun simulate_scenario(const std::string& path, const std::vector<std::string>& sets, int steps,
                                Fidelity fidelity, const TraceSelection& trace) {
  return simulate_document(document_with_overrides(path, sets, steps), path, fidelity, trace);
}

}  // namespace commsim
