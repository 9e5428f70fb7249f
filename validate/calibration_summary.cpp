// What validation uses of a calibrated topology (CalibrationSummary) and the band's scaled copies of it.
#include <algorithm>

#include "sim/core/json_fields.hpp"
#include "validate/calibration.hpp"

namespace commsim::validate {

namespace {

const Json& find_calibration_block(const Json& doc, const std::string& file) {
  const Json* cal = nullptr;
  if (doc.is_object() && doc.contains("sources") && doc["sources"].is_object() &&
      doc["sources"].contains("calibration"))
    cal = &doc["sources"]["calibration"];
  if (!cal || !cal->is_object())
    throw InputError(file, "sources.calibration",
                     "missing: not a calibrated topology (make one with `commsim calibrate`)");
  return *cal;
}

// Throws Json::exception where a field is missing or mistyped (summarise_calibration names the block).
void read_summary_fields(const Json& doc, const Json& cal, CalibrationSummary& s) {
  s.topology_name = cal.at("topology").at("name").get<std::string>();
  const Json& pv = cal.at("provenance");
  s.cluster = pv.at("cluster").get<bool>();
  s.date = pv.value("date", "");
  s.host = pv.value("host", "");
  s.reduce_Bps = cal.at("reduction").at("reduce_Bps").get<double>();
  s.dgc_Bps = cal.contains("dgc") ? cal.at("dgc").at("dgc_Bps").get<double>() : 0.0;
  s.model = cal.value("model", "");
  for (const auto& [name, c] : cal.at("link_classes").items()) {
    s.band_rel.emplace_back(name, c.at("band_rel").get<double>());
    const Json& lc = doc.at("link_classes").at(name);
    s.lines.push_back({name, lc.at("latency_s").get<double>(),
                       lc.at("bandwidth_Bps").get<double>() * lc.value("efficiency", 1.0),
                       c.at("pingpong_fit").at("r2").get<double>(),
                       c.at("pingpong_fit").at("breakpoints_bytes").get<std::vector<double>>()});
  }
  if (cal.contains("collective")) {
    const Json& cf = cal.at("collective");
    s.collective_used = cf.value("used", false);
    s.collective_step_latency_s = cf.value("alpha_step_s", 0.0);
    s.collective_beta_Bps = cf.value("beta_Bps", 0.0);
    if (cf.contains("fit")) s.collective_r2 = cf["fit"].value("r2", 0.0);
  }
  if (cal.contains("concurrent")) {
    const Json& cc = cal.at("concurrent");
    s.concurrent_step_delay_s = cc.value("step_delay_s", 0.0);
    s.concurrent_used = doc.contains("library") && doc.at("library").contains("concurrent_step_delay_us");
    s.concurrent_predicted_error = cc.value("predicted_median_abs_rel_error", 0.0);
  }
}

}  // namespace

CalibrationSummary summarise_calibration(const Json& document, const std::string& file) {
  const Json& cal = find_calibration_block(document, file);
  CalibrationSummary s;
  s.file = file;
  s.topology = document;
  try {
    read_summary_fields(document, cal, s);
  } catch (const Json::exception& e) {
    throw InputError(file, "sources.calibration", std::string("malformed: ") + e.what());
  }
  return s;
}

CalibrationSummary read_calibration(const std::string& file) {
  return summarise_calibration(read_json_file(file), file);
}

Json scale_link_classes(const Json& topology, const CalibrationSummary& calibration, double sign) {
  Json out = topology;
  for (const auto& [name, rel] : calibration.band_rel) {
    if (!out["link_classes"].contains(name)) continue;
    const double factor = std::max(0.05, 1 + sign * rel);
    Json& lc = out["link_classes"][name];
    lc["latency_s"] = lc.value("latency_s", 0.0) * factor;
    lc["bandwidth_Bps"] = lc.value("bandwidth_Bps", 1.0) / factor;
  }
  return out;
}

}  // namespace commsim::validate
