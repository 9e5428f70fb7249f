#include "explore/baseline.hpp"

#include <chrono>
#include <filesystem>
#include <set>

#include "explore/grid.hpp"
#include "reports/format.hpp"
#include "sim/core/data_path.hpp"
#include "sim/core/json_fields.hpp"

namespace commsim::explore {

using namespace commsim::reports;  // the writers: tables, CSV, SVG, HTML, progress

Baseline load_baseline(const std::string& path, bool updating) {
  namespace fs = std::filesystem;
  const Json doc = read_json_file(path);
  JsonFields top(doc, path, "");
  Baseline b;
  b.file = path;
  b.commsim_version = top.string("commsim_version");
  if (b.commsim_version != COMMSIM_VERSION && !updating)
    top.fail("commsim_version", "baseline is from commsim " + b.commsim_version + ", this is commsim " +
                                    COMMSIM_VERSION + ": re-run with --update to rebase it");
  b.description = top.string_or("description", "");
  b.tolerance_pct = top.has("tolerance_pct") ? top.number_within("tolerance_pct", 0, kMaxTolerancePct) : 1;
  const Json& list = top.array("scenarios");
  if (list.empty()) top.fail("scenarios", "lists no scenario");
  std::set<std::string> names;
  for (std::size_t i = 0; i < list.size(); ++i) {
    JsonFields f(list[i], path, "scenarios[" + std::to_string(i) + "]");
    BaselineEntry e;
    e.name = f.string("name");
    if (e.name.empty()) f.fail("name", "must not be empty");  // its row and its lines would have no label
    if (!names.insert(e.name).second) f.fail("name", "\"" + e.name + "\" appears twice");
    e.scenario = f.string("scenario");
    e.scenario_path = resolve_beside(path, e.scenario);
    if (!is_regular_file(e.scenario_path)) f.fail("scenario", "no such file " + e.scenario_path);
    if (const Json* sets = f.raw_optional("set")) {
      if (!sets->is_array()) f.fail("set", "must be an array of \"key=value\" strings");
      for (const Json& s : *sets) {
        if (!s.is_string()) f.fail("set", "must be an array of \"key=value\" strings");
        e.sets.push_back(s.get<std::string>());
      }
    }
    e.fidelity = f.string_or("fidelity", "analytical");
    Fidelity fidelity;
    if (!parse_fidelity(e.fidelity, fidelity))
      f.fail("fidelity", "unknown fidelity \"" + e.fidelity + "\" (analytical, flow)");
    e.backend = f.string_or("backend", "sim");
    if (e.backend != "sim" && e.backend != "mpi" && e.backend != "nccl")
      f.fail("backend", "unknown backend \"" + e.backend + "\" (sim, mpi, nccl)");
    e.description = f.string_or("description", "");
    e.step_time_s = f.number_or("step_time_s", 0);
    if (e.step_time_s < 0 || (!updating && e.step_time_s == 0))
      f.fail("step_time_s", "missing or not > 0: run commsim regress --baseline " + path + " --update to store it");
    e.step_time_spread_s = f.number_or("step_time_spread_s", 0);
    if (e.step_time_spread_s < 0) f.fail("step_time_spread_s", "must be >= 0");
    // A simulation has no run-to-run spread: a stored one would be ignored by the check and dropped by --update.
    if (e.backend == "sim" && f.raw_optional("step_time_spread_s"))
      f.fail("step_time_spread_s", "is a measurement's spread: a simulated entry (backend sim) has none");
    f.reject_unknown();
    b.entries.push_back(e);
  }
  top.reject_unknown();
  return b;
}

nlohmann::ordered_json baseline_json(const Baseline& b) {
  using Ordered = nlohmann::ordered_json;
  Ordered list = Ordered::array();
  for (const BaselineEntry& e : b.entries) {
    Ordered j = {{"name", e.name}, {"scenario", e.scenario}};
    if (!e.description.empty()) j["description"] = e.description;
    if (!e.sets.empty()) j["set"] = e.sets;
    j["fidelity"] = e.fidelity;
    if (e.backend != "sim") j["backend"] = e.backend;
    j["step_time_s"] = e.step_time_s;
    if (e.backend != "sim") j["step_time_spread_s"] = e.step_time_spread_s;
    list.push_back(j);
  }
  Ordered out = {{"commsim_version", COMMSIM_VERSION}};
  if (!b.description.empty()) out["description"] = b.description;
  out["tolerance_pct"] = b.tolerance_pct;
  out["scenarios"] = list;
  return out;
}

std::string_view to_string(Verdict v) {
  static constexpr std::string_view names[] = {"pass", "faster", "REGRESSION", "skipped"};
  return names[static_cast<int>(v)];
}

Check compare(const BaselineEntry& e, double now_s, double now_spread_s, double tolerance_pct) {
  Check c;
  c.now_s = now_s;
  c.now_spread_s = now_spread_s;
  if (e.step_time_s <= 0) {  // a new entry: nothing stored to compare with
    c.verdict = Verdict::Pass;
    c.message = "new entry, nothing stored yet";
    return c;
  }
  c.change = now_s / e.step_time_s - 1;
  const double delta = now_s - e.step_time_s, allowed = e.step_time_s * tolerance_pct / 100;
  const double noise = e.backend == "sim" ? 0.0 : e.step_time_spread_s;
  const std::string band = noise > 0 ? " and the " + fixed(noise * 1e3, 3) + " ms noise band" : "";
  const std::string change = fixed(e.step_time_s * 1e3, 3) + " ms -> " + fixed(now_s * 1e3, 3) + " ms (" +
                             (c.change >= 0 ? "+" : "") + percent(c.change, 2) + ")";
  if (delta > allowed && delta > noise) {
    c.verdict = Verdict::Regression;
    c.message = "slower: " + change + ", beyond the " + number(tolerance_pct) + " % tolerance" + band;
  } else if (-delta > allowed && -delta > noise) {
    c.verdict = Verdict::Faster;
    c.message = "faster: " + change + "; run --update to lock the gain in";
  } else {
    c.verdict = Verdict::Pass;
    c.message = "within tolerance: " + change;
  }
  return c;
}

std::vector<Check> check_baseline(const Baseline& b, double tolerance_pct,
                                  const std::map<std::string, Result>& measured, int jobs,
                                  std::vector<double>& seconds) {
  std::vector<Check> checks(b.entries.size());
  seconds.assign(b.entries.size(), 0);
  parallel_for(b.entries.size(), jobs, [&](std::size_t i) {
    const auto start = std::chrono::steady_clock::now();
    const BaselineEntry& e = b.entries[i];
    if (e.backend == "sim") {
      Fidelity fidelity = Fidelity::Analytical;
      parse_fidelity(e.fidelity, fidelity);
      const Result r = simulate_scenario(e.scenario_path, e.sets, 0, fidelity, TraceSelection::none()).result;
      checks[i] = compare(e, r.step_time_s, 0, tolerance_pct);
    } else if (auto it = measured.find(e.name); it != measured.end()) {
      if (it->second.backend != e.backend)
        throw InputError("--measured", e.name,
                         "result is from backend " + it->second.backend + ", the entry from " + e.backend);
      checks[i] = compare(e, it->second.step_time_s, it->second.step_time_spread_s, tolerance_pct);
    } else {
      checks[i].message =
          "hardware entry (" + e.backend + "): no measurement given (--measured " + e.name + "=RESULT.json)";
    }
    seconds[i] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  });
  return checks;
}

}  // namespace commsim::explore
