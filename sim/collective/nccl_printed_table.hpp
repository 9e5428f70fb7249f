// NCCL's tuning table as NCCL printed it at init (NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING), and the choice it printed
// for each operation, read back from a log and compared with commsim's (nccl::tuning_table, nccl::predict), so a user
// can see where commsim sees their machine as NCCL does and where not.
#pragma once

#include <istream>
#include <string>
#include <vector>

#include "sim/collective/nccl_model.hpp"

namespace commsim::nccl {

// NCCL_VERSION_CODE as "major.minor.patch": major x 10000 + minor x 100 + patch from 2.9 on, major x 1000 + minor x
// 100 + patch before (NVIDIA/nccl src/nccl.h.in:26, NCCL_VERSION); empty when `code` is no version.
std::string version_of_code(long long code);

// The NCCL release one line of a log states: "# nccl-tests version 2.17.6 nccl-headers=22704 nccl-library=22603"
// (nccl-tests src/util.cu writeDeviceReport; the library is what ran) or NCCL's own "NCCL version 2.26.2+cuda12.8"
// (NCCL_DEBUG=VERSION or INFO). Empty when the line states none.
std::string release_stated_in(const std::string& line);
std::string release_stated_in(const std::vector<std::string>& words);  // the line's words

// The first table of the log: its "Algorithm |" blocks (three algorithms each), one "Collective | lat/bw | ..." row
// per collective, up to the first line that is not part of the table (a second communicator's table is not read).
// NCCL's line prefix ("host:pid:tid [rank] NCCL INFO") may be there or not; "Protocol" and "Max NThreads" lines are
// skipped. InputError(file, "line N", ...) for a malformed table line, InputError(file, "", ...) when the log has no
// table. `channels` of the result is 0: the table does not print it.
TuningTable read_printed_tuning_table(std::istream& log, const std::string& file);

struct TuningMismatch {
  std::string collective, algorithm, protocol;  // NCCL's names
  TuningCell nccl, commsim;
  bool in_commsim = true;  // false: commsim's table has no such collective or algorithm (its cells count as 0/0)
};
struct TuningComparison {
  int cells = 0;  // the cells NCCL printed
  std::vector<TuningMismatch> mismatches;
};
// Every cell of `nccl` against the same cell of `commsim`: a cell matches when its latency and its bandwidth each lie
// within half of NCCL's printed 0.1 of the printed value. A collective or algorithm commsim's table lacks counts as
// 0/0, what NCCL prints for a combination it does not model.
TuningComparison compare_tuning_tables(const TuningTable& nccl, const TuningTable& commsim);

// One choice NCCL printed for an operation (NCCL 2.25 and later, src/enqueue.cc: "AllReduce: 4194304 Bytes -> Algo
// TREE proto SIMPLE channel{Lo..Hi}={0..7}"): its collective, NCCL's byte count (for allgather and reduce-scatter one
// rank's part), algorithm and protocol as NCCL names them, and the channels it ran.
struct PrintedChoice {
  std::string collective, algorithm, protocol;
  Bytes bytes = 0;
  int channels = 0;
};
// Every choice line of the log, the first of each collective and size only (rank 0 prints one per launch: each
// iteration again); InputError(file, "line N", ...) for a choice line that is not one (a size above a message's
// limit, sim/core/limits.hpp; channels beyond NCCL's 64; a field missing) or that repeats a collective and size with
// another choice (several communicators or settings in one log).
std::vector<PrintedChoice> read_printed_choices(std::istream& log, const std::string& file);

struct ChoiceMismatch {
  PrintedChoice nccl;
  std::string algorithm, protocol;  // commsim's, in NCCL's spelling
  int channels = 0;
};
struct ChoiceComparison {
  int compared = 0;  // choices of a collective commsim models
  std::vector<ChoiceMismatch> mismatches;
};
// Each printed choice against commsim's for the same collective and size on `topology` (the topology's ranks, NCCL's
// own model: `choose`, and the channels `predict` launches), with the NCCL_ALGO / NCCL_PROTO lists (empty: none) and
// the channel count (0: the library's) the run was given.
ChoiceComparison compare_choices(const std::vector<PrintedChoice>& choices, const Topology& topology,
                                 const std::string& algorithms = "", const std::string& protocols = "",
                                 int channels = 0);

}  // namespace commsim::nccl
