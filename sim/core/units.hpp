// Simulated time and sizes. Time is an integer count of picoseconds so that runs are exact and deterministic
// (no floating-point drift when events are summed); int64 picoseconds cover 106 days of simulated time.
#pragma once

#include <cmath>
#include <cstdint>

namespace commsim {

using TimePs = std::int64_t;  // simulated time, picoseconds
using Bytes = std::uint64_t;

inline constexpr TimePs kPsPerSecond = 1'000'000'000'000;

// Rounds up so that a non-zero duration never becomes zero time.
inline TimePs seconds_to_ps(double seconds) { return static_cast<TimePs>(std::ceil(seconds * 1e12 - 1e-6)); }
inline double ps_to_seconds(TimePs t) { return static_cast<double>(t) * 1e-12; }

// Duration of moving `bytes` at `rate_Bps`, in whole picoseconds (the engine's quantum). The closed-form models
// and the engine both use this one function, so that on an uncontended network they agree exactly.
inline TimePs transfer_ps(double bytes, double rate_Bps) {
  return bytes <= 0 ? 0 : static_cast<TimePs>(std::ceil(bytes / rate_Bps * 1e12 - 1e-6));
}

}  // namespace commsim
