// GPU kernels of the NCCL backend (see kernels.hpp for the contracts); the microbenchmark's are bench_kernels.cu.
#include "hw/nccl/kernel_support.cuh"
#include "hw/nccl/kernels.hpp"

namespace commsim::nccl::kernels {
namespace {

using namespace detail;

__global__ void spin_kernel(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

template <typename T>
__global__ void cast_down_kernel(const float* src, T* dst, std::uint64_t n) {
  for (std::uint64_t i = global_index(); i < n; i += grid_stride()) dst[i] = from_float<T>(src[i]);
}
template <typename T>
__global__ void cast_up_kernel(const T* src, float* dst, std::uint64_t n, float scale) {
  for (std::uint64_t i = global_index(); i < n; i += grid_stride()) dst[i] = to_float<T>(src[i]) * scale;
}

// The average from a sum: divided (not multiplied by 1/ranks), as the MPI backend divides, so that an exact sum of
// ranks x an average gives the average back exactly.
__global__ void divide_kernel(float* data, std::uint64_t n, float divisor) {
  for (std::uint64_t i = global_index(); i < n; i += grid_stride()) data[i] = data[i] / divisor;
}

__global__ void fill_random_kernel(float* dst, std::uint64_t n, std::uint64_t seed) {
  for (std::uint64_t i = global_index(); i < n; i += grid_stride()) {
    std::uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull ^ seed;  // splitmix64
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    x ^= x >> 31;
    dst[i] = static_cast<float>(x >> 40) * (2.0f / 16777216.0f) - 1.0f;
  }
}

__global__ void fill_verifiable_kernel(float* dst, std::uint64_t n, int rank, int modulus) {
  for (std::uint64_t i = global_index(); i < n; i += grid_stride())
    dst[i] = static_cast<float>(verifiable(i, rank, modulus));
}

__global__ void count_sum_kernel(const float* data, std::uint64_t begin, std::uint64_t end, int ranks, int modulus,
                                 float scale, unsigned long long* wrong) {
  unsigned long long bad = 0;
  for (std::uint64_t i = begin + global_index(); i < end; i += grid_stride()) {
    long long sum = 0;
    for (int r = 0; r < ranks; ++r) sum += verifiable(i, r, modulus);
    if (data[i] != static_cast<float>(sum) * scale) ++bad;
  }
  if (bad) atomicAdd(wrong, bad);
}

__global__ void count_gathered_kernel(const float* data, std::uint64_t n, std::uint64_t shard, int modulus,
                                      unsigned long long* wrong) {
  unsigned long long bad = 0;
  for (std::uint64_t i = global_index(); i < n; i += grid_stride())
    if (data[i] != static_cast<float>(verifiable(i, static_cast<int>(i / shard), modulus))) ++bad;
  if (bad) atomicAdd(wrong, bad);
}

__device__ inline float dgc_value(std::uint64_t j, int rank) {
  return 1.0f + static_cast<float>((j % 15 * 7 + static_cast<std::uint64_t>(rank) % 15 * 13) % 15);
}

__global__ void fill_dgc_kernel(float* dst, std::uint64_t n, std::uint64_t k, int rank) {
  const std::uint64_t stride = n / k;
  for (std::uint64_t j = global_index(); j < k; j += grid_stride())
    dst[(j * stride + static_cast<std::uint64_t>(rank)) % n] = dgc_value(j, rank);
}

__global__ void count_dgc_kernel(const float* dense, std::uint64_t n, std::uint64_t k, int ranks,
                                 unsigned long long* wrong) {
  const std::uint64_t stride = n / k;
  unsigned long long bad = 0;
  for (std::uint64_t i = global_index(); i < n; i += grid_stride()) {
    float expected = 0;
    for (int r = 0; r < ranks; ++r) {
      const std::uint64_t d = (i + n - static_cast<std::uint64_t>(r) % n) % n;  // i = (j * stride + r) mod n
      if (d % stride == 0 && d / stride < k) expected += dgc_value(d / stride, r);
    }
    if (dense[i] != expected / static_cast<float>(ranks)) ++bad;  // the average, as scatter_add leaves it
  }
  if (bad) atomicAdd(wrong, bad);
}

// ---- exact top-k: radix select on the 31 magnitude bits of an fp32 (monotonic in |g| for finite values) ----

struct TopkState {
  unsigned prefix, mask;         // bits of the k-th largest key found so far
  unsigned long long remaining;  // of the k, how many are still to be found among keys matching the prefix
  unsigned long long greater;    // keys known to be larger than the k-th largest
  unsigned long long taken_greater, taken_equal;  // compaction counters
};

__device__ inline unsigned key_of(float g) { return __float_as_uint(g) & 0x7fffffffu; }

__global__ void topk_init_kernel(TopkState* s, unsigned long long* histogram, std::uint64_t k) {
  s->prefix = 0;
  s->mask = 0;
  s->remaining = k;
  s->greater = 0;
  s->taken_greater = 0;
  s->taken_equal = 0;
  for (int b = 0; b < 256; ++b) histogram[b] = 0;
}

__global__ void topk_histogram_kernel(const float* g, std::uint64_t n, int shift, const TopkState* s,
                                      unsigned long long* histogram) {
  __shared__ unsigned local[256];
  for (int b = threadIdx.x; b < 256; b += blockDim.x) local[b] = 0;
  __syncthreads();
  const unsigned prefix = s->prefix, mask = s->mask;
  for (std::uint64_t i = global_index(); i < n; i += grid_stride()) {
    const unsigned key = key_of(g[i]);
    if ((key & mask) == prefix) atomicAdd(&local[(key >> shift) & 255u], 1u);
  }
  __syncthreads();
  for (int b = threadIdx.x; b < 256; b += blockDim.x)
    if (local[b]) atomicAdd(&histogram[b], static_cast<unsigned long long>(local[b]));
}

// One thread: the bin holding the remaining-th largest key among those matching the prefix.
__global__ void topk_pick_kernel(TopkState* s, unsigned long long* histogram, int shift) {
  unsigned long long above = 0;
  for (int b = 255; b >= 0; --b) {
    const unsigned long long c = histogram[b];
    if (above + c >= s->remaining) {
      s->prefix |= static_cast<unsigned>(b) << shift;
      s->mask |= 255u << shift;
      s->greater += above;
      s->remaining -= above;
      break;
    }
    above += c;
  }
  for (int b = 0; b < 256; ++b) histogram[b] = 0;
}

template <typename T>
__global__ void topk_compact_kernel(const float* g, std::uint64_t n, std::uint64_t k, TopkState* s, int* indices,
                                    T* values) {
  const unsigned threshold = s->prefix;
  const unsigned long long greater = s->greater, equal_needed = s->remaining;
  for (std::uint64_t i = global_index(); i < n; i += grid_stride()) {
    const unsigned key = key_of(g[i]);
    unsigned long long slot;
    if (key > threshold) {
      slot = atomicAdd(&s->taken_greater, 1ull);
    } else if (key == threshold) {
      const unsigned long long e = atomicAdd(&s->taken_equal, 1ull);
      if (e >= equal_needed) continue;
      slot = greater + e;
    } else {
      continue;
    }
    if (slot < k) {
      indices[slot] = static_cast<int>(i);
      values[slot] = from_float<T>(g[i]);
    }
  }
}

template <typename T>
__global__ void scatter_add_kernel(const unsigned* gathered, std::uint64_t words_per_rank, int ranks, std::uint64_t k,
                                   float* dense, std::uint64_t n) {
  const std::uint64_t total = static_cast<std::uint64_t>(ranks) * k;
  for (std::uint64_t x = global_index(); x < total; x += grid_stride()) {
    const std::uint64_t r = x / k, j = x % k;
    const unsigned* block = gathered + r * words_per_rank;
    const int index = reinterpret_cast<const int*>(block)[j];
    const T value = reinterpret_cast<const T*>(block + k)[j];
    if (index >= 0 && static_cast<std::uint64_t>(index) < n) atomicAdd(&dense[index], to_float<T>(value));
  }
}

}  // namespace

int wire_bytes(Wire w) {
  switch (w) {
    case Wire::F32:
      return 4;
    case Wire::F16:
    case Wire::BF16:
      return 2;
    case Wire::F8E4M3:
      return 1;
  }
  return 4;
}

void spin(long long cycles, cudaStream_t stream) {
  if (cycles <= 0) return;
  spin_kernel<<<1, 1, 0, stream>>>(cycles);
  COMMSIM_LAUNCHED("spin_kernel");
}

void cast_down(const float* src, void* dst, Wire wire, std::uint64_t n, cudaStream_t stream) {
  if (n == 0) return;
  by_wire(wire, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    cast_down_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(src, static_cast<T*>(dst), n);
  });
  COMMSIM_LAUNCHED("cast_down_kernel");
}

void cast_up(const void* src, float* dst, Wire wire, std::uint64_t n, float scale, cudaStream_t stream) {
  if (n == 0) return;
  by_wire(wire, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    cast_up_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const T*>(src), dst, n, scale);
  });
  COMMSIM_LAUNCHED("cast_up_kernel");
}

