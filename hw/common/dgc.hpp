// Deep Gradient Compression (Lin et al., ICLR 2018, "Deep Gradient Compression"; Paddle dgc_configs): every rank
// adds its gradient to a local residual, sends only the k entries of largest magnitude as (value, index) pairs,
// and keeps the rest for later steps. The pairs of all ranks are gathered and summed into a dense gradient.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace commsim::hw {

// The k entries of largest |value| (ties go to the lower index), as indices in increasing order: the same on every
// rank that computes it for the same values. A sampled threshold narrows the candidates in one pass (as DGC does);
// the selection among them is exact.
std::vector<std::uint32_t> top_k_indices(const float* values, std::size_t count, std::size_t k);

// Takes the chosen entries out of the residual: their values into `values` (in the order of `chosen`), zeros where
// they were (DGC keeps the rest for later steps).
void take_chosen(float* residual, const std::vector<std::uint32_t>& chosen, float* values);

// Sparse accumulation of one rank's pairs: dense[indices[j]] += values[j].
void accumulate_sparse(float* dense, const float* values, const std::uint32_t* indices, std::size_t pairs);

}  // namespace commsim::hw
