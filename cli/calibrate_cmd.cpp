// `commsim calibrate --backend mpi TOPOLOGY [--cluster] [-o CALIBRATED.json] [--bench FILE]`: measures the links
// with `commsim bench` (a child process) or reads an earlier bench JSON, fits alpha/beta per link class (piecewise
// where the data shows regimes) and gamma, and writes the calibrated topology (validate/calibration.hpp,
// docs/calibration.md). Exit 1 when a fit cannot be trusted (one line per refused class), 2 bad input, 3 the
// microbenchmark job failed.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "cli/commands.hpp"
#include "sim/core/error.hpp"
#include "sim/core/json_fields.hpp"
#include "sim/core/output_file.hpp"
#include "validate/calibrate_run.hpp"
#include "validate/interference_fit.hpp"
#include "validate/nccl_tests_log.hpp"
#include "validate/process.hpp"

namespace commsim::cli {
namespace {

struct CalibrateCommand {
  std::string backend = "mpi", topology, out, bench_out, max_bytes = "16M", model = "collective";
  std::vector<std::string> bench, nccl_tests;
  std::string op = "allreduce";
  std::string interference, workload = "resnet50_bf16_b256_step";
  int nodes = 0;
  bool cluster = false;
  int repeats = 3;
  double timeout_s = 900;
};

// The calibrated topology, to -o or TOPOLOGY-STEM-calibrated.json.
void write_calibrated(const CalibrateCommand& c, const Json& doc, const char* what) {
  const std::string out =
      c.out.empty() ? std::filesystem::path(c.topology).stem().string() + "-calibrated.json" : c.out;
  write_file(out, doc.dump(2) + "\n", "-o");
  std::printf("wrote %s (%s)\n", out.c_str(), what);
}

// --interference: fits the library's concurrent_slowdown to a GPU's interference measurement
// (scripts/gpu_interference.py) and writes the topology with it.
int calibrate_interference(const CalibrateCommand& c) {
  auto topology = load_topology(c.topology);
  const validate::InterferenceFit fit =
      validate::fit_interference(read_json_file(c.interference), c.interference, c.workload);
  if (topology->library().sms != fit.sms)
    throw InputError(c.topology, "library.sms",
                     (topology->library().sms ? "is " + std::to_string(topology->library().sms) : "is not stated") +
                         ", the measured GPU has " + std::to_string(fit.sms) + " SMs");
  std::printf("%s", validate::describe(fit).c_str());
  if (!fit.trusted) {
    std::fprintf(stderr, "commsim calibrate: refused: %s; nothing written\n", fit.why_not.c_str());
    return 1;
  }
  Json doc = read_json_file(c.topology);
  Json& library = doc["library"];
  library["concurrent_slowdown"] = fit.concurrent_slowdown;
  library["source"] = library.value("source", std::string()) + "; concurrent_slowdown: commsim calibrate " +
                      "--interference " + c.interference + " (" + fit.workload + " on " + fit.gpu +
                      ", fitted on 1, 4, 16 SM-holding blocks, 2, 8, 32 predicted)";
  write_calibrated(c, doc, "the topology with the fitted concurrent_slowdown");
  return 0;
}

// --from-nccl-tests: fits the NCCL model's per-(algorithm, protocol) scales to nccl-tests logs and writes the
// topology with them in its library block.
int calibrate_from_nccl_tests(const CalibrateCommand& c) {
  Collective op;
  if (!parse_collective(c.op, op))
    throw InputError("--op", "", "unknown collective \"" + c.op + "\" (allreduce, reducescatter, allgather)");
  std::vector<std::pair<validate::NcclTestsLog, Collective>> logs;
  for (const std::string& file : c.nccl_tests) {
    validate::NcclTestsLog log = validate::read_nccl_tests_log(file);
    const Collective log_op = log.op_known ? log.op : op;
    validate::check_log_collective(log, log_op);
    logs.emplace_back(std::move(log), log_op);
  }
  validate::check_distinct_logs(logs);
  const validate::NcclTestsLog& first = logs.front().first;
  const int nodes = c.nodes > 0 ? c.nodes : first.hosts;
  auto topology = load_topology(c.topology, nodes);
  if (topology->library().kind != LibraryKind::Nccl)
    throw InputError(c.topology, "library", "calibration from nccl-tests needs a topology whose library is nccl");
  for (const auto& [log, unused] : logs)
    if (log.ranks > 0 && log.ranks != topology->ranks())
      throw InputError(log.file, "",
                       "has " + std::to_string(log.ranks) + " ranks, " + c.topology + " with " +
                           std::to_string(topology->nodes()) + " node(s) has " + std::to_string(topology->ranks()) +
                           " (give --nodes)");
  const validate::NcclCalibration cal = validate::fit_nccl(*topology, logs);
  std::printf("%s", validate::describe(cal).c_str());
  for (const auto& f : cal.fits)
    if (!f.trusted) std::printf("not fitted (keeps the table's scales): %s\n", f.why_not.c_str());
  if (!cal.any_trusted()) {
    std::fprintf(stderr,
                 "commsim calibrate: refused: no (algorithm, protocol) of the logs could be fitted; nothing written\n");
    return 1;
  }
  Json doc = read_json_file(c.topology);
  Json& library = doc["library"];
  library["fitted"] = Json::object();
  for (const auto& f : cal.fits) {
    if (!f.trusted) continue;
    Json& scale = library["fitted"][f.key];
    scale = {{"latency_scale", f.scale.latency_scale}, {"bandwidth_scale", f.scale.bandwidth_scale}};
    if (f.chunk_round_fitted) scale["chunk_round_us"] = f.scale.chunk_round_us;
  }
  std::string logs_list;
  for (std::size_t i = 0; i < c.nccl_tests.size(); ++i)
    logs_list += (i == 0 ? "" : ", ") + c.nccl_tests[i] + " (NCCL " + cal.priced_release[i] + ")";
  library["fitted_source"] =
      "commsim calibrate --from-nccl-tests " + logs_list + " (" + std::to_string(cal.samples) + " sizes)";
  library["fitted_band_rel"] = cal.band_rel;
  if (cal.launch_fitted) library["fitted_launch_us_per_gpu"] = cal.launch_us_per_gpu;
  library.erase("fitted_gpus_per_thread");
  if (cal.gpus_per_thread > 0) library["fitted_gpus_per_thread"] = cal.gpus_per_thread;
  write_calibrated(c, doc, "the topology with the fitted NCCL scales");
  return 0;
}

int calibrate(const CalibrateCommand& c) {
  if (!c.interference.empty() && !c.nccl_tests.empty())
    throw InputError("--interference", "", "one calibration at a time: not with --from-nccl-tests");
  if (!c.interference.empty()) return calibrate_interference(c);
  if (!c.nccl_tests.empty()) return calibrate_from_nccl_tests(c);
  if (c.backend != "mpi")
    throw InputError("--backend", "",
                     "calibrate fits the MPI backend's microbenchmarks; NCCL calibration is not implemented yet");
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
    std::fprintf(stderr,
                 "commsim calibrate: nothing written; measure again on a quieter machine or fewer ranks per core\n");
    return 1;
  }
  std::printf("wrote %s (calibrated topology; load it with any command that takes a topology)\n", o.out.c_str());
  return 0;
}

}  // namespace

