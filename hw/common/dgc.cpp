#include "hw/common/dgc.hpp"

#include <algorithm>
#include <cmath>

namespace commsim::hw {

std::vector<std::uint32_t> top_k_indices(const float* values, std::size_t count, std::size_t k) {
  std::vector<std::uint32_t> selected;
  k = std::min(k, count);
  if (k == 0) return selected;
  std::vector<float> magnitude(count);
  for (std::size_t i = 0; i < count; ++i) magnitude[i] = std::fabs(values[i]);
  std::vector<float> order = magnitude;
  std::nth_element(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k - 1), order.end(), std::greater<>());
  const float threshold = order[k - 1];  // the k-th largest magnitude
  std::size_t above = 0;
  for (float m : magnitude) above += m > threshold;
  std::size_t ties_wanted = k - above;  // entries equal to the threshold still to take, lowest index first
  selected.reserve(k);
  for (std::size_t i = 0; i < count; ++i) {
    if (magnitude[i] > threshold) {
      selected.push_back(static_cast<std::uint32_t>(i));
    } else if (magnitude[i] == threshold && ties_wanted > 0) {
      selected.push_back(static_cast<std::uint32_t>(i));
      --ties_wanted;
    }
  }
  return selected;
}

void accumulate_sparse(float* dense, const float* values, const std::uint32_t* indices, std::size_t pairs) {
  for (std::size_t j = 0; j < pairs; ++j) dense[indices[j]] += values[j];
}

}  // namespace commsim::hw