void fill_random(float* dst, std::uint64_t n, std::uint64_t seed, cudaStream_t stream) {
  if (n == 0) return;
  fill_random_kernel<<<blocks_for(n), kThreads, 0, stream>>>(dst, n, seed);
  COMMSIM_LAUNCHED("fill_random_kernel");
}

void fill_verifiable(float* dst, std::uint64_t n, int rank, int modulus, cudaStream_t stream) {
  if (n == 0) return;
  fill_verifiable_kernel<<<blocks_for(n), kThreads, 0, stream>>>(dst, n, rank, modulus);
  COMMSIM_LAUNCHED("fill_verifiable_kernel");
}

void count_wrong_sum(const float* data, std::uint64_t begin, std::uint64_t end, int ranks, int modulus, float scale,
                     unsigned long long* wrong, cudaStream_t stream) {
  if (end <= begin) return;
  count_sum_kernel<<<blocks_for(end - begin), kThreads, 0, stream>>>(data, begin, end, ranks, modulus, scale, wrong);
  COMMSIM_LAUNCHED("count_sum_kernel");
}

void count_wrong_gathered(const float* data, std::uint64_t n, std::uint64_t shard, int modulus,
                          unsigned long long* wrong, cudaStream_t stream) {
  if (n == 0 || shard == 0) return;
  count_gathered_kernel<<<blocks_for(n), kThreads, 0, stream>>>(data, n, shard, modulus, wrong);
  COMMSIM_LAUNCHED("count_gathered_kernel");
}

