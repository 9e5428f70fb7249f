#include "sim/core/statistics.hpp"

#include <algorithm>
#include <cmath>

namespace commsim {

double quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double position = q * static_cast<double>(values.size() - 1);
  const auto below = static_cast<std::size_t>(std::floor(position));
  const std::size_t above = std::min(below + 1, values.size() - 1);
  return values[below] + (position - static_cast<double>(below)) * (values[above] - values[below]);
}

double median(const std::vector<double>& values) { return quantile(values, 0.5); }

double half_interquartile_range(const std::vector<double>& values) {
  return (quantile(values, 0.75) - quantile(values, 0.25)) / 2;
}

}  // namespace commsim
