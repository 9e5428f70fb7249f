// The microbenchmark's GPU kernels (nccl-tests' data types): verifiable inputs and the count of wrong outputs.
#include "hw/nccl/kernel_support.cuh"
#include "hw/nccl/kernels.hpp"

namespace commsim::nccl::kernels {
namespace {

using namespace detail;

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