void register_calibrate(CLI::App& app, int& exit_code) {
  auto c = std::make_shared<CalibrateCommand>();
  CLI::App* cmd = app.add_subcommand(
      "calibrate", "Fit link latency/bandwidth (and reduction rate) from microbenchmarks into a calibrated topology");
  cmd->add_option("topology", c->topology, "topology JSON to calibrate (node template with link_classes)")->required();
  CLI::Option* backend =
      cmd->add_option("--backend", c->backend, "mpi (CPU ranks, Open MPI)")->check(CLI::IsMember({"mpi", "nccl"}));
  CLI::Option* cluster = cmd->add_flag("--cluster", c->cluster,
                                       "measure inside an emulated cluster of the topology (needs CAP_NET_ADMIN)");
  cmd->add_option("-o,--output", c->out, "calibrated topology to write (default: TOPOLOGY-STEM-calibrated.json)")
      ->check(writable_file());
  CLI::Option* bench = cmd->add_option(
      "--bench", c->bench, "fit these `commsim bench --json` files (merged: median per size) instead of measuring");
  CLI::Option* bench_out =
      cmd->add_option("--bench-out", c->bench_out,
                      "where to keep the merged microbenchmark JSON (default: OUTPUT with .bench.json)")
          ->check(writable_file());
  CLI::Option* max_bytes =
      cmd->add_option("--max-bytes", c->max_bytes, "largest microbenchmark size (default 16M)")->check(byte_size());
  CLI::Option* repeats =
      cmd->add_option("--repeats", c->repeats, "microbenchmark runs; the median of each size is fitted (default 3)")
          ->check(number_in(1));
  CLI::Option* model =
      cmd->add_option("--model", c->model,
                      "collective (default: latency and bottleneck beta as the allreduce sweep sees them, all ranks "
                      "busy) | links (ping-pong alone)")
          ->check(CLI::IsMember({"collective", "links"}));
  CLI::Option* from_nccl_tests =
      cmd->add_option("--from-nccl-tests", c->nccl_tests,
                      "fit the NCCL model to these nccl-tests logs (all_reduce_perf etc. text output)")
          ->check(CLI::ExistingFile);
  CLI::Option* op = cmd->add_option(
      "--op", c->op, "collective of the nccl-tests logs: allreduce (default) | allgather | reducescatter");
  CLI::Option* nodes =
      cmd->add_option("--nodes", c->nodes, "nodes of the logs' runs (default: the distinct hosts the logs list)")
          ->check(number_in(1, kMaxNodes));
  CLI::Option* interference =
      cmd->add_option("--interference", c->interference,
                      "fit the library's concurrent_slowdown to a GPU's interference measurement (the JSON "
                      "scripts/gpu_interference.py writes)")
          ->check(CLI::ExistingFile);
  cmd->add_option("--workload", c->workload,
                  "with --interference: the measured workload to fit (default resnet50_bf16_b256_step)")
      ->needs(interference);
  CLI::Option* timeout =
      cmd->add_option("--timeout-s", c->timeout_s, "stop the microbenchmarks after this many seconds")
          ->check(number_in(1e-3));
  // An interference fit measures nothing and reads no microbenchmark or log: their options would be ignored.
  for (CLI::Option* o : {backend, cluster, bench, bench_out, max_bytes, repeats, model, op, nodes, timeout})
    interference->excludes(o);
  // A fit to nccl-tests logs measures nothing either; --op and --nodes describe the logs and mean nothing without.
  for (CLI::Option* o : {backend, cluster, bench, bench_out, max_bytes, repeats, model, timeout})
    from_nccl_tests->excludes(o);
  op->needs(from_nccl_tests);
  nodes->needs(from_nccl_tests);
  cmd->callback([c, &exit_code] { exit_code = calibrate(*c); });
}

}  // namespace commsim::cli