void fill_dgc(float* dst, std::uint64_t n, std::uint64_t k, int rank, cudaStream_t stream) {
  if (n == 0 || k == 0) return;
  COMMSIM_KERNEL_CHECK(cudaMemsetAsync(dst, 0, n * sizeof(float), stream), "cudaMemsetAsync");
  fill_dgc_kernel<<<blocks_for(k), kThreads, 0, stream>>>(dst, n, k, rank);
  COMMSIM_LAUNCHED("fill_dgc_kernel");
}

void count_wrong_dgc(const float* dense, std::uint64_t n, std::uint64_t k, int ranks, unsigned long long* wrong,
                     cudaStream_t stream) {
  if (n == 0 || k == 0) return;
  count_dgc_kernel<<<blocks_for(n), kThreads, 0, stream>>>(dense, n, k, ranks, wrong);
  COMMSIM_LAUNCHED("count_dgc_kernel");
}

TopkScratch topk_scratch_create() {
  TopkScratch s;
  COMMSIM_KERNEL_CHECK(cudaMalloc(&s.histogram, 256 * sizeof(unsigned long long)), "cudaMalloc");
  COMMSIM_KERNEL_CHECK(cudaMalloc(&s.state, sizeof(TopkState)), "cudaMalloc");
  return s;
}

void topk_scratch_destroy(TopkScratch& s) {
  if (s.histogram) cudaFree(s.histogram);
  if (s.state) cudaFree(s.state);
  s = {};
}

void topk(const float* g, std::uint64_t n, std::uint64_t k, void* packed, Wire wire, const TopkScratch& scratch,
          cudaStream_t stream) {
  if (n == 0 || k == 0) return;
  k = std::min(k, n);
  auto* state = static_cast<TopkState*>(scratch.state);
  topk_init_kernel<<<1, 1, 0, stream>>>(state, scratch.histogram, k);
  for (int shift = 24; shift >= 0; shift -= 8) {
    topk_histogram_kernel<<<blocks_for(n), kThreads, 0, stream>>>(g, n, shift, state, scratch.histogram);
    topk_pick_kernel<<<1, 1, 0, stream>>>(state, scratch.histogram, shift);
  }
  int* indices = static_cast<int*>(packed);
  by_wire(wire, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    topk_compact_kernel<T>
        <<<blocks_for(n), kThreads, 0, stream>>>(g, n, k, state, indices, reinterpret_cast<T*>(indices + k));
  });
  COMMSIM_LAUNCHED("topk kernels");
}

void scatter_add(const void* gathered, std::uint64_t words_per_rank, int ranks, std::uint64_t k, Wire wire,
                 float* dense, std::uint64_t n, cudaStream_t stream) {
  COMMSIM_KERNEL_CHECK(cudaMemsetAsync(dense, 0, n * sizeof(float), stream), "cudaMemsetAsync");
  if (k == 0) return;
  const std::uint64_t total = static_cast<std::uint64_t>(ranks) * k;
  by_wire(wire, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    scatter_add_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(static_cast<const unsigned*>(gathered),
                                                                      words_per_rank, ranks, k, dense, n);
  });
  COMMSIM_LAUNCHED("scatter_add_kernel");
  divide_kernel<<<blocks_for(n), kThreads, 0, stream>>>(dense, n, static_cast<float>(ranks));
  COMMSIM_LAUNCHED("divide_kernel");
}

}  // namespace commsim::nccl::kernels
