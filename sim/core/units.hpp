// Simulated time and sizes. Time is an integer count of picoseconds so that runs are exact and deterministic
// (no floating-point drift when events are summed). int64 picoseconds cover 106 days; simulated durations are
// limited to 100 days (kMaxSimulatedSeconds), and every conversion and sum below is checked against that limit, so a
// value that cannot be represented is an error naming it, never a wrapped (negative) time.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

#include "sim/core/error.hpp"

namespace commsim {

using TimePs = std::int64_t;  // simulated time, picoseconds
using Bytes = std::uint64_t;

inline constexpr TimePs kPsPerSecond = 1'000'000'000'000;
// The longest simulated duration, and the latest simulated time: 100 days in seconds and in picoseconds.
inline constexpr double kMaxSimulatedSeconds = 100.0 * 86400.0;
inline constexpr TimePs kMaxTimePs = 100LL * 86400LL * kPsPerSecond;
// A duration that does not fit the simulated time range. It is bad input (some rate or time in the input is out of
// proportion, typically a bandwidth in the wrong unit); the thrower names the quantity, and callers that know the
// file rethrow it as InputError(file, quantity(), detail()).
class TimeRangeError : public InputError {
 public:
  TimeRangeError(const std::string& quantity, const std::string& what)
      : InputError(quantity + ": " + what), what_(what), quantity_(quantity) {}
  const std::string& quantity() const { return quantity_; }
  const std::string& detail() const { return what_; }

 private:
  std::string what_, quantity_;
};

namespace units_detail {
inline std::string number_text(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", x);
  return buf;
}
// static_cast<TimePs>(std::ceil(ps)) for ps in (-1, kMaxTimePs], inline: without SSE4.1 std::ceil is a library call,
// and every transfer takes one. The truncation is exact in that range, and a value above 2^53 is already whole.
inline TimePs ceil_ps(double ps) {
  const auto whole = static_cast<TimePs>(ps);
  return whole + (static_cast<double>(whole) < ps);
}
inline std::string seconds_text(double seconds) { return number_text(seconds) + " s"; }
inline const std::string& range_text() {
  static const std::string text = "outside the simulated time range [0, 100 days] (int64 picoseconds)";
  return text;
}
}  // namespace units_detail

// Seconds to picoseconds, rounded up so that a non-zero duration never becomes zero time. Throws TimeRangeError
// naming `quantity` when `seconds` is negative, not finite or over kMaxSimulatedSeconds.
inline TimePs seconds_to_ps(double seconds, const std::string& quantity = "simulated duration") {
  if (!(seconds >= 0 && seconds <= kMaxSimulatedSeconds))
    throw TimeRangeError(quantity, units_detail::seconds_text(seconds) + " is " + units_detail::range_text());
  return units_detail::ceil_ps(seconds * 1e12 - 1e-6);
}
inline double ps_to_seconds(TimePs t) { return static_cast<double>(t) * 1e-12; }

// Duration of moving `bytes` at `rate_Bps`, in whole picoseconds (the engine's quantum). The closed-form models
// and the engine both use this one function, so that on an uncontended network they agree exactly. The quotient is
// formed in double and checked before conversion, so no rate or size can wrap it.
inline TimePs transfer_ps(double bytes, double rate_Bps) {
  if (bytes <= 0) return 0;
  const double seconds = bytes / rate_Bps;
  if (!(seconds <= kMaxSimulatedSeconds))  // also catches NaN and a rate of 0
    throw TimeRangeError("transfer time", units_detail::number_text(bytes) + " bytes at " +
                                              units_detail::number_text(rate_Bps) + " B/s take " +
                                              units_detail::seconds_text(seconds) + ", " + units_detail::range_text() +
                                              " (is a bandwidth given in bytes per second?)");
  return units_detail::ceil_ps(seconds * 1e12 - 1e-6);
}

// A point in time plus a duration, checked: both must be in [0, kMaxTimePs] and so must their sum (compared as
// kMaxTimePs - at, so the check itself cannot overflow).
inline TimePs add_ps(TimePs at, TimePs duration, const std::string& quantity = "simulated time") {
  if (at < 0 || duration < 0 || at > kMaxTimePs || duration > kMaxTimePs - at)
    throw TimeRangeError(quantity, units_detail::seconds_text(ps_to_seconds(at) + ps_to_seconds(duration)) + " is " +
                                       units_detail::range_text());
  return at + duration;
}

// `count` repetitions of a duration (steps x step time), checked like add_ps: the product must stay in
// [0, kMaxTimePs] (compared as count > kMaxTimePs / duration, so the check itself cannot overflow).
inline TimePs times_ps(std::int64_t count, TimePs duration, const std::string& quantity = "simulated time") {
  if (count < 0 || duration < 0 || duration > kMaxTimePs || (duration > 0 && count > kMaxTimePs / duration))
    throw TimeRangeError(quantity, units_detail::seconds_text(static_cast<double>(count) * ps_to_seconds(duration)) +
                                       " is " + units_detail::range_text());
  return count * duration;
}

}  // namespace commsim
