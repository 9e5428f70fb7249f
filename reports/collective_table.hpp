// `commsim collective`'s table: one collective predicted over a size sweep, printed in nccl-tests' layout (the
// default, so that scripts that parse all_reduce_perf output parse commsim's unchanged) or in commsim's own wide
// layout (`--format commsim`), and as JSON rows.
//
// nccl-tests' layout (NVIDIA/nccl-tests v2.19.6, src/util.cu writeResultHeader / writeBenchmarkLinePreamble /
// writeBenchmarkLineBody / writeResultFooter): header comment lines, then per size
//   size count type redop root | out-of-place time algbw busbw #wrong | in-place time algbw busbw #wrong
// and the footer "# Out of bounds values : 0 OK", "# Avg bus bandwidth : <mean busbw of every column pair>".
// A prediction has no data to check, so #wrong is "N/A" (what nccl-tests prints with -c 0), and the in-place and
// out-of-place columns are the same prediction. What commsim adds (algorithm, protocol, channels, error band) is in
// '#' lines, which every nccl-tests parser skips.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/collective/collective.hpp"
#include "sim/engine/executor.hpp"
#include "sim/network/symmetry.hpp"
#include "sim/topology/topology.hpp"

namespace commsim::reports {

// The buffer nccl-tests runs for a requested size, with float elements (4 bytes). nccl-tests prints the whole
// vector's size (max of send and receive bytes) and the per-rank parameter count: for allgather and reduce-scatter
// the count each rank contributes, rounded down to 16 bytes (src/all_gather.cu, src/reduce_scatter.cu
// GetCollByteCount: base = (count / nranks) & ~(16 / eltSize - 1), since v2.13.12, commit 29f4114; older
// versions ran count / nranks); for the others the whole vector's count.
struct NcclTestsSizing {
  Bytes bytes = 0;          // what nccl-tests prints in `size` (and what is simulated)
  std::uint64_t count = 0;  // what nccl-tests prints in `count`
};
NcclTestsSizing nccl_tests_sizing(Collective op, Bytes requested_bytes, int ranks);

// nccl-tests' redop and root columns: "sum" / "none" and -1 for unrooted collectives, the root (0 by default, the
// -r option) for broadcast and reduce (src/all_reduce.cu ... RunTest: TimeTest(..., opName, root)).
const char* nccl_tests_redop(Collective op);
int nccl_tests_root(Collective op);

struct CollectiveRow {
  Bytes requested_bytes = 0;
  NcclTestsSizing sizing;
  double seconds = 0;
  double algbw_GBps = 0, busbw_GBps = 0;  // nccl-tests' definitions (doc/PERFORMANCE.md), 1e9 bytes per GB
  std::string algorithm, protocol = "-";
  int channels = 0;
  double band_rel = 0;  // +- relative error band of the prediction (0: none known)
};

// Progress and stopping of a long size sweep (flow fidelity). Each may be empty.
struct CollectiveProgress {
  std::function<bool(Bytes size_bytes)> before_size;  // asked before each size is run; false stops the sweep
  FlowProgress flow;                                  // within each flow run; its keep_going false stops the sweep
  std::function<void(std::size_t rows_done)> size_done;
};

struct CollectivePrediction {
  std::vector<CollectiveRow> rows;  // the sizes done, in order
  std::size_t sizes = 0;            // the sizes asked for, less those that round to 0 bytes
  bool complete() const { return rows.size() == sizes; }
};

// Predicts each size (nccl-tests' sizing; a size that rounds to 0 bytes is left out) at the fidelity asked for.
// `band_rel` is the band a calibrated topology carries (0 if none); an NCCL model's own fitted band wins where it
// has one. A size stopped part-way by `progress` gives no row: the simulated time it reached is only a lower bound.
CollectivePrediction predict_collective(const CollectiveSpec& spec, const Topology& topology, Fidelity fidelity,
                                        const std::vector<Bytes>& sizes, double band_rel,
                                        const CollectiveProgress& progress = {});

struct CollectiveTableHeader {
  std::string op_name;          // "allreduce"
  std::string topology_path;    // as given
  std::string fidelity;         // "analytical" | "flow"
  std::string library;          // "nccl 2.21" or "" when the topology names no NCCL library
  bool doubling_range = false;  // --sizes MIN:MAX (nccl-tests' "step: 2(factor)")
  std::string partial_note;     // "partial: 3 of 10 sizes (stopped by SIGINT)" atop the table; "" when complete
  int gpus_per_thread = 1;      // nccl-tests -g: GPUs one host thread drives (CollectiveSpec::gpus_per_thread)
};

// nccl-tests' layout, with commsim's choices per size in '#' lines after the footer.
void print_nccl_tests_table(std::FILE* out, const CollectiveTableHeader& header, const Topology& topology,
                            const std::vector<CollectiveRow>& rows);
// commsim's one-table layout: size, count, type, algorithm, protocol, channels, time, algbw, busbw, band.
void print_commsim_table(std::FILE* out, const CollectiveTableHeader& header, const Topology& topology,
                         const std::vector<CollectiveRow>& rows);
nlohmann::json collective_rows_json(const std::vector<CollectiveRow>& rows);

// nccl-tests' number cell: width `width`, two decimals, fewer when the value needs the room (src/util.cu
// getFloatStr: %.2f, then %.1f, then %.0f, then exponent).
std::string nccl_tests_number(double value, int width);

}  // namespace commsim::reports
