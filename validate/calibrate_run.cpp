#include "validate/calibrate_run.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "reports/format.hpp"
#include "sim/core/json_fields.hpp"
#include "validate/hardware_run.hpp"
#include "validate/process.hpp"

namespace commsim::validate {
namespace {

namespace fs = std::filesystem;

std::string bytes_text(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (b >= 1024 && u < 3) b /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f %s", b, units[u]);
  return buf;
}

std::string without_extension(const std::string& file) { return fs::path(file).replace_extension("").string(); }

// The microbenchmarks of run `run`: the simulator's ring for the allreduce sweep, all sizes up to max_bytes.
hw::HardwareRunRequest bench_request(const CalibrateOptions& o, const std::string& file) {
  hw::HardwareRunRequest r;
  r.job = hw::HardwareJob::Bench;
  r.backend = "mpi";
  r.topology = fs::absolute(o.topology).string();
  r.impl = "schedule";
  r.max_bytes = o.max_bytes;
  r.cluster = o.cluster;
  r.timeout_s = o.timeout_s;
  r.result_file = fs::absolute(file).string();
  return r;
}

// Runs the microbenchmarks o.repeats times (bench_file minus .json, plus .runK.json each, with its log, request and
// response); returns the files. Bad input of the child is an InputError here, any other failure MeasurementFailed.
std::vector<std::string> measure_benches(const CalibrateOptions& o, const std::string& bench_file) {
  if (o.repeats < 1) throw InputError("--repeats", "", "must be at least 1");
  if (!fs::path(bench_file).parent_path().empty())
    reports::create_directories(fs::path(bench_file).parent_path().string(), "--bench-out");
  std::vector<std::string> files;
  for (int run = 1; run <= o.repeats; ++run) {
    const std::string stem = without_extension(bench_file) + ".run" + std::to_string(run);
    const std::string file = stem + ".json";
    std::fprintf(stderr, "commsim calibrate: microbenchmarks, run %d of %d (%s), log %s.log\n", run, o.repeats,
                 o.cluster ? "emulated cluster" : "loopback", stem.c_str());
    const HardwareRun hw_run = run_on_hardware(o.commsim, bench_request(o, file), stem, o.timeout_s + 60);
    if (hw_run.exit_code == 2) {
      const std::string last = tail_lines(hw_run.log_file, 1);
      throw InputError(last.empty() ? "commsim bench: bad input (log: " + hw_run.log_file + ")"
                                    : last.substr(0, last.size() - 1));
    }
    if (!hw_run.ok()) throw MeasurementFailed(hw_run.error);
    files.push_back(file);
  }
  return files;
}

}  // namespace

Calibration run_calibration(const CalibrateOptions& o) {
  if (o.out.empty()) throw InputError("-o", "", "no output file given");
  const Json topology = read_json_file(o.topology);
  if (!topology.is_object() || !topology.contains("link_classes"))
    throw InputError(o.topology, "link_classes",
                     "missing: calibration needs a node-template topology with link_classes");
  const bool measure = o.bench_in.empty();
  std::string bench_file = o.bench_out.empty() ? without_extension(o.out) + ".bench.json" : o.bench_out;
  if (!measure && o.bench_in.size() == 1) bench_file = o.bench_in[0];
  if (!measure && o.bench_in.size() > 1) bench_file = without_extension(o.out) + ".bench.json";
  const std::vector<std::string> files = measure ? measure_benches(o, bench_file) : o.bench_in;
  std::vector<Json> runs;
  for (const std::string& f : files) runs.push_back(read_json_file(f));
  const Json merged = merge_bench_runs(runs, files);
  if (files.size() > 1 || measure) write_file(bench_file, merged.dump(2) + "\n", "--bench-out");
  Calibration cal = calibrate(topology, o.topology, merged, bench_file, o.model);
  if (cal.trusted()) {
    if (!fs::path(o.out).parent_path().empty())
      reports::create_directories(fs::path(o.out).parent_path().string(), "-o");
    write_file(o.out, cal.calibrated_topology.dump(2) + "\n", "-o");
  }
  return cal;
}

std::string describe(const Calibration& cal) {
  using reports::fixed;
  reports::TextTable t({"class", "sizes", "alpha us", "beta MB/s", "samples", "RMS resid", "max resid"});
  std::string out;
  for (const ClassCalibration& c : cal.classes) {
    for (const LineFit& s : c.fit.segments)
      t.add({c.link_class, bytes_text(s.min_bytes) + " - " + bytes_text(s.max_bytes), fixed(s.alpha_s * 1e6, 2),
             fixed(s.beta_Bps / 1e6, 1), std::to_string(s.samples), fixed(100 * s.rms_rel, 1) + " %",
             fixed(100 * s.max_abs_rel, 1) + " %"});
    t.add({c.link_class, cal.collective_used ? "in topology*" : "in topology", fixed(c.alpha_s * 1e6, 2),
           fixed(c.beta_Bps / 1e6, 1), std::to_string(c.samples.size()), fixed(100 * c.line_rms_rel, 1) + " %",
           fixed(100 * c.line_max_abs_rel, 1) + " %"});
  }
  out +=
      "ping-pong fits (one-way time = alpha + bytes / beta, weighted least squares on relative residuals); \"in "
      "topology\": "
      "alpha of the first regime, beta of the last, residuals against every ping-pong size\n" +
      t.str();
  if (cal.collective_used)
    out +=
        "  * latency raised to the allreduce sweep's step latency, the bottleneck class's beta from the sweep (model "
        "collective): "
        "the residuals against the ping-pong (two ranks awake) show how far a loaded collective is from it\n";
  for (const ClassCalibration& c : cal.classes) {
    std::string bp;
    for (double b : c.fit.breakpoints_bytes) bp += (bp.empty() ? "" : ", ") + bytes_text(b);
    out += "  " + c.link_class + ": R^2 " + fixed(c.fit.r2, 4) + " (piecewise fit), " + fixed(c.line_r2, 4) +
           " (topology values vs ping-pong); " + (bp.empty() ? std::string("one regime") : "regimes break at " + bp) +
           "; band +-" + fixed(100 * c.band_rel, 1) + " %; " + (c.trusted ? "trusted" : "REFUSED: " + c.why_not) + "\n";
  }
  const CollectiveFit& cf = cal.collective;
  if (cf.present) {
    std::string bp;
    for (double b : cf.fit.breakpoints_bytes) bp += (bp.empty() ? "" : ", ") + bytes_text(b);
    out += "  collective (allreduce sweep, ring schedule, " + std::to_string(cf.ranks) + " ranks): R^2 " +
           fixed(cf.fit.r2, 4) + ", RMS resid " + fixed(100 * cf.fit.rms_rel, 1) + " %" +
           (cf.run_spread_rel > 0 ? ", runs spread " + fixed(100 * cf.run_spread_rel, 1) + " %" : "") + ", band +-" +
           fixed(100 * cf.band_rel, 1) + " %" + (bp.empty() ? "" : ", regimes break at " + bp) + "; step latency " +
           fixed(cf.alpha_step_s * 1e6, 1) + " us, " + cf.bottleneck_class + " beta " + fixed(cf.beta_Bps / 1e6, 1) +
           " MB/s; " +
           (cal.collective_used ? "USED for the topology"
            : cf.trusted        ? "not used (--model links)"
                                : "not used: " + cf.why_not) +
           "\n";
  }
  const ConcurrentFit& cc = cal.concurrent;
  if (cc.present) {
    out += "  collectives beside each other (" + std::to_string(cc.streams) + " streams, " +
           std::to_string(cc.points.size()) + " sizes): step delay " + fixed(cc.step_delay_s * 1e6, 1) +
           " us, predicted sizes' median error " + fixed(100 * cc.predicted_median_abs_rel, 1) + " %; " +
           (cc.trusted ? "USED for the topology (library.concurrent_step_delay_us)" : "not used: " + cc.why_not) + "\n";
  }
  out += "  reduction (gamma): " +
         (cal.reduce_Bps > 0 ? fixed(cal.reduce_Bps / 1e9, 2) + " GB/s" : std::string("not measured")) + "\n";
  out += "  DGC local work: " +
         (cal.dgc_Bps > 0 ? fixed(cal.dgc_Bps / 1e9, 2) + " GB/s of fp32 gradient" : std::string("not measured")) +
         "\n";
  out += "  measured on " + cal.provenance.host + ", " + cal.provenance.network + "\n";
  return out;
}

}  // namespace commsim::validate
