#include "validate/suite.hpp"

#include <algorithm>
#include <filesystem>
#include <set>

#include "sim/core/data_path.hpp"
#include "sim/plan/plan.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/step/simulation.hpp"

namespace commsim::validate {
std::vector<std::string> Suite::set_arguments(const SuiteEntry& e, int steps) {
  std::vector<std::string> out;
  for (const auto& [key, value] : e.set.items()) out.push_back(key + "=" + value.dump());
  if (steps > 0) out.push_back("steps=" + std::to_string(steps));
  return out;
}

Json Suite::document(const SuiteEntry& e) const {
  return apply_overrides(read_json_file(e.scenario), set_arguments(e, steps), e.scenario);
}

namespace {

// "16M", or {"default": "16M", "<topology name>": "4M", ...}
void read_bench_max_bytes(JsonFields& top, Suite& suite) {
  const Json* m = top.raw_optional("bench_max_bytes");
  if (!m) return;
  if (m->is_string()) {
    suite.bench_max_bytes = m->get<std::string>();
  } else if (m->is_object()) {
    for (const auto& [key, value] : m->items()) {
      if (!value.is_string()) top.fail("bench_max_bytes." + key, "must be a size such as \"16M\"");
      if (key == "default")
        suite.bench_max_bytes = value.get<std::string>();
      else
        suite.bench_max_bytes_by_topology[key] = value.get<std::string>();
    }
  } else {
    top.fail("bench_max_bytes", "must be a size (\"16M\") or an object of sizes by topology name");
  }
}

SuiteEntry read_entry(const Json& entry, const std::string& path, const std::string& at, std::set<std::string>& names) {
  JsonFields f(entry, path, at);
  SuiteEntry e;
  e.name = f.string("name");
  if (e.name.empty()) f.fail("name", "must not be empty");
  if (!names.insert(e.name).second) f.fail("name", "duplicate scenario name \"" + e.name + "\"");
  e.scenario = resolve_beside(path, f.string("scenario"));
  if (const Json* set = f.raw_optional("set")) {
    if (!set->is_object()) f.fail("set", "must be an object {\"dotted.key\": value}");
    for (const auto& [key, value] : set->items())
      if (key.empty() || key.front() == '.' || key.back() == '.') f.fail("set." + key, "not a dotted key");
    e.set = *set;
  }
  e.note = f.string_or("note", "");
  f.reject_unknown();
  return e;
}

Comparison read_comparison(const Json& comparison, const std::string& path, const std::string& at,
                           const std::set<std::string>& names) {
  JsonFields f(comparison, path, at);
  Comparison c;
  c.technique = f.string("technique");
  if (std::find(kTechniques.begin(), kTechniques.end(), c.technique) == kTechniques.end()) {
    std::string known;
    for (const auto& t : kTechniques) known += (known.empty() ? "" : ", ") + t;
    f.fail("technique", "unknown technique \"" + c.technique + "\" (" + known + ")");
  }
  c.variant = f.string("variant");
  c.baseline = f.string("baseline");
  for (const auto& [key, name] : {std::pair{"variant", &c.variant}, std::pair{"baseline", &c.baseline}})
    if (!names.count(*name)) f.fail(key, "no scenario named \"" + *name + "\" in the suite");
  if (c.variant == c.baseline) f.fail("baseline", "a scenario cannot be its own baseline");
  c.note = f.string_or("note", "");
  f.reject_unknown();
  return c;
}

// Every scenario must load as the backend and the simulator will load it; its topology's name and ranks are kept.
void load_entries(const std::string& path, Suite& suite) {
  for (std::size_t i = 0; i < suite.entries.size(); ++i) {
    SuiteEntry& e = suite.entries[i];
    const std::string at = "scenarios[" + std::to_string(i) + "]";
    try {
      const Json doc = suite.document(e);
      const Scenario sc = parse_scenario(doc, e.scenario);
      const std::unique_ptr<Topology> topo = load_scenario_topology(sc);
      build_plan(sc, *topo, load_model(sc.model_path));
      e.topology_path = sc.topology_path;
      e.topology_name = topo->name();
      e.ranks = topo->ranks();
    } catch (const InputError& error) {
      throw InputError(path, at + " (" + e.name + ")", error.what());
    }
  }
}

}  // namespace

Suite load_suite(const std::string& path) {
  const Json root = read_json_file(path);
  JsonFields top(root, path, "");
  Suite suite;
  suite.file = path;
  suite.name = top.string("name");
  suite.description = top.string_or("description", "");
  suite.needs_cluster = top.boolean_or("needs_cluster", false);
  suite.steps = static_cast<int>(top.integer_or("steps", 0, 1, 10000));
  suite.warmup = static_cast<int>(top.integer_or("warmup", 2, 0, 1000));
  suite.runs = static_cast<int>(top.integer_or("runs", 1, 1, 20));
  suite.timeout_s = top.number_or("timeout_s", 300);
  if (!(suite.timeout_s > 0)) top.fail("timeout_s", "must be > 0");
  read_bench_max_bytes(top, suite);
  suite.bench_repeats = static_cast<int>(top.integer_or("bench_repeats", 3, 1, 20));
  const Json& entries = top.array("scenarios");
  if (entries.empty()) top.fail("scenarios", "needs at least one scenario");
  std::set<std::string> names;
  for (std::size_t i = 0; i < entries.size(); ++i)
    suite.entries.push_back(read_entry(entries[i], path, "scenarios[" + std::to_string(i) + "]", names));
  if (const Json* comparisons = top.raw_optional("comparisons")) {
    if (!comparisons->is_array()) top.fail("comparisons", "must be an array");
    for (std::size_t i = 0; i < comparisons->size(); ++i)
      suite.comparisons.push_back(
          read_comparison((*comparisons)[i], path, "comparisons[" + std::to_string(i) + "]", names));
  }
  top.reject_unknown();
  load_entries(path, suite);
  return suite;
}

}  // namespace commsim::validate
