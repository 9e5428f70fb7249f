// GPU kernels of the NCCL backend, behind host functions that enqueue them on a stream (kernels.cu, compiled by
// nvcc). Element counts are 64-bit; every function only enqueues (no synchronisation) unless it says otherwise.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace commsim::nccl::kernels {

// Element types the kernels convert to and from (the comm dtypes).
enum class Wire : std::uint8_t { F32, F16, BF16, F8E4M3 };
int wire_bytes(Wire w);

// Busy-waits `cycles` SM clock cycles (clock64) in one thread block of one thread: the compute emulation.
void spin(long long cycles, cudaStream_t stream);

// fp32 -> wire dtype (round to nearest; fp8 saturates to the finite range) and back, times `scale`. `src` and `dst`
// may be the same buffer when `wire` is Float32.
void cast_down(const float* src, void* dst, Wire wire, std::uint64_t n, cudaStream_t stream);
void cast_up(const void* src, float* dst, Wire wire, std::uint64_t n, float scale, cudaStream_t stream);

// Deterministic pseudo-random values in [-1, 1) (the gradients of timed steps).
void fill_random(float* dst, std::uint64_t n, std::uint64_t seed, cudaStream_t stream);

// Verifiable data (after nccl-tests' verifiable/): element i of rank r holds v(i, r) = (7 i + 13 r) mod `modulus`, a
// small integer, so that sums over ranks are exact in every dtype when modulus - 1 <= limit / ranks.
void fill_verifiable(float* dst, std::uint64_t n, int rank, int modulus, cudaStream_t stream);
// Counts (atomically adds to *wrong) elements i in [begin, end) of `data` that differ from
// float(sum over r < ranks of v(i, r)) * scale.
void count_wrong_sum(const float* data, std::uint64_t begin, std::uint64_t end, int ranks, int modulus, float scale,
                     unsigned long long* wrong, cudaStream_t stream);
// ... that differ from v(i, i / shard): an all-gather of shards of `shard` elements.
void count_wrong_gathered(const float* data, std::uint64_t n, std::uint64_t shard, int modulus,
                          unsigned long long* wrong, cudaStream_t stream);

// DGC check data: rank r holds `k` non-zero values 1 + (7 j + 13 r) mod 15 (exact in every dtype) at the elements
// (j * stride + r) mod n, stride = n / k, and zeros elsewhere, so its exact top-k is known.
void fill_dgc(float* dst, std::uint64_t n, std::uint64_t k, int rank, cudaStream_t stream);
void count_wrong_dgc(const float* dense, std::uint64_t n, std::uint64_t k, int ranks, unsigned long long* wrong,
                     cudaStream_t stream);

// Scratch of one top-k selection in flight (one per stream).
struct TopkScratch {
  unsigned long long* histogram = nullptr;  // 256 bins
  void* state = nullptr;                    // selection state (prefix, counts)
};
TopkScratch topk_scratch_create();  // allocates on the current device
void topk_scratch_destroy(TopkScratch& s);

// Exact top-k of |g| (k <= n): a 4-pass radix select on the bits of |g| finds the k-th largest key, then one pass
// compacts the k selected elements into `packed`: k int32 indices, then k values in `wire` (order unspecified).
void topk(const float* g, std::uint64_t n, std::uint64_t k, void* packed, Wire wire, const TopkScratch& scratch,
          cudaStream_t stream);
// DGC decompression: zeroes `dense` (n elements), adds the `ranks` gathered blocks of `words_per_rank` words, each
// holding k (index, value) pairs laid out as topk writes them, then divides by the ranks (the average, as the MPI
// backend's decoding does).
void scatter_add(const void* gathered, std::uint64_t words_per_rank, int ranks, std::uint64_t k, Wire wire,
                 float* dense, std::uint64_t n, cudaStream_t stream);

// ---- Microbenchmark data (nccl-tests' types) ----
// Type codes are ncclDataType_t values; redop codes ncclRedOp_t values (sum, prod, max, min).
void bench_fill(void* dst, int type, std::uint64_t n, std::uint64_t offset, int rank, int modulus, cudaStream_t stream);
// mode 0: expected = redop over r < ranks of v(offset + i, r); mode 1: v(offset + i, from_rank);
// mode 2: v(i mod shard, i / shard) (all-gather).
void bench_count_wrong(const void* data, int type, std::uint64_t n, int mode, std::uint64_t offset, int ranks,
                       int redop, int from_rank, std::uint64_t shard, int modulus, unsigned long long* wrong,
                       cudaStream_t stream);

}  // namespace commsim::nccl::kernels
