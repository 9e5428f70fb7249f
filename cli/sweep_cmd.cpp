// `commsim sweep`: what-if grids. Every combination of the --vary values is simulated (in parallel on all cores);
// the results go to a table on stdout and to DIR/sweep.csv, DIR/sweep.json and DIR/sweep.html (inline SVG charts).
#include <cstdio>
#include <filesystem>

#include "cli/commands.hpp"
#include "explore/sweep.hpp"
#include "reports/format.hpp"
#include "sim/core/error.hpp"

namespace commsim::cli {
namespace {

struct SweepOptions {
  std::string scenario, fidelity = "analytical", out = "sweep";
  std::vector<std::string> vary, sets;
  int jobs = 0, steps = 0;
};

void run_sweep(const SweepOptions& o) {
  using namespace reports;
  const Fidelity fidelity = fidelity_option(o.fidelity);
  const Json base = load_base(o.scenario, o.sets, o.steps);
  std::vector<Axis> axes;
  for (const std::string& spec : o.vary) axes.push_back(parse_axis(spec, o.scenario));
  const std::vector<std::vector<std::string>> grid = cartesian(axes);
  // Validate before spending the cores: the scenario with --set alone, then the first combination, through the
  // strict loader (unknown fields, wrong types and out-of-range values are errors naming the field).
  parse_scenario(apply_sets(base, {}, o.scenario), o.scenario);
  try {
    parse_scenario(apply_sets(base, grid.front(), o.scenario), o.scenario);
  } catch (const InputError& e) {
    throw InputError("--vary", "", e.what());
  }
  std::error_code ec;
  std::filesystem::create_directories(o.out, ec);
  if (ec) throw InputError("-o", "", "cannot create directory " + o.out + ": " + ec.message());

  Sweep sweep{o.scenario, o.fidelity, axes, evaluate_all(base, o.scenario, grid, fidelity, o.jobs, "configurations")};
  std::fputs(sweep_table(sweep).c_str(), stdout);
  const std::string dir = (std::filesystem::path(o.out) / "").string();
  write_file(dir + "sweep.csv", sweep_csv(sweep), "-o");
  write_file(dir + "sweep.json", sweep_json(sweep).dump(2) + "\n", "-o");
  write_file(dir + "sweep.html", sweep_html(sweep), "-o");
  std::printf("%zu configurations, fidelity %s: wrote %ssweep.csv, %ssweep.json, %ssweep.html\n", grid.size(),
              o.fidelity.c_str(), dir.c_str(), dir.c_str(), dir.c_str());
}

}  // namespace

void register_sweep(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<SweepOptions>();
  CLI::App* cmd = app.add_subcommand("sweep", "Simulate a grid of scenario variants (what-if): table, CSV, JSON, HTML");
  cmd->add_option("scenario", o->scenario, "scenario JSON file")->required();
  cmd->add_option("--vary", o->vary,
                  "KEY=V1,V2,...: a dotted scenario field and its values, e.g. nodes=1,2,4,8 or "
                  "strategy.fusion.size_mb=1,25,256 (repeatable: the grid is the cartesian product)")
      ->required()
      ->allow_extra_args(false);
  cmd->add_option("--set", o->sets, "fixed override for every variant: dotted.key=value (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--steps", o->steps, "number of steps (overrides the scenario)")->check(number_in(1, kMaxSteps));
  cmd->add_option("--fidelity", o->fidelity, "analytical | flow");
  cmd->add_option("-o,--output", o->out, "output directory (default: sweep)");
  cmd->add_option("--jobs", o->jobs, "parallel simulations (default: all cores)")->check(number_in(1, kMaxJobs));
  cmd->callback([o, &exit_code] {
    run_sweep(*o);
    exit_code = 0;
  });
}

}  // namespace commsim::cli
