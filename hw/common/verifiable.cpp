#include "hw/common/verifiable.hpp"

#include <algorithm>

namespace commsim::hw {

std::uint32_t Verifiable::bound() const {
  std::uint64_t exact_limit = 1u << 24;
  if (dtype == CommDtype::Fp16) exact_limit = 2048;
  if (dtype == CommDtype::Bf16) exact_limit = 256;
  if (dtype == CommDtype::Fp8) exact_limit = 16;
  const std::uint64_t terms =
      static_cast<std::uint64_t>(std::max(1, ranks)) * static_cast<std::uint64_t>(std::max(1, accumulate));
  // Values below `bound` sum to at most terms x (bound - 1) <= exact_limit. At most 1024 distinct values keep the
  // fp32 case as readable as the others.
  return static_cast<std::uint32_t>(std::clamp<std::uint64_t>(exact_limit / terms, 1, 1024));
}

// Multipliers coprime with small bounds, so neighbouring elements, ranks and salts get different values.
float Verifiable::value(int rank, std::uint64_t index, std::uint64_t salt) const {
  return static_cast<float>((index * 7 + static_cast<std::uint64_t>(rank) * 13 + salt * 5) % bound());
}

double Verifiable::sum(std::uint64_t index, std::uint64_t salt) const {
  double total = 0;
  for (int r = 0; r < ranks; ++r) total += value(r, index, salt);
  return total;
}

}  // namespace commsim::hw
