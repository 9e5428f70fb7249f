// `commsim sweep`: what-if grids. Every combination of the --vary values is simulated (in parallel on all cores);
// the results go to a table on stdout and to DIR/sweep.csv, DIR/sweep.json and DIR/sweep.html (inline SVG charts).
// `--shard I/N` runs a part of the grid, `--merge DIR...` combines the parts, and under mpirun the ranks share the
// grid (cli/sweep_mpi.cpp); all three write what one process writes, byte for byte.
#include "cli/sweep_cmd.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <numeric>

#include "cli/commands.hpp"
#include "explore/sweep.hpp"
#include "reports/format.hpp"
#include "sim/core/error.hpp"

namespace commsim::cli {

using explore::ShardSpec;
using explore::Sweep;

std::vector<std::size_t> rows_to_run(std::size_t grid_size, const std::optional<ShardSpec>& shard) {
  if (shard) return explore::shard_rows(grid_size, *shard);
  std::vector<std::size_t> rows(grid_size);
  std::iota(rows.begin(), rows.end(), 0);
  return rows;
}

void write_results(const Sweep& sweep, const std::string& sweep_hash, const std::optional<ShardSpec>& shard,
                   const std::string& dir) {
  if (!shard) return explore::write_sweep_outputs(sweep, dir);
  std::fputs(explore::sweep_table(sweep).c_str(), stdout);
  const std::string path = (std::filesystem::path(dir) / explore::shard_file_name(*shard)).string();
  write_file(path, explore::shard_document(sweep, sweep_hash, *shard).dump(1) + "\n", "-o");
  std::printf("shard %zu/%zu: %zu of %zu configurations%s, fidelity %s: wrote %s\n", shard->index, shard->count,
              sweep.rows.size(), sweep.grid_size, sweep.partial() ? " (partial)" : "", sweep.fidelity.c_str(),
              path.c_str());
}

std::optional<ShardSpec> checked_shard(const SweepOptions& o) {
  if (o.request.scenario_file.empty()) throw InputError(std::string("scenario is required (or --merge DIR...)"));
  if (o.request.vary.empty()) throw InputError(std::string("--vary is required (or --merge DIR...)"));
  if (o.shard.empty()) return std::nullopt;
  return explore::parse_shard(o.shard);
}

namespace {

int run_merge(const SweepOptions& o) {
  const Sweep sweep = explore::merge_shards(o.merge);
  explore::create_output_dir(o.out);
  explore::write_sweep_outputs(sweep, o.out);
  return 0;
}

int run_sweep(const SweepOptions& o) {
  if (!o.merge.empty()) return run_merge(o);
  if (std::getenv("OMPI_COMM_WORLD_SIZE")) return run_sweep_on_ranks(o);
  const std::optional<ShardSpec> shard = checked_shard(o);

  const explore::SweepGrid grid = explore::prepare_sweep(o.request);
  explore::InterruptGuard guard;  // before the folder: a bad test hook leaves nothing behind
  explore::create_output_dir(o.out);
  const Sweep sweep =
      explore::evaluate_rows(grid, rows_to_run(grid.variants.size(), shard), o.jobs, guard, "configurations");
  guard.writing();
  write_results(sweep, grid.hash, shard, o.out);
  return explore::sweep_exit_code(sweep);
}

}  // namespace

void register_sweep(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<SweepOptions>();
  CLI::App* cmd = app.add_subcommand("sweep", "Simulate a grid of scenario variants (what-if): table, CSV, JSON, HTML");
  CLI::Option* scenario = cmd->add_option("scenario", o->request.scenario_file, "scenario JSON file");
  CLI::Option* vary =
      cmd->add_option("--vary", o->request.vary,
                      "KEY=V1,V2,...: a dotted scenario field and its values, e.g. nodes=1,2,4,8 or "
                      "strategy.fusion.size_mb=1,25,256 (repeatable: the grid is the cartesian product)")
          ->allow_extra_args(false);
  CLI::Option* sets =
      cmd->add_option("--set", o->request.sets, "fixed override for every variant: dotted.key=value (repeatable)")
          ->allow_extra_args(false);
  CLI::Option* steps = cmd->add_option("--steps", o->request.steps, "number of steps (overrides the scenario)")
                           ->check(number_in(1, kMaxSteps));
  CLI::Option* fidelity = cmd->add_option("--fidelity", o->request.fidelity, "analytical | flow");
  cmd->add_option("-o,--output", o->out, "output directory (default: sweep)")->check(output_folder());
  CLI::Option* jobs = cmd->add_option("--jobs", o->jobs,
                                      "parallel simulations (default: all cores; under mpirun: "
                                      "the cores shared among the ranks of this host)")
                          ->check(number_in(1, kMaxJobs));
  CLI::Option* shard = cmd->add_option("--shard", o->shard,
                                       "I/N: run only part I of N (1-based; grid row r is in part (r mod N) + 1) and "
                                       "write DIR/sweep.shard-I-of-N.json for --merge");
  cmd->add_option("--merge", o->merge,
                  "DIR...: combine the sweep.shard-*-of-*.json files in these folders into the outputs of the whole "
                  "sweep (checks they are one sweep, complete and non-overlapping)")
      ->excludes(scenario)
      ->excludes(vary)
      ->excludes(sets)
      ->excludes(steps)
      ->excludes(fidelity)
      ->excludes(jobs)
      ->excludes(shard);
  cmd->callback([o, &exit_code] { exit_code = run_sweep(*o); });
}

}  // namespace commsim::cli
