// GPU kernels of the NCCL backend (see kernels.hpp for the contracts).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <unistd.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "hw/nccl/kernels.hpp"

namespace commsim::nccl::kernels {
namespace {

void check(cudaError_t e, const char* what, int line) {
  if (e == cudaSuccess) return;
  char host[256] = "unknown";
  gethostname(host, sizeof host - 1);
  throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e) + " (" + cudaGetErrorName(e) +
                           ") (hw/nccl/kernels.cu:" + std::to_string(line) + " on " + host + ")");
}
#define COMMSIM_LAUNCHED(name) check(cudaPeekAtLastError(), "launch of " name, __LINE__)

constexpr int kThreads = 256;

// Grid-stride loops: enough blocks to fill a large GPU, never more than the work needs.
unsigned blocks_for(std::uint64_t n) {
  const std::uint64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::max<std::uint64_t>(1, std::min<std::uint64_t>(b, 4096)));
}

__device__ inline std::uint64_t global_index() {
  return static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline std::uint64_t grid_stride() { return static_cast<std::uint64_t>(gridDim.x) * blockDim.x; }

__device__ inline int verifiable(std::uint64_t i, int rank, int modulus) {
  const std::uint64_t m = static_cast<std::uint64_t>(modulus);
  return static_cast<int>(((i % m) * 7 + (static_cast<std::uint64_t>(rank) % m) * 13) % m);
}

template <typename T>
__device__ inline T from_float(float x) {
  return static_cast<T>(x);
}
template <>
__device__ inline __half from_float<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
template <>
__device__ inline __nv_fp8_e4m3 from_float<__nv_fp8_e4m3>(float x) {
  return __nv_fp8_e4m3(x);  // round to nearest, saturate to the finite range
}
template <>
__device__ inline __nv_fp8_e5m2 from_float<__nv_fp8_e5m2>(float x) {
  return __nv_fp8_e5m2(x);
}
template <typename T>
__device__ inline float to_float(T x) {
  return static_cast<float>(x);
}
// The value `v` in type T: integers wrap (as NCCL's integer sums do), floating types round (exact for the small
// integers the checks use).
template <typename T>
__device__ inline T make(long long v) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(v);
  else
    return from_float<T>(static_cast<float>(v));
}
template <>
__device__ inline float to_float<__half>(__half x) {
  return __half2float(x);
}
template <>
__device__ inline float to_float<__nv_bfloat16>(__nv_bfloat16 x) {
  return __bfloat162float(x);
}

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
    if (dense[i] != expected) ++bad;
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

// ---- microbenchmark data ----

template <typename T>
__global__ void bench_fill_kernel(T* dst, std::uint64_t n, std::uint64_t offset, int rank, int modulus) {
  for (std::uint64_t i = global_index(); i < n; i += grid_stride())
    dst[i] = from_float<T>(static_cast<float>(verifiable(offset + i, rank, modulus)));
}

template <typename T>
__global__ void bench_count_kernel(const T* data, std::uint64_t n, int mode, std::uint64_t offset, int ranks, int redop,
                                   int from_rank, std::uint64_t shard, int modulus, unsigned long long* wrong) {
  unsigned long long bad = 0;
  for (std::uint64_t i = global_index(); i < n; i += grid_stride()) {
    long long expected = 0;
    if (mode == 0) {
      expected = verifiable(offset + i, 0, modulus);
      for (int r = 1; r < ranks; ++r) {
        const long long v = verifiable(offset + i, r, modulus);
        switch (redop) {
          case 0:
            expected += v;
            break;
          case 1:
            expected *= v;
            break;
          case 2:
            expected = v > expected ? v : expected;
            break;
          default:
            expected = v < expected ? v : expected;
            break;
        }
      }
    } else if (mode == 1) {
      expected = verifiable(offset + i, from_rank, modulus);
    } else {
      expected = verifiable(i % shard, static_cast<int>(i / shard), modulus);
    }
    if (to_float<T>(data[i]) != to_float<T>(make<T>(expected))) ++bad;
  }
  if (bad) atomicAdd(wrong, bad);
}

template <typename F>
void by_wire(Wire w, F&& f) {
  switch (w) {
    case Wire::F32:
      f(static_cast<float*>(nullptr));
      break;
    case Wire::F16:
      f(static_cast<__half*>(nullptr));
      break;
    case Wire::BF16:
      f(static_cast<__nv_bfloat16*>(nullptr));
      break;
    case Wire::F8E4M3:
      f(static_cast<__nv_fp8_e4m3*>(nullptr));
      break;
  }
}

// ncclDataType_t codes: int8 0, uint8 1, int32 2, uint32 3, int64 4, uint64 5, half 6, float 7, double 8, bfloat16 9,
// f8e4m3 10, f8e5m2 11.
template <typename F>
void by_type(int type, F&& f) {
  switch (type) {
    case 0:
      f(static_cast<signed char*>(nullptr));
      break;
    case 1:
      f(static_cast<unsigned char*>(nullptr));
      break;
    case 2:
      f(static_cast<int*>(nullptr));
      break;
    case 3:
      f(static_cast<unsigned*>(nullptr));
      break;
    case 4:
      f(static_cast<long long*>(nullptr));
      break;
    case 5:
      f(static_cast<unsigned long long*>(nullptr));
      break;
    case 6:
      f(static_cast<__half*>(nullptr));
      break;
    case 7:
      f(static_cast<float*>(nullptr));
      break;
    case 8:
      f(static_cast<double*>(nullptr));
      break;
    case 9:
      f(static_cast<__nv_bfloat16*>(nullptr));
      break;
    case 10:
      f(static_cast<__nv_fp8_e4m3*>(nullptr));
      break;
    case 11:
      f(static_cast<__nv_fp8_e5m2*>(nullptr));
      break;
    default:
      throw std::runtime_error("bench data: unknown NCCL type code " + std::to_string(type));
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
  check(cudaMemsetAsync(dst, 0, n * sizeof(float), stream), "cudaMemsetAsync", __LINE__);
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
  check(cudaMalloc(&s.histogram, 256 * sizeof(unsigned long long)), "cudaMalloc", __LINE__);
  check(cudaMalloc(&s.state, sizeof(TopkState)), "cudaMalloc", __LINE__);
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
  check(cudaMemsetAsync(dense, 0, n * sizeof(float), stream), "cudaMemsetAsync", __LINE__);
  if (k == 0) return;
  const std::uint64_t total = static_cast<std::uint64_t>(ranks) * k;
  by_wire(wire, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    scatter_add_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(static_cast<const unsigned*>(gathered),
                                                                      words_per_rank, ranks, k, dense, n);
  });
  COMMSIM_LAUNCHED("scatter_add_kernel");
}

void bench_fill(void* dst, int type, std::uint64_t n, std::uint64_t offset, int rank, int modulus,
                cudaStream_t stream) {
  if (n == 0) return;
  by_type(type, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    bench_fill_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<T*>(dst), n, offset, rank, modulus);
  });
  COMMSIM_LAUNCHED("bench_fill_kernel");
}

void bench_count_wrong(const void* data, int type, std::uint64_t n, int mode, std::uint64_t offset, int ranks,
                       int redop, int from_rank, std::uint64_t shard, int modulus, unsigned long long* wrong,
                       cudaStream_t stream) {
  if (n == 0) return;
  by_type(type, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    bench_count_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(
        static_cast<const T*>(data), n, mode, offset, ranks, redop, from_rank, shard == 0 ? 1 : shard, modulus, wrong);
  });
  COMMSIM_LAUNCHED("bench_count_kernel");
}

}  // namespace commsim::nccl::kernels
