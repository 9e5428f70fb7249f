#include "hw/common/dgc.hpp"

#include <algorithm>
#include <cmath>

namespace commsim::hw {

namespace {

// The exact selection among `candidates` (indices in increasing order): the k largest magnitudes, ties to the
// lower index. nth_element finds the k-th largest magnitude; one pass collects the entries above and at it.
std::vector<std::uint32_t> select_exact(const float* values, const std::vector<std::uint32_t>& candidates,
                                        std::size_t k) {
  std::vector<float> order(candidates.size());
  for (std::size_t c = 0; c < candidates.size(); ++c) order[c] = std::fabs(values[candidates[c]]);
  std::nth_element(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k - 1), order.end(), std::greater<>());
  const float threshold = order[k - 1];
  std::size_t above = 0;
  for (std::uint32_t i : candidates) above += std::fabs(values[i]) > threshold;
  std::size_t ties_wanted = k - above;  // entries equal to the threshold still to take, lowest index first
  std::vector<std::uint32_t> selected;
  selected.reserve(k);
  for (std::uint32_t i : candidates) {
    const float m = std::fabs(values[i]);
    if (m > threshold) {
      selected.push_back(i);
    } else if (m == threshold && ties_wanted > 0) {
      selected.push_back(i);
      --ties_wanted;
    }
  }
  return selected;
}

}  // namespace

std::vector<std::uint32_t> top_k_indices(const float* values, std::size_t count, std::size_t k) {
  k = std::min(k, count);
  if (k == 0) return {};
  // DGC's selection (Lin et al. 2018, sec. 3): estimate the threshold from a sample, keep the entries at or above
  // it in one pass, then select exactly among those few. The sample's threshold is taken at 1.5x the wanted share
  // plus a margin, so the candidates almost always hold the k largest; when they do not, all entries are the
  // candidates. Either way the result is the exact top-k: only the time differs (one pass instead of nth_element
  // over everything, ~75 ms for 3.3 M floats on the development machine).
  constexpr std::size_t kSampleTarget = 8192;
  const std::size_t stride = std::max<std::size_t>(1, count / kSampleTarget);
  std::vector<float> sample;
  sample.reserve(count / stride + 1);
  for (std::size_t i = 0; i < count; i += stride) sample.push_back(std::fabs(values[i]));
  const double share = static_cast<double>(k) / static_cast<double>(count);
  const double expected = share * static_cast<double>(sample.size());
  const auto rank = static_cast<std::size_t>(1.5 * expected + 4 * std::sqrt(expected) + 8);
  std::vector<std::uint32_t> candidates;
  if (rank < sample.size()) {
    std::nth_element(sample.begin(), sample.begin() + static_cast<std::ptrdiff_t>(rank), sample.end(),
                     std::greater<>());
    const float estimate = sample[rank];
    for (std::size_t i = 0; i < count; ++i)
      if (std::fabs(values[i]) >= estimate) candidates.push_back(static_cast<std::uint32_t>(i));
  }
  if (candidates.size() < k) {  // the estimate was too high (or the sample too small to estimate): take everything
    candidates.resize(count);
    for (std::size_t i = 0; i < count; ++i) candidates[i] = static_cast<std::uint32_t>(i);
  }
  return select_exact(values, candidates, k);
}

void take_chosen(float* residual, const std::vector<std::uint32_t>& chosen, float* values) {
  for (std::size_t c = 0; c < chosen.size(); ++c) {
    values[c] = residual[chosen[c]];
    residual[chosen[c]] = 0;
  }
}

void accumulate_sparse(float* dense, const float* values, const std::uint32_t* indices, std::size_t pairs) {
  for (std::size_t j = 0; j < pairs; ++j) dense[indices[j]] += values[j];
}

}  // namespace commsim::hw
