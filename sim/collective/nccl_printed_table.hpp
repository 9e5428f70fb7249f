// NCCL's tuning table as NCCL printed it at init (NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING), read back from a log,
// and compared cell for cell with commsim's (nccl::tuning_table), so a user can see where commsim sees their machine
// as NCCL does and where not.
#pragma once

#include <istream>
#include <string>
#include <vector>

#include "sim/collective/nccl_model.hpp"

namespace commsim::nccl {

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

}  // namespace commsim::nccl
