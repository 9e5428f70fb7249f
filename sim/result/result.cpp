#include "sim/result/result.hpp"

#include "sim/core/host.hpp"
#include "sim/core/json_fields.hpp"

namespace commsim {

nlohmann::json Result::to_json() const {
  return {{"scenario", scenario},
          {"backend", backend},
          {"fidelity", fidelity},
          {"ranks", ranks},
          {"batch_per_gpu", batch_per_gpu},
          {"step_time_s", step_time_s},
          {"step_time_spread_s", step_time_spread_s},
          {"steady_from", steady_from},
          {"steps", steps_s},
          {"throughput_samples_s", throughput_samples_s},
          {"scaling_efficiency", scaling_efficiency},
          {"breakdown",
           {{"compute_s", compute_s},
            {"comm_s", comm_s},
            {"exposed_comm_s", exposed_comm_s},
            {"overlap_ratio", overlap_ratio}}},
          {"stream_busy_s", stream_busy_s},
          {"link_class_busy_s", link_class_busy_s},
          {"bytes_sent", bytes_sent_per_rank},
          {"comm_band_rel", comm_band_rel},
          {"notes", notes},
          {"settings", settings},
          {"provenance",
           {{"commsim_version", COMMSIM_VERSION},
            {"scenario_hash", scenario_hash},
            {"backend", backend},
            {"fidelity", fidelity},
            {"host", host_name()}}}};
}

Result Result::from_json(const nlohmann::json& j, const std::string& file) {
  Result r;
  try {
    r.scenario = j.at("scenario").get<std::string>();
    r.backend = j.at("backend").get<std::string>();
    r.fidelity = j.at("fidelity").get<std::string>();
    r.ranks = j.at("ranks").get<int>();
    r.batch_per_gpu = j.value("batch_per_gpu", 0);
    r.step_time_s = j.at("step_time_s").get<double>();
    r.step_time_spread_s = j.value("step_time_spread_s", 0.0);
    r.steps_s = j.at("steps").get<std::vector<double>>();
    r.throughput_samples_s = j.at("throughput_samples_s").get<double>();
    r.scaling_efficiency = j.value("scaling_efficiency", 0.0);
    const auto& b = j.at("breakdown");
    r.compute_s = b.at("compute_s").get<double>();
    r.comm_s = b.at("comm_s").get<double>();
    r.exposed_comm_s = b.at("exposed_comm_s").get<double>();
    r.overlap_ratio = b.value("overlap_ratio", 0.0);
    r.bytes_sent_per_rank = j.at("bytes_sent").get<double>();
    r.comm_band_rel = j.value("comm_band_rel", 0.0);
    r.stream_busy_s = j.value("stream_busy_s", std::vector<double>{});
    r.link_class_busy_s = j.value("link_class_busy_s", std::map<std::string, double>{});
    r.notes = j.value("notes", std::vector<std::string>{});
    r.settings = j.value("settings", std::map<std::string, std::string>{});
    r.scenario_hash = j.at("provenance").value("scenario_hash", "");
  } catch (const nlohmann::json::exception& e) {
    throw InputError(file, "", std::string("not a commsim result: ") + e.what());
  }
  return r;
}

}  // namespace commsim
