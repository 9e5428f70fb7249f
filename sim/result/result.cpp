#include "sim/result/result.hpp"

#include <limits>

#include "sim/core/host.hpp"
#include "sim/core/json_fields.hpp"
#include "sim/core/limits.hpp"
#include "sim/core/units.hpp"

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

namespace {

// An array of times in seconds (steps, streams), each in the simulator's range; `positive` refuses 0 too.
std::vector<double> durations(JsonFields& f, const std::string& key, bool positive) {
  std::vector<double> out;
  const Json& items = f.array(key);
  for (std::size_t i = 0; i < items.size(); ++i) {
    const Json& v = items[i];
    const double x = v.is_number() ? v.get<double>() : -1;
    if (!(x >= (positive ? std::numeric_limits<double>::min() : 0) && x <= kMaxSimulatedSeconds))
      f.fail(key + "[" + std::to_string(i) + "]",
             std::string("must be a time in seconds in ") + (positive ? "(0" : "[0") + ", 100 days], got " + v.dump());
    out.push_back(x);
  }
  return out;
}

double non_negative(JsonFields& f, const std::string& key, double most) {
  return f.has(key) ? f.number_within(key, 0, most) : 0;
}

}  // namespace

// Every field named, typed and in range, and nothing else accepted: a result is read back by report, regress,
// sweep --merge and validate --measured, which would otherwise print what a hand-edited file says (a negative step
// time, a rank count past int).
Result Result::from_json(const nlohmann::json& j, const std::string& file) {
  if (!j.is_object() || (!j.contains("scenario") && !j.contains("step_time_s")))
    throw InputError(file, "",
                     "not a commsim result (what simulate or run --json writes): no scenario, no step_time_s");
  JsonFields f(j, file, "");
  Result r;
  r.scenario = f.string("scenario");
  r.backend = f.string("backend");
  r.fidelity = f.string("fidelity");
  r.ranks = static_cast<int>(f.integer("ranks", 1, kMaxRanks));
  r.batch_per_gpu = static_cast<int>(f.integer_or("batch_per_gpu", 0, 0, std::int64_t{1} << 30));
  r.step_time_s = f.duration_s("step_time_s");
  if (r.step_time_s <= 0) f.fail("step_time_s", "must be > 0");
  r.step_time_spread_s = f.has("step_time_spread_s") ? f.duration_s("step_time_spread_s") : 0;
  r.steady_from = static_cast<int>(f.integer_or("steady_from", 0, 0, kMaxSteps));
  r.steps_s = durations(f, "steps", true);
  r.throughput_samples_s = non_negative(f, "throughput_samples_s", 1e18);
  r.scaling_efficiency = non_negative(f, "scaling_efficiency", 1e6);
  JsonFields b = f.object("breakdown");
  r.compute_s = b.duration_s("compute_s");
  r.comm_s = b.duration_s("comm_s");
  r.exposed_comm_s = b.duration_s("exposed_comm_s");
  r.overlap_ratio = non_negative(b, "overlap_ratio", 1);
  b.reject_unknown();
  r.bytes_sent_per_rank = non_negative(f, "bytes_sent", 1e18);
  r.comm_band_rel = non_negative(f, "comm_band_rel", 1e6);
  if (f.has("stream_busy_s")) r.stream_busy_s = durations(f, "stream_busy_s", false);
  if (r.stream_busy_s.size() > 65) f.fail("stream_busy_s", "lists more than the 64 communication streams and compute");
  if (f.has("link_class_busy_s")) {
    JsonFields busy = f.object("link_class_busy_s");
    for (const auto& [name, unused] : f.raw("link_class_busy_s").items())
      r.link_class_busy_s[name] = busy.duration_s(name);
  }
  if (const Json* notes = f.raw_optional("notes")) {
    if (!notes->is_array()) f.fail("notes", "must be a list of strings");
    for (const Json& n : *notes) {
      if (!n.is_string()) f.fail("notes", "must be a list of strings");
      r.notes.push_back(n.get<std::string>());
    }
  }
  if (f.has("settings")) {
    JsonFields settings = f.object("settings");
    for (const auto& [key, unused] : f.raw("settings").items()) r.settings[key] = settings.string(key);
  }
  if (f.has("provenance")) {
    JsonFields provenance = f.object("provenance");
    r.scenario_hash = provenance.string_or("scenario_hash", "");
    for (const char* key : {"commsim_version", "backend", "fidelity", "host"}) provenance.string_or(key, "");
    provenance.reject_unknown();
  }
  f.raw_optional("trace");  // the timeline report reads beside the result (result_report.cpp)
  f.reject_unknown();
  return r;
}

}  // namespace commsim
