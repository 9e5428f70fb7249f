// Verifiable inputs, after nccl-tests' verifiable.h: rank r's element i holds a small non-negative integer, so that
// the sum over all ranks -- and every partial sum an algorithm forms on the way, in any order -- is exactly
// representable in the communication dtype. A collective's output is then compared with == and each wrong element
// counted: one misrouted, lost or twice-added block shows up as a non-zero count, never as a rounding difference.
#pragma once

#include <cstdint>

#include "sim/scenario/scenario.hpp"

namespace commsim::hw {

struct Verifiable {
  int ranks = 1;
  CommDtype dtype = CommDtype::Fp32;
  int accumulate = 1;  // how many sums of `ranks` values are added into one result (Local SGD windows, DGC residuals)

  // Every value lies in [0, bound()): the largest integer a dtype holds exactly with all integers below it is 2^24
  // (fp32), 2048 (fp16), 256 (bf16) and 16 (fp8 e4m3); a sum of ranks x accumulate values must stay within it.
  std::uint32_t bound() const;
  // Rank r's element i of the input numbered `salt` (a step or collective counter, so consecutive inputs differ).
  float value(int rank, std::uint64_t index, std::uint64_t salt) const;
  // The exact sum of value(r, index, salt) over all ranks.
  double sum(std::uint64_t index, std::uint64_t salt) const;
};

}  // namespace commsim::hw
