// `commsim compare FILE`: one scenario under several named settings, side by side, each with its speedup over the
// first. The README's demo runs it on scenarios/demo-techniques.json.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "cli/commands.hpp"
#include "sim/core/data_path.hpp"
#include "sim/core/error.hpp"
#include "sim/core/output_file.hpp"

namespace commsim::cli {
namespace {

struct CompareOptions {
  std::string file, fidelity = "analytical", json;
};

template <typename... Args>
std::string line(const char* format, Args... args) {
  const int n = std::snprintf(nullptr, 0, format, args...);
  std::string text(static_cast<std::size_t>(n) + 1, '\0');
  std::snprintf(text.data(), text.size(), format, args...);
  text.pop_back();
  return text;
}

// Variant `i`'s document: its base (the variant above it, or the one it names) with its settings applied.
Json variant_document(const Json& variant, std::size_t i, const std::string& file,
                      const std::map<std::string, Json>& documents, const Json& previous, std::string& name,
                      std::string& description) {
  JsonFields v(variant, file, "variants[" + std::to_string(i) + "]");
  name = v.string("name");
  if (name.empty()) v.fail("name", "must not be empty");  // its row would have no label (as suites refuse it)
  description = v.string_or("description", "");
  Json document = previous;
  if (v.has("base")) {
    const std::string base = v.string("base");
    if (!documents.count(base)) v.fail("base", "no earlier variant is named \"" + base + "\"");
    document = documents.at(base);
  }
  std::vector<std::string> sets;
  JsonFields set = v.object("set");
  for (auto& [key, value] : v.raw("set").items()) {
    set.raw(key);
    sets.push_back(key + "=" + value.dump());
  }
  v.reject_unknown();
  if (documents.count(name)) v.fail("name", "duplicate variant name \"" + name + "\"");
  // Settings replace whole sub-objects: "strategy.dgc" = {...} is one knob.
  document = apply_overrides(document, sets, file);
  // DGC and Local SGD (plain or adaptive) are alternatives: a variant that turns one on drops the other if it is
  // inherited; one that sets both keeps both, and the scenario refuses them.
  const auto sets_key = [&sets](const std::string& key) {
    return std::any_of(sets.begin(), sets.end(), [&](const std::string& s) { return s.starts_with(key + "="); });
  };
  const bool sets_dgc = sets_key("strategy.dgc");
  const bool sets_localsgd = sets_key("strategy.localsgd") || sets_key("strategy.adaptive_localsgd");
  if (document.contains("strategy") && sets_dgc != sets_localsgd) {
    if (sets_dgc) document["strategy"].erase("localsgd"), document["strategy"].erase("adaptive_localsgd");
    if (sets_localsgd) document["strategy"].erase("dgc");
  }
  return document;
}

int run_compare(const CompareOptions& o) {
  Fidelity fidelity;
  if (!parse_fidelity(o.fidelity, fidelity))
    throw InputError("--fidelity", "", "unknown fidelity \"" + o.fidelity + "\" (analytical, flow)");
  const Json spec = read_json_file(o.file);
  JsonFields top(spec, o.file, "");
  const std::string title = top.string("name");
  if (title.empty()) top.fail("name", "must not be empty (it is the table's title)");
  top.string_or("description", "");
  const std::string scenario_path = resolve_beside(o.file, top.string("scenario"));
  if (!is_regular_file(scenario_path)) top.fail("scenario", "no such file " + scenario_path);
  const Json base_document = read_json_file(scenario_path);
  const Json& variants = top.array("variants");
  top.reject_unknown();
  if (variants.empty()) top.fail("variants", "needs at least one variant");

  std::map<std::string, Json> documents;  // by variant name, after its settings
  Json previous = base_document;
  // The table is printed once every variant has been simulated, so that a bad variant leaves stdout empty.
  std::string table = line("%s\n%-16s %12s %9s %11s %11s %10s  %s\n", title.c_str(), "variant", "step (ms)", "speedup",
                           "comm (ms)", "exposed(ms)", "MB/rank", "what changed");
  double baseline_s = 0;
  nlohmann::json rows = nlohmann::json::array();
  for (std::size_t i = 0; i < variants.size(); ++i) {
    std::string name, description;
    Json document;
    SimulationRun run;
    try {
      document = variant_document(variants[i], i, o.file, documents, previous, name, description);
      run = simulate_document(document, scenario_path, fidelity);
    } catch (const InputError& e) {
      // The scenario's own message names the field its settings broke; the variant that set it is named first.
      const std::string at = "variants[" + std::to_string(i) + "]";
      const std::string what = e.what();
      if (what.starts_with(o.file + ": " + at)) throw;
      throw InputError(o.file, at + ".set", "variant \"" + name + "\" makes a bad scenario: " + what);
    }
    documents[name] = document;
    previous = document;
    const Result& r = run.result;
    if (i == 0) baseline_s = r.step_time_s;
    table += line("%-16s %12.2f %8.2fx %11.2f %11.2f %10.1f  %s\n", name.c_str(), r.step_time_s * 1e3,
                  baseline_s / r.step_time_s, r.comm_s * 1e3, r.exposed_comm_s * 1e3, r.bytes_sent_per_rank / 1e6,
                  description.c_str());
    rows.push_back({{"variant", name}, {"speedup", baseline_s / r.step_time_s}, {"result", r.to_json()}});
  }
  std::fputs(table.c_str(), stdout);
  if (!o.json.empty()) {
    write_file(o.json, nlohmann::json{{"name", title}, {"variants", rows}}.dump(2) + "\n", "--json");
  }
  return 0;
}

}  // namespace

void register_compare(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<CompareOptions>();
  CLI::App* cmd = app.add_subcommand("compare", "Simulate one scenario under several named settings, side by side");
  cmd->add_option("file", o->file, "comparison JSON: {name, scenario, variants: [{name, base?, set: {key: value}}]}")
      ->required();
  cmd->add_option("--fidelity", o->fidelity, "analytical | flow");
  cmd->add_option("--json", o->json, "write every variant's result")->check(writable_file());
  cmd->callback([o, &exit_code] { exit_code = run_compare(*o); });
}

}  // namespace commsim::cli
