#include "validate/band.hpp"

#include <algorithm>
#include <cmath>

namespace commsim::validate {

double measurement_half_width(double spread_s) { return kBandSigmas * std::max(0.0, spread_s) / kHalfIqrPerSigma; }

Band prediction_band(double predicted_s, double fast_s, double slow_s, double measured_spread_s) {
  const double m = measurement_half_width(measured_spread_s);
  // A re-simulation can land on either side (a slower link may change the schedule's critical path only a little
  // or not at all); take each side's distance from the nominal prediction as its model half-width.
  const double below = std::max({0.0, predicted_s - fast_s, predicted_s - slow_s});
  const double above = std::max({0.0, slow_s - predicted_s, fast_s - predicted_s});
  return {std::max(0.0, predicted_s - std::hypot(below, m)), predicted_s + std::hypot(above, m)};
}

bool distinguishable(double a_s, double a_spread_s, double b_s, double b_spread_s) {
  return std::abs(a_s - b_s) > std::hypot(measurement_half_width(a_spread_s), measurement_half_width(b_spread_s));
}

}  // namespace commsim::validate
