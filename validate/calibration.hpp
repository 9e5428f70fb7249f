// Calibration: from the microbenchmark report of `commsim bench` (ping-pong per link class, local reduction rate)
// to a calibrated topology — the input topology with each measured link class's latency and bandwidth replaced by
// fitted values — plus the fit's evidence (residuals, R^2, breakpoints) and provenance (docs/calibration.md).
//
// The calibrated file is a topology the simulator loads as-is: the evidence lives under "sources" (which the
// loader accepts freely) as sources.calibration, a nested object. Field reference: docs/calibration.md.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "validate/fit.hpp"

namespace commsim::validate {

using Json = nlohmann::json;

// When a fit is too poor to use (docs/calibration.md, "Refusal"). A ping-pong fit outside these limits makes
// `commsim calibrate` refuse (exit 1); the collective fit outside its own limits is not used (the calibration falls
// back to the ping-pong values and says so).
struct TrustLimits {
  double min_r2 = 0.9;          // weighted R^2 over all of a class's samples
  double max_rms_rel = 0.25;    // RMS relative residual: one message's time within ~25 % on average
  double max_abs_rel = 1.0;     // no single size off by more than 100 % (a factor of two)
  std::size_t min_samples = 6;  // fewer sizes cannot show a latency and a bandwidth regime
};
// The allreduce sweep is measured as the host is, interference included (that is its purpose), so its latency
// regime is noisier: it is used when it explains at least 75 % of the variation with an RMS residual <= 35 %.
inline constexpr TrustLimits kCollectiveLimits{0.75, 0.35, 1.0, 6};

struct ClassCalibration {
  std::string link_class;
  std::vector<int> ranks;       // the ping-pong pair
  std::vector<Sample> samples;  // one-way times (round trip / 2), size order
  PiecewiseFit fit;             // the data's regimes
  // The single line the topology carries (the simulator has one alpha-beta per class): alpha of the smallest-size
  // segment, beta of the largest-size segment (each parameter from the regime where it dominates the time).
  double alpha_s = 0, beta_Bps = 0;
  double line_r2 = 0, line_rms_rel = 0, line_max_abs_rel = 0;
  std::vector<double> line_rel_residuals;
  // Relative uncertainty of one transfer's time: 2 x the RMS relative residual of the piecewise fit (the collective
  // fit's for the class it calibrates). The error band re-simulates with every link of this class slower and
  // faster by this factor.
  double band_rel = 0;
  bool trusted = false;
  std::string why_not;  // one line: which statistic failed and by how much
};

// The collective fit: the bench's allreduce sweep (the simulator's ring schedule, --impl schedule, every rank of the
// job busy) fitted with the ring's closed form, t(S) = 2(p-1) alpha + 2(p-1)/p S / beta + (p-1)/p S / gamma
// (Patarasuk & Yuan 2009; the simulator's own closed form on an uncontended network). It measures what a collective
// step costs while all ranks share the host's cores: on an oversubscribed host far more than the ping-pong of two
// ranks, whose six others sleep. Piecewise like the ping-pong; alpha from the smallest-size regime, beta from the
// largest.
struct CollectiveFit {
  bool present = false;          // the bench has schedule-ring allreduce samples
  int ranks = 0;                 // p
  std::string bottleneck_class;  // the class whose beta it replaces: the slowest calibrated class
  std::vector<Sample> samples;   // allreduce size (bytes) -> seconds
  PiecewiseFit fit;              // t = A + B S per regime
  double alpha_step_s = 0;       // A / (2(p-1)) of the smallest-size regime: latency of one ring step
  double beta_Bps = 0;           // 2(p-1)/p / (B - (p-1)/(p gamma)) of the largest-size regime
  // The sweep's repeatability: the pooled relative standard deviation of each size's time across the bench runs
  // merged (0 with one run). Two calibrations of one quiet host can fit at 2.5 % and 6.9 % RMS: the band counts both.
  double run_spread_rel = 0;
  double band_rel = 0;  // 2 x sqrt(RMS relative residual of the fit^2 + run_spread_rel^2)
  bool trusted = false;
  std::string why_not;
};

// The bench's sweep of allreduces on two streams at once (`allreduce_concurrent`, hw/mpi/bench.cpp) fitted with the
// simulator's price of collectives that run beside each other: every transfer of each carries, beside its bytes,
// what its path moves in a step delay d (CommLibrary::concurrent_step_delay_s: time the shared network loses per
// transfer). In the flow fidelity, k rings of S bytes on p ranks started together step in lockstep and share every
// hop, so together they take
//   t_k(S) = 2(p-1)(alpha + k d) + k 2(p-1)/p S / beta + (p-1)/p S / gamma
// (alpha, beta, gamma: the collective fit's step latency and bandwidth, and the reduction rate; each rank reduces
// its streams' pieces at once, as the simulator does). d = the median over the fitted sizes (every other one, from
// the smallest) of (measured - t_k(S) at d = 0) / (2k(p-1)), at least 0; the other sizes are predictions. The fit is
// used when their median |relative error| is within the collective fit's band.
struct ConcurrentPoint {
  double bytes = 0, measured_s = 0, model_s = 0;  // model: t_k(S) with the fitted d
  bool fitted = false;                            // a fitted size (else a prediction)
};

struct ConcurrentFit {
  bool present = false;  // the bench has the sweep and the collective fit is used
  int streams = 0;       // k
  double step_delay_s = 0;
  std::vector<ConcurrentPoint> points;  // size order
  double predicted_median_abs_rel = 0;
  bool trusted = false;
  std::string why_not;
};

struct Provenance {
  std::string host, date, commsim_version, backend, network, bench_file, topology_file, topology_name;
  bool cluster = false;  // the bench ran in an emulated cluster (not loopback)
};

// Which measurement sets the calibrated topology's link parameters.
enum class CalibrationModel : std::uint8_t {
  Links,       // ping-pong alone: each class's alpha and beta as two ranks see the link
  Collective,  // ping-pong, then every class's latency raised to the collective step latency and the bottleneck
               // class's beta replaced by the collective fit (when that fit can be trusted; else as Links)
};

struct Calibration {
  CalibrationModel model = CalibrationModel::Collective;
  bool collective_used = false;  // Collective asked for and the fit trusted
  CollectiveFit collective;
  ConcurrentFit concurrent;  // in the calibrated topology's library when trusted and the collective fit is used
  std::vector<ClassCalibration> classes;
  double reduce_Bps = 0;  // gamma: local float reduction a[i] += b[i], bytes of vector per second (0 = not measured)
  double dgc_Bps = 0;     // a rank's DGC work, bytes of fp32 gradient per second (0 = not measured)
  Provenance provenance;
  bool trusted() const;
  Json calibrated_topology;  // the topology document to write
};

// Fits every ping-pong class of `bench` and builds the calibrated topology from `topology` (the document as read
// from `topology_file`). Bad structure in either document is an InputError naming the file and the field; a poor
// fit is not an error here (ClassCalibration::trusted says it; the CLI refuses with exit 1).
Calibration calibrate(const Json& topology, const std::string& topology_file, const Json& bench,
                      const std::string& bench_file, CalibrationModel model = CalibrationModel::Collective,
                      const TrustLimits& limits = {}, const PiecewiseOptions& options = {});

// Fits d to the bench's `allreduce_concurrent` (bad structure: InputError naming `bench_file` and the field).
ConcurrentFit fit_concurrent(const Json& bench, const std::string& bench_file, const CollectiveFit& collective,
                             bool collective_used, double reduce_Bps);

// sources.calibration.concurrent of the calibrated topology.
Json concurrent_evidence(const ConcurrentFit& fit);

// Several bench reports of the same topology merged into one. Ping-pong: per class and size the FASTEST run — the
// link's capability, free of interference from whatever else runs on the host (best-of-N, as latency benchmarks
// report). Allreduce: per size the MEDIAN run — what a collective step costs on this host as it is, interference
// included (the collective model uses it for exactly that). Reduction rate: the median. A single disturbed sample
// no longer decides a size. Throws InputError (naming `files[i]`) when the runs do not match.
Json merge_bench_runs(const std::vector<Json>& runs, const std::vector<std::string>& files);

// What validation uses of a calibrated topology: the document itself (simulated from memory) and its
// sources.calibration.
struct CalibrationSummary {
  std::string file;           // where it came from or was written (names it in errors and reports)
  Json topology;              // the calibrated topology document
  std::string topology_name;  // the name of the topology that was calibrated (scenarios are matched on it)
  bool cluster = false;
  double reduce_Bps = 0;
  double dgc_Bps = 0;                                    // 0: not measured (calibrations before it was)
  std::vector<std::pair<std::string, double>> band_rel;  // per link class
  std::string date, host, model;
  struct ClassLine {
    std::string link_class;
    double latency_s = 0, effective_Bps = 0;  // as the calibrated topology holds them
    double pingpong_r2 = 0;
    std::vector<double> breakpoints_bytes;
  };
  std::vector<ClassLine> lines;
  bool collective_used = false;
  double collective_step_latency_s = 0, collective_beta_Bps = 0, collective_r2 = 0;
  bool concurrent_used = false;  // the two-stream fit's step delay is in the topology's library
  double concurrent_step_delay_s = 0, concurrent_predicted_error = 0;
};
// The summary of a calibrated topology document (`file` names it). Throws InputError when it is not one.
CalibrationSummary summarise_calibration(const Json& document, const std::string& file);
// The same, read from `file`.
CalibrationSummary read_calibration(const std::string& file);

// A copy of a topology document with every calibrated link class's time scaled by `factor` (> 0): latency x factor,
// bandwidth / factor, so that a transfer of any size takes `factor` times as long under the topology line.
// The factor of class c is 1 + sign * band_rel(c).
Json scale_link_classes(const Json& topology, const CalibrationSummary& calibration, double sign);

}  // namespace commsim::validate
