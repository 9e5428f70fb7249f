// `commsim calibrate --backend mpi TOPOLOGY [--cluster] [-o CALIBRATED.json] [--bench FILE]`: measures the links
// with `commsim bench` (a child process) or reads an earlier bench JSON, fits alpha/beta per link class (piecewise
// where the data shows regimes) and gamma, and writes the calibrated topology (validate/calibration.hpp,
// docs/calibration.md). Exit 1 when a fit cannot be trusted (one line per refused class), 2 bad input, 3 the
// microbenchmark job failed.
#include <cstdio>
#include <filesystem>

#include "cli/commands.hpp"
#include "sim/core/error.hpp"
#include "validate/calibrate_run.hpp"
#include "validate/process.hpp"

namespace commsim::cli {
namespace {

struct CalibrateCommand {
  std::string backend = "mpi", topology, out, bench_out, max_bytes = "16M", model = "collective";
  std::vector<std::string> bench;
  bool cluster = false;
  int repeats = 3;
  double timeout_s = 900;
};

int calibrate(const CalibrateCommand& c) {
  if (c.backend != "mpi")
    throw InputError("--backend", "", "calibrate fits the MPI backend's microbenchmarks; NCCL calibration is not implemented yet");
  validate::CalibrateOptions o;
  o.commsim = validate::self_executable();
  o.topology = c.topology;
  o.cluster = c.cluster;
  o.bench_in = c.bench;
  o.bench_out = c.bench_out;
  o.max_bytes = c.max_bytes;
  o.repeats = c.repeats;
  o.model = c.model == "links" ? validate::CalibrationModel::Links : validate::CalibrationModel::Collective;
  o.timeout_s = c.timeout_s;
  o.out = c.out.empty() ? std::filesystem::path(c.topology).stem().string() + "-calibrated.json" : c.out;
  validate::Calibration cal;
  try {
    cal = validate::run_calibration(o);
  } catch (const validate::MeasurementFailed& e) {
    std::fprintf(stderr, "commsim: %s\n", e.what());
    return 3;
  }
  std::printf("%s", validate::describe(cal).c_str());
  if (!cal.trusted()) {
    for (const auto& cl : cal.classes)
      if (!cl.trusted) std::fprintf(stderr, "commsim calibrate: refused: %s\n", cl.why_not.c_str());
    std::fprintf(stderr, "commsim calibrate: nothing written; measure again on a quieter machine or fewer ranks per core\n");
    return 1;
  }
  std::printf("wrote %s (calibrated topology; load it with any command that takes a topology)\n", o.out.c_str());
  return 0;
}

}  // namespace

void register_calibrate(CLI::App& app, int& exit_code) {
  auto c = std::make_shared<CalibrateCommand>();
  CLI::App* cmd = app.add_subcommand("calibrate", "Fit link latency/bandwidth (and reduction rate) from microbenchmarks into a calibrated topology");
  cmd->add_option("topology", c->topology, "topology JSON to calibrate (node template with link_classes)")->required();
  cmd->add_option("--backend", c->backend, "mpi (CPU ranks, Open MPI)")->check(CLI::IsMember({"mpi", "nccl"}));
  cmd->add_flag("--cluster", c->cluster, "measure inside an emulated cluster of the topology (needs CAP_NET_ADMIN)");
  cmd->add_option("-o,--output", c->out, "calibrated topology to write (default: TOPOLOGY-STEM-calibrated.json)");
  cmd->add_option("--bench", c->bench, "fit these `commsim bench --json` files (merged: median per size) instead of measuring");
  cmd->add_option("--bench-out", c->bench_out, "where to keep the merged microbenchmark JSON (default: OUTPUT with .bench.json)");
  cmd->add_option("--max-bytes", c->max_bytes, "largest microbenchmark size (default 16M)")->check(byte_size());
  cmd->add_option("--repeats", c->repeats, "microbenchmark runs; the median of each size is fitted (default 3)")->check(number_in(1));
  cmd->add_option("--model", c->model, "collective (default: latency and bottleneck beta as the allreduce sweep sees them, all ranks "
                                       "busy) | links (ping-pong alone)")
      ->check(CLI::IsMember({"collective", "links"}));
  cmd->add_option("--timeout-s", c->timeout_s, "stop the microbenchmarks after this many seconds")->check(number_in(1e-3));
  cmd->callback([c, &exit_code] { exit_code = calibrate(*c); });
}

}  // namespace commsim::cli
