// bench_nccl: nccl-tests' performance loop (src/common.cu) for one collective over a size sweep. Sizes, counts,
// in-place offsets, timing (host clock over `iters` launches, averaged over processes), algbw and busbw
// (doc/PERFORMANCE.md) follow nccl-tests, so the numbers compare with all_reduce_perf & co. directly.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

#include "hw/nccl/checks.hpp"
#include "hw/nccl/kernels.hpp"
#include "hw/nccl/world.hpp"

namespace commsim::nccl {
namespace {

struct TypeInfo {
  int code;      // ncclDataType_t
  int size;      // bytes
  double limit;  // largest integer the type holds exactly (sums of check data stay below it)
};

TypeInfo type_info(const std::string& name) {
  static const std::map<std::string, TypeInfo> types = {
      {"int8", {0, 1, 127}},     {"uint8", {1, 1, 255}},      {"int32", {2, 4, 2147483647.0}},
      {"half", {6, 2, 2048}},    {"float", {7, 4, 16777216}}, {"double", {8, 8, 9007199254740992.0}},
      {"bfloat16", {9, 2, 256}}, {"f8e4m3", {10, 1, 16}},     {"f8e5m2", {11, 1, 8}},
  };
  return types.at(name);
}

ncclRedOp_t redop_of(const std::string& r) {
  if (r == "prod") return ncclProd;
  if (r == "max") return ncclMax;
  if (r == "min") return ncclMin;
  if (r == "avg") return ncclAvg;
  return ncclSum;
}

struct Device {
  int device = 0, rank = 0;
  cudaStream_t stream = nullptr;
  ncclComm_t comm = nullptr;
  char* send = nullptr;
  char* recv = nullptr;
  unsigned long long* wrong = nullptr;
};

// Element counts of one size, as nccl-tests' getCollByteCount computes them.
struct Counts {
  std::uint64_t send = 0, recv = 0, param = 0, send_inplace_offset = 0, recv_inplace_offset = 0;
};

Counts counts_for(Collective op, std::uint64_t count, std::uint64_t p) {
  switch (op) {
    case Collective::AllGather:
      return {count / p, count / p * p, count / p, count / p, 0};
    case Collective::ReduceScatter:
      return {count / p * p, count / p, count / p, 0, count / p};
    default:
      return {count, count, count, 0, 0};
  }
}

BenchResult run_bench(const BenchOptions& o, const World& world);

}  // namespace

BenchResult bench_nccl(const BenchOptions& o) {
  validate(o);
  std::string why;
  if (!nccl_available(&why)) throw NcclUnavailable(why);
#if NCCL_VERSION_CODE < NCCL_VERSION(2, 24, 0)
  if (type_info(o.dtype).code >= 10) throw NcclUnavailable("nccl backend: fp8 types need NCCL 2.24 or newer");
#endif
  World world(o.launch, o.gpus);
  return world.run_or_abort([&] { return run_bench(o, world); });
}

namespace {

BenchResult run_bench(const BenchOptions& o, const World& world) {
  const TypeInfo type = type_info(o.dtype);
  const int p = world.nranks();
  const bool rooted = o.op == Collective::Broadcast || o.op == Collective::Reduce;
  if (rooted && o.root >= p)
    throw InputError("--root", "",
                     "rank " + std::to_string(o.root) + " does not exist (" + std::to_string(p) + " ranks)");
  const bool reduces = o.op == Collective::AllReduce || o.op == Collective::Reduce || o.op == Collective::ReduceScatter;

  BenchResult result;
  result.op = o.op;
  result.options = o;
  result.ranks = p;
  result.nodes = world.nodes();
  result.root = world.root();
  int version = 0;
  COMMSIM_NCCL(ncclGetVersion(&version));
  result.nccl_version =
      std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." + std::to_string(version % 100);

  std::vector<std::string> lines;
  std::vector<Device> devices(world.devices().size());
  const std::uint64_t max_bytes_buffer =
      o.max_bytes + static_cast<std::uint64_t>(type.size) * static_cast<std::uint64_t>(p);
  for (std::size_t i = 0; i < devices.size(); ++i) {
    Device& d = devices[i];
    d.device = world.devices()[i];
    d.rank = world.ranks()[i];
    cudaDeviceProp prop;
    COMMSIM_CUDA(cudaGetDeviceProperties(&prop, d.device));
    if (type.code >= 10 && reduces && prop.major < 9)
      throw InputError("--dtype", "",
                       "NCCL reduces fp8 only on compute capability 9.0 or newer; GPU " + std::to_string(d.device) +
                           " (" + prop.name + ") is " + std::to_string(prop.major) + "." + std::to_string(prop.minor));
    char line[512];
    std::snprintf(line, sizeof line, "#  Rank %2d Group %2d Pid %6d on %10s device %2d [0x%02x] %s", d.rank, 0,
                  static_cast<int>(getpid()), world.host().c_str(), d.device, prop.pciBusID, prop.name);
    lines.push_back(line);
    COMMSIM_CUDA(cudaSetDevice(d.device));
    COMMSIM_CUDA(cudaStreamCreateWithFlags(&d.stream, cudaStreamNonBlocking));
    COMMSIM_CUDA(cudaMalloc(&d.send, max_bytes_buffer));
    COMMSIM_CUDA(cudaMalloc(&d.recv, max_bytes_buffer));
    COMMSIM_CUDA(cudaMalloc(&d.wrong, sizeof(unsigned long long)));
    COMMSIM_CUDA(cudaMemset(d.send, 0, max_bytes_buffer));
    COMMSIM_CUDA(cudaMemset(d.recv, 0, max_bytes_buffer));
  }
  result.devices = world.gather(lines);
  const std::vector<ncclComm_t> comms = world.init_comms();
  for (std::size_t i = 0; i < devices.size(); ++i) devices[i].comm = comms[i];

  const ncclDataType_t t = static_cast<ncclDataType_t>(type.code);
  const ncclRedOp_t redop = redop_of(o.redop);
  const std::uint64_t ws = static_cast<std::uint64_t>(type.size);

  auto launch = [&](const Counts& c, bool in_place) {
    if (devices.size() > 1) COMMSIM_NCCL(ncclGroupStart());
    for (Device& d : devices) {
      COMMSIM_CUDA(cudaSetDevice(d.device));
      const std::uint64_t r = static_cast<std::uint64_t>(d.rank);
      void* send = in_place ? d.recv + c.send_inplace_offset * ws * r : d.send;
      void* recv = in_place ? d.recv + c.recv_inplace_offset * ws * r : d.recv;
      switch (o.op) {
        case Collective::AllReduce:
          COMMSIM_NCCL(ncclAllReduce(send, recv, c.param, t, redop, d.comm, d.stream));
          break;
        case Collective::AllGather:
          COMMSIM_NCCL(ncclAllGather(send, recv, c.param, t, d.comm, d.stream));
          break;
        case Collective::ReduceScatter:
          COMMSIM_NCCL(ncclReduceScatter(send, recv, c.param, t, redop, d.comm, d.stream));
          break;
        case Collective::Broadcast:
          COMMSIM_NCCL(ncclBroadcast(send, recv, c.param, t, o.root, d.comm, d.stream));
          break;
        case Collective::Reduce:
          COMMSIM_NCCL(ncclReduce(send, recv, c.param, t, redop, o.root, d.comm, d.stream));
          break;
      }
    }
    if (devices.size() > 1) COMMSIM_NCCL(ncclGroupEnd());
  };
  auto wait = [&] {
    for (Device& d : devices) {
      COMMSIM_CUDA(cudaSetDevice(d.device));
      COMMSIM_CUDA(cudaStreamSynchronize(d.stream));
    }
  };
  auto count_of = [&](std::uint64_t bytes) { return counts_for(o.op, bytes / ws, static_cast<std::uint64_t>(p)); };

  // Warm-up at the largest and the smallest size, as nccl-tests does.
  for (std::uint64_t bytes : {o.max_bytes, o.min_bytes}) {
    for (int i = 0; i < o.warmup_iters; ++i) launch(count_of(bytes), false);
    wait();
  }

  // Check data: nccl-tests-style verifiable integers whose reductions are exact in the type.
  const int modulus = static_cast<int>(std::min(64.0, std::floor(type.limit / p) + 1));
  const bool checkable = o.check && modulus >= 2 && (o.redop == "sum" || o.redop == "max" || o.redop == "min");

  for (std::uint64_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= static_cast<std::uint64_t>(o.step_factor)) {
    const Counts c = count_of(bytes);
    BenchRow row;
    row.bytes = std::max(c.send, c.recv) * ws;
    row.count = c.param;
    row.type = o.dtype;
    row.redop = o.redop;
    row.root = rooted ? o.root : -1;
    for (bool in_place : {false, true}) {
      BenchTiming& timing = in_place ? row.in_place : row.out_of_place;
      launch(c, in_place);  // sync run
      wait();
      world.barrier();
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < o.iters; ++i) launch(c, in_place);
      wait();
      std::vector<double> seconds{std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
                                  o.iters};
      world.sum(seconds);
      timing.time_s = seconds[0] / (world.mpi() ? static_cast<double>(p) : 1.0);  // mean over processes
      timing.algbw_Bps = timing.time_s > 0 ? static_cast<double>(row.bytes) / timing.time_s : 0;
      timing.busbw_Bps = timing.algbw_Bps * busbw_factor(o.op, p);
      if (!checkable) continue;
      for (Device& d : devices) {
        COMMSIM_CUDA(cudaSetDevice(d.device));
        char* input = in_place ? d.recv + c.send_inplace_offset * ws * static_cast<std::uint64_t>(d.rank) : d.send;
        kernels::bench_fill(input, type.code, c.send, 0, d.rank, modulus, d.stream);
        COMMSIM_CUDA(cudaMemsetAsync(d.wrong, 0, sizeof(unsigned long long), d.stream));
      }
      launch(c, in_place);
      std::uint64_t wrong = 0;
      for (Device& d : devices) {
        COMMSIM_CUDA(cudaSetDevice(d.device));
        const std::uint64_t r = static_cast<std::uint64_t>(d.rank);
        const char* output = in_place ? d.recv + c.recv_inplace_offset * ws * r : d.recv;
        const int op = static_cast<int>(redop);
        switch (o.op) {
          case Collective::AllReduce:
            kernels::bench_count_wrong(output, type.code, c.recv, 0, 0, p, op, 0, 0, modulus, d.wrong, d.stream);
            break;
          case Collective::Reduce:
            if (d.rank == o.root)
              kernels::bench_count_wrong(output, type.code, c.recv, 0, 0, p, op, 0, 0, modulus, d.wrong, d.stream);
            break;
          case Collective::Broadcast:
            kernels::bench_count_wrong(output, type.code, c.recv, 1, 0, p, op, o.root, 0, modulus, d.wrong, d.stream);
            break;
          case Collective::AllGather:
            kernels::bench_count_wrong(output, type.code, c.recv, 2, 0, p, op, 0, c.param, modulus, d.wrong, d.stream);
            break;
          case Collective::ReduceScatter:
            kernels::bench_count_wrong(output, type.code, c.recv, 0, r * c.recv, p, op, 0, 0, modulus, d.wrong,
                                       d.stream);
            break;
        }
        unsigned long long w = 0;
        COMMSIM_CUDA(cudaMemcpyAsync(&w, d.wrong, sizeof w, cudaMemcpyDeviceToHost, d.stream));
        COMMSIM_CUDA(cudaStreamSynchronize(d.stream));
        wrong += w;
      }
      timing.wrong = static_cast<std::int64_t>(world.sum(wrong));
    }
    result.rows.push_back(row);
    if (o.max_bytes / static_cast<std::uint64_t>(o.step_factor) < bytes)
      break;  // the next size would overflow or pass max
  }

  for (Device& d : devices) {
    cudaSetDevice(d.device);
    ncclCommDestroy(d.comm);
    cudaFree(d.send);
    cudaFree(d.recv);
    cudaFree(d.wrong);
    cudaStreamDestroy(d.stream);
  }
  return result;
}

}  // namespace
}  // namespace commsim::nccl
