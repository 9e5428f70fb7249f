// `commsim regress`: the CI performance gate. Re-evaluates the scenarios of a baseline, compares their step times
// with the stored ones, prints a table, writes JUnit XML; exit 1 on a regression beyond the tolerance.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <map>

#include "cli/commands.hpp"
#include "explore/baseline.hpp"
#include "explore/grid.hpp"
#include "reports/format.hpp"
#include "reports/junit.hpp"
#include "sim/core/json_fields.hpp"
#include "validate/hardware_run.hpp"
#include "validate/process.hpp"

namespace commsim::cli {
namespace {

namespace fs = std::filesystem;

struct RegressOptions {
  std::string baseline, junit, backend;
  std::vector<std::string> measured;
  double tolerance = 1, timeout_s = 0;
  bool tolerance_given = false, update = false, cluster = false;
  int jobs = 0;
};

// Runs every entry of the baseline whose backend is `o.backend` on the hardware now, one hardware run at a time
// (hardware runs must not share the machine), and adds its result to `measured`. Returns 0, or the exit code to end
// with when a run failed (its last line is printed). The temporary files are removed.
int measure_on_hardware(const explore::Baseline& b, const RegressOptions& o, std::map<std::string, Result>& measured) {
  const fs::path dir = fs::temp_directory_path() / ("commsim-regress-" + std::to_string(getpid()));
  reports::create_directories(dir.string(), "TMPDIR");
  struct RemoveOnExit {
    fs::path path;
    ~RemoveOnExit() {
      std::error_code ignored;
      fs::remove_all(path, ignored);
    }
  } remove_on_exit{dir};
  for (const explore::BaselineEntry& e : b.entries) {
    if (e.backend != o.backend || measured.count(e.name)) continue;
    hw::HardwareRunRequest request;
    request.job = hw::HardwareJob::Run;
    request.backend = o.backend;
    request.scenario = e.scenario_path;
    request.sets = e.sets;
    request.cluster = o.cluster;
    request.timeout_s = o.timeout_s;
    request.result_file = (dir / "result.json").string();
    std::printf("%s: running on %s ...\n", e.name.c_str(), o.backend.c_str());
    std::fflush(stdout);
    const validate::HardwareRun run = validate::run_on_hardware(
        validate::self_executable(), request, (dir / "run").string(), o.timeout_s > 0 ? o.timeout_s + 60 : 0);
    if (!run.ok()) {
      std::fprintf(stderr, "commsim regress: %s: %s\n", e.name.c_str(), run.error.c_str());
      return run.exit_code == 2 ? 2 : 3;
    }
    measured[e.name] = *run.result;
  }
  return 0;
}

// A measurement stands for an entry only if it ran the entry's scenario with the entry's settings (nodes, batch,
// strategy; not the step count, which only makes a measurement longer): a result of another scenario would pass or
// fail the gate on a time that says nothing about this one. A result without settings (an older file) is checked by
// its scenario's name alone.
void check_same_scenario(const explore::BaselineEntry& entry, const Result& result, const std::string& file) {
  const Json document = explore::load_base(entry.scenario_path, entry.sets, 0);
  const std::string name = document.value("name", std::string());
  if (result.scenario != name)
    throw InputError(file, "scenario",
                     "is \"" + result.scenario + "\", the entry " + entry.name + " runs \"" + name + "\"");
  std::map<std::string, std::string> expected = scenario_settings(document), given = result.settings;
  if (given.empty()) return;
  expected.erase("steps");
  given.erase("steps");
  for (const auto& [key, value] : expected)
    if (given.count(key) == 0 || given.at(key) != value)
      throw InputError(file, "settings." + key,
                       "is " + (given.count(key) ? given.at(key) : std::string("not set")) + ", the entry " +
                           entry.name + " runs " + value);
  for (const auto& [key, value] : given)
    if (expected.count(key) == 0)
      throw InputError(file, "settings." + key, "is " + value + ", which the entry " + entry.name + " does not set");
}

// --measured NAME=RESULT.json: hardware results measured earlier, each for a hardware entry of the baseline.
std::map<std::string, Result> given_measurements(const explore::Baseline& b, const RegressOptions& o) {
  std::map<std::string, Result> measured;
  for (const std::string& m : o.measured) {
    const auto eq = m.find('=');
    if (eq == std::string::npos || eq == 0) throw InputError("--measured", "", "\"" + m + "\" is not NAME=RESULT.json");
    const std::string name = m.substr(0, eq), file = m.substr(eq + 1);
    const auto entry = std::find_if(b.entries.begin(), b.entries.end(), [&](const explore::BaselineEntry& e) {
      return e.name == name && e.backend != "sim";
    });
    if (entry == b.entries.end())
      throw InputError("--measured", name, "no hardware entry of that name in " + o.baseline);
    Result result = Result::from_json(read_json_file(file), file);
    check_same_scenario(*entry, result, file);
    measured[name] = std::move(result);
  }
  return measured;
}

// The table, the lines of every check that did not pass, the counts; the JUnit XML. Returns the verdict counts.
std::array<std::size_t, 4> print_checks(const explore::Baseline& b, const std::vector<explore::Check>& checks,
                                        const std::vector<double>& seconds, double tolerance, const RegressOptions& o) {
  using namespace reports;
  using explore::Verdict;
  TextTable table({"scenario", "evaluated by", "stored ms", "now ms", "change", "verdict"});
  std::vector<JUnitCase> cases;
  std::array<std::size_t, 4> count{};
  for (std::size_t i = 0; i < checks.size(); ++i) {
    const explore::BaselineEntry& e = b.entries[i];
    const explore::Check& c = checks[i];
    ++count[static_cast<int>(c.verdict)];
    const bool skipped = c.verdict == Verdict::Skipped;
    table.add({e.name, e.backend == "sim" ? e.fidelity : e.backend,
               e.step_time_s > 0 ? fixed(e.step_time_s * 1e3, 3) : "new", skipped ? "-" : fixed(c.now_s * 1e3, 3),
               skipped ? "-" : (c.change >= 0 ? "+" : "") + percent(c.change, 2), std::string(to_string(c.verdict))});
    cases.push_back(
        {e.name, seconds[i], c.verdict == Verdict::Regression ? c.message : "", skipped ? c.message : "", c.message});
  }
  std::fputs(table.str().c_str(), stdout);
  for (std::size_t i = 0; i < checks.size(); ++i)
    if (checks[i].verdict != Verdict::Pass)
      std::printf("%s: %s\n", b.entries[i].name.c_str(), checks[i].message.c_str());
  std::printf("%zu scenarios: %zu pass, %zu faster, %zu regressions, %zu skipped (tolerance %s %%)\n", checks.size(),
              count[0], count[1], count[2], count[3], number(tolerance).c_str());
  if (!o.junit.empty()) write_file(o.junit, junit_xml("commsim.regress", cases), "--junit");
  return count;
}

void update_baseline(explore::Baseline& b, const std::vector<explore::Check>& checks, const RegressOptions& o) {
  for (std::size_t i = 0; i < checks.size(); ++i) {
    if (checks[i].verdict == explore::Verdict::Skipped) continue;
    b.entries[i].step_time_s = checks[i].now_s;
    b.entries[i].step_time_spread_s = checks[i].now_spread_s;
  }
  if (o.tolerance_given) b.tolerance_pct = o.tolerance;  // --tolerance with --update sets the stored one
  rewrite_input_file(o.baseline, baseline_json(b).dump(2) + "\n", "--baseline");
  std::printf("updated %s (commsim %s)\n", o.baseline.c_str(), COMMSIM_VERSION);
}

int run_regress(const RegressOptions& o) {
  using namespace explore;  // baselines
  Baseline b = load_baseline(o.baseline, o.update);
  const double tolerance = o.tolerance_given ? o.tolerance : b.tolerance_pct;
  std::map<std::string, Result> measured = given_measurements(b, o);
  if (!o.backend.empty()) {
    // Nothing of that backend to run: re-simulating the rest instead would pass a check that was never made.
    if (std::none_of(b.entries.begin(), b.entries.end(),
                     [&](const BaselineEntry& e) { return e.backend == o.backend; }))
      throw InputError(o.baseline, "scenarios",
                       "no entry has backend \"" + o.backend +
                           "\": nothing to run on the hardware (an entry with "
                           "\"backend\": \"" +
                           o.backend + "\" stores a measurement to compare with)");
    if (const int failed = measure_on_hardware(b, o, measured)) return failed;
  }
  std::vector<double> seconds;
  const std::vector<Check> checks = check_baseline(b, tolerance, measured, o.jobs, seconds);
  const std::array<std::size_t, 4> count = print_checks(b, checks, seconds, tolerance, o);
  if (o.update) {
    update_baseline(b, checks, o);
    return 0;
  }
  return count[static_cast<int>(Verdict::Regression)] ? 1 : 0;
}

}  // namespace

void register_regress(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<RegressOptions>();
  CLI::App* cmd =
      app.add_subcommand("regress", "Compare step times with a stored baseline (CI gate): exit 1 on a regression");
  cmd->add_option("--baseline", o->baseline, "baseline JSON file (see baselines/ci.json)")->required();
  CLI::Option* tol = cmd->add_option("--tolerance", o->tolerance,
                                     "allowed slowdown in percent (default: the baseline's tolerance_pct)")
                         ->check(number_in(0, explore::kMaxTolerancePct));
  cmd->add_flag("--update", o->update, "store the step times of this commsim in the baseline instead of comparing");
  cmd->add_option("--junit", o->junit, "write JUnit XML for CI systems")->check(writable_file());
  cmd->add_option("--measured", o->measured,
                  "NAME=RESULT.json: a hardware result measured now (commsim run --json) for the baseline entry NAME")
      ->allow_extra_args(false);
  CLI::Option* backend = cmd->add_option("--backend", o->backend,
                                         "run the baseline's entries of this backend on the hardware now (commsim run)")
                             ->check(CLI::IsMember({"mpi", "nccl"}));
  cmd->add_flag("--cluster", o->cluster,
                "with --backend mpi: run inside the emulated cluster of each scenario's topology (root)")
      ->needs(backend);
  cmd->add_option("--timeout-s", o->timeout_s, "with --backend: stop a run after this many seconds")
      ->check(number_in(1e-3))
      ->needs(backend);
  cmd->add_option("--jobs", o->jobs, "parallel simulations (default: all cores)")->check(number_in(1, kMaxJobs));
  cmd->callback([o, tol, &exit_code] {
    o->tolerance_given = tol->count() > 0;
    exit_code = run_regress(*o);
  });
}

}  // namespace commsim::cli
