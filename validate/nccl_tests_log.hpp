// Calibration of the NCCL model from nccl-tests output (all_reduce_perf, all_gather_perf, reduce_scatter_perf, and
// `commsim bench --backend nccl`, which prints the same table).
//
// Each measured size is attributed to the (algorithm, protocol) NCCL ran: the one forced by NCCL_ALGO / NCCL_PROTO
// (from the log's "set by environment" lines or the caller), else the one NCCL's own model picks (nccl::choose).
// Per (collective, algorithm, protocol) the model's two terms are scaled to the measurements:
//   t(n) = x * latency(a, p) + y * n / algbw(a, p, channels(n)),  latency_scale = x, bandwidth_scale = 1 / y
// and, for NVLS and NVLS-tree, whose kernels move the buffer in rounds of one chunk per channel and head with a
// synchronisation each (sim/collective/nccl_tuning.cpp, nvls_chunking), + z * rounds(n), chunk_round_us = z,
// by least squares on relative residuals (weights 1 / t^2, as the MPI calibration fits), with the same refusal
// rules (weighted R^2 >= 0.9 where the times span more than 2x and the RMS relative residual exceeds 10 %; RMS
// relative residual <= 25 %; at least 3 sizes)
// and error band (+- 2 x RMS relative residual).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "sim/collective/nccl_model.hpp"
#include "sim/topology/topology.hpp"

namespace commsim::validate {

struct NcclTestsRow {
  Bytes bytes = 0;
  double time_us = 0;  // out-of-place time (the in-place one when out-of-place is absent)
  int line = 0;
};

struct NcclTestsLog {
  std::string file;
  std::vector<NcclTestsRow> rows;  // rows with a non-zero size
  int ranks = 0;                   // "#  Rank N ... device" lines (0 when the log does not list them)
  int hosts = 0;                   // distinct host names of those lines
  // NCCL_ALGO / NCCL_PROTO as the run set them ("set by environment" lines, the -J file's or a curve's env), in
  // NCCL's list syntax (nccl::parse_nccl_list); empty: NCCL's own choice.
  std::string nccl_algo, nccl_proto;
  int gpus_per_thread = 1;  // nccl-tests -g: GPUs whose kernels one thread issues (its header's nGpus)
  bool op_known = false;    // a curve file names its collective; a text log does not (the caller's --op)
  Collective op = Collective::AllReduce;
  // The NCCL release the log states it ran ("2.26.2"; empty: not stated): nccl-tests' "nccl-library=" header, NCCL's
  // own "NCCL version" line, the -J file's "nccl_version", a curve's "nccl_version".
  std::string nccl_version;
  // The result rows as nccl-tests printed them (a text log's or a -J file's; a published curve has none): count,
  // element type and reduction, which tell the collectives apart and must agree with the size
  // (check_log_collective); `at` names the row ("line 12", "results[3]").
  struct PrintedRow {
    Bytes bytes = 0;
    std::uint64_t count = 0;
    std::string type, redop, at;
  };
  std::vector<PrintedRow> printed;
};

// Throws InputError naming the log's line when its first row cannot be `op`'s: nccl-tests prints redop "none" for
// an all-gather and a reduction for an allreduce or a reduce-scatter; its count is elements per buffer for an
// allreduce (size / element bytes) and per rank for an all-gather or a reduce-scatter (size / element bytes / ranks)
// (nccl-tests src/all_reduce.cu, all_gather.cu, reduce_scatter.cu: *GetCollByteCount). Then every row's count must
// be that: a row whose count disagrees with its size was not printed by nccl-tests as it stands.
void check_log_collective(const NcclTestsLog& log, Collective op);

// Throws InputError when two logs are one run: the same file twice (canonical paths; naming --from-nccl-tests), or
// two files whose rows are the same sizes with the same times as nccl-tests prints them (a copy, or a run's text
// log beside its -J file), which would count every row twice.
void check_distinct_logs(const std::vector<std::pair<NcclTestsLog, Collective>>& logs);

// Parses nccl-tests text output, the JSON file nccl-tests writes with -J (a .json file with "results"), or a
// published curve (validate/nccl-tests/published/*.json: its rows, collective, nodes x GPUs and NCCL_ALGO /
// NCCL_PROTO). Throws InputError naming the file (and the line or field) on a log
// without rows or with a malformed row.
NcclTestsLog read_nccl_tests_log(const std::string& path);

struct ScaleFit {
  std::string key;  // "allreduce/ring/ll128"
  ModelScale scale;
  std::size_t samples = 0;
  double r2 = 0, rms_rel = 0, max_abs_rel = 0;
  bool latency_fitted = false, bandwidth_fitted = false;  // a term that explains < 10 % of every sample keeps 1
  // NVLS / NVLS-tree: the time per round of chunks (scale.chunk_round_us) was fitted beside the two scales. It is
  // left at 0 where it would come out negative, or where the sizes run too few rounds to tell it from the others.
  bool chunk_round_fitted = false;
  bool at_link_ceiling = false;  // the best bandwidth scale would lift algbw above what the links carry: held there
  bool trusted = false;
  std::string why_not;
};

struct NcclCalibration {
  std::vector<ScaleFit> fits;
  // Per log, in order: the NCCL release its sizes were priced with (the log's own where it states one that has a
  // constants table, else the topology's).
  std::vector<std::string> priced_release;
  // The host's issue time per GPU (see fit_nccl): fitted from logs with gpus_per_thread > 1, else the topology's.
  double launch_us_per_gpu = 0;
  bool launch_fitted = false;
  // The GPUs per thread every log ran with (nccl-tests -g), 0 when they differ: the latency scales hold for that
  // regime (CommLibrary::fitted_gpus_per_thread).
  int gpus_per_thread = 0;
  std::size_t issue_bound_samples = 0;  // sizes left out of the scale fits as possibly issue-bound
  double band_rel = 0;  // +- relative error band of a prediction: 2 x the RMS relative residual over all samples
  std::size_t samples = 0;
  bool any_trusted() const;
};

// Fits the scales of `topology`'s NCCL model to the logs (each with its collective). The topology must name NCCL
// and have as many ranks as each log (the caller sets --nodes). A group that fails the rules is reported and keeps
// the table's scales. A log that states its NCCL release is priced with that release (the topology's library is
// switched for its sizes and restored after).
NcclCalibration fit_nccl(Topology& topology, const std::vector<std::pair<NcclTestsLog, Collective>>& logs);

// A short table of the fits for the terminal.
std::string describe(const NcclCalibration& calibration);

}  // namespace commsim::validate
