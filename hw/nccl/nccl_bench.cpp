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

// One sweep on the GPUs of this process: the devices opened, every size launched, timed and checked, then closed.
class BenchRunner {
 public:
  BenchRunner(const BenchOptions& o, const World& world)
      : o_(o),
        world_(world),
        type_(type_info(o.dtype)),
        p_(world.nranks()),
        rooted_(o.op == Collective::Broadcast || o.op == Collective::Reduce),
        t_(static_cast<ncclDataType_t>(type_.code)),
        redop_(redop_of(o.redop)),
        ws_(static_cast<std::uint64_t>(type_.size)),
        // Check data: nccl-tests-style verifiable integers whose reductions are exact in the type.
        modulus_(static_cast<int>(std::min(64.0, std::floor(type_.limit / p_) + 1))),
        checkable_(o.check && modulus_ >= 2 && (o.redop == "sum" || o.redop == "max" || o.redop == "min")) {
    if (rooted_ && o.root >= p_)
      throw InputError("--root", "",
                       "rank " + std::to_string(o.root) + " does not exist (" + std::to_string(p_) + " ranks)");
  }

  BenchResult run() {
    BenchResult result;
    result.op = o_.op;
    result.options = o_;
    result.ranks = p_;
    result.nodes = world_.nodes();
    result.gpus_per_process = static_cast<int>(world_.devices().size());
    result.root = world_.root();
    int version = 0;
    COMMSIM_NCCL(ncclGetVersion(&version));
    result.nccl_version = std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." +
                          std::to_string(version % 100);
    result.devices = world_.gather(open_devices());
    const std::vector<ncclComm_t> comms = world_.init_comms();
    for (std::size_t i = 0; i < devices_.size(); ++i) devices_[i].comm = comms[i];
    // Warm-up at the largest and the smallest size, as nccl-tests does.
    for (std::uint64_t bytes : {o_.max_bytes, o_.min_bytes}) {
      for (int i = 0; i < o_.warmup_iters; ++i) launch(count_of(bytes), false);
      wait();
    }
    for (std::uint64_t bytes = o_.min_bytes; bytes <= o_.max_bytes;
         bytes *= static_cast<std::uint64_t>(o_.step_factor)) {
      result.rows.push_back(row(count_of(bytes)));
      if (o_.max_bytes / static_cast<std::uint64_t>(o_.step_factor) < bytes)
        break;  // the next size would overflow or pass max
    }
    close_devices();
    return result;
  }

 private:
  // Streams and buffers on every local GPU; returns nccl-tests' device lines.
  std::vector<std::string> open_devices() {
    const bool reduces =
        o_.op == Collective::AllReduce || o_.op == Collective::Reduce || o_.op == Collective::ReduceScatter;
    std::vector<std::string> lines;
    devices_.resize(world_.devices().size());
    const std::uint64_t max_bytes_buffer =
        o_.max_bytes + static_cast<std::uint64_t>(type_.size) * static_cast<std::uint64_t>(p_);
    for (std::size_t i = 0; i < devices_.size(); ++i) {
      Device& d = devices_[i];
      d.device = world_.devices()[i];
      d.rank = world_.ranks()[i];
      cudaDeviceProp prop;
      COMMSIM_CUDA(cudaGetDeviceProperties(&prop, d.device));
      if (type_.code >= 10 && reduces && prop.major < 9)
        throw InputError("--dtype", "",
                         "NCCL reduces fp8 only on compute capability 9.0 or newer; GPU " + std::to_string(d.device) +
                             " (" + prop.name + ") is " + std::to_string(prop.major) + "." +
                             std::to_string(prop.minor));
      char line[512];
      std::snprintf(line, sizeof line, "#  Rank %2d Group %2d Pid %6d on %10s device %2d [0x%02x] %s", d.rank, 0,
                    static_cast<int>(getpid()), world_.host().c_str(), d.device, prop.pciBusID, prop.name);
      lines.push_back(line);
      COMMSIM_CUDA(cudaSetDevice(d.device));
      COMMSIM_CUDA(cudaStreamCreateWithFlags(&d.stream, cudaStreamNonBlocking));
      COMMSIM_CUDA(cudaMalloc(&d.send, max_bytes_buffer));
      COMMSIM_CUDA(cudaMalloc(&d.recv, max_bytes_buffer));
      COMMSIM_CUDA(cudaMalloc(&d.wrong, sizeof(unsigned long long)));
      COMMSIM_CUDA(cudaMemset(d.send, 0, max_bytes_buffer));
      COMMSIM_CUDA(cudaMemset(d.recv, 0, max_bytes_buffer));
    }
    return lines;
  }

  void close_devices() {
    for (Device& d : devices_) {
      cudaSetDevice(d.device);
      ncclCommDestroy(d.comm);
      cudaFree(d.send);
      cudaFree(d.recv);
      cudaFree(d.wrong);
      cudaStreamDestroy(d.stream);
    }
  }

  Counts count_of(std::uint64_t bytes) const { return counts_for(o_.op, bytes / ws_, static_cast<std::uint64_t>(p_)); }

  // One size: out of place, then in place.
  BenchRow row(const Counts& c) {
    BenchRow row;
    row.bytes = std::max(c.send, c.recv) * ws_;
    row.count = c.param;
    row.type = o_.dtype;
    row.redop = o_.redop;
    row.root = rooted_ ? o_.root : -1;
    for (bool in_place : {false, true}) {
      BenchTiming& timing = in_place ? row.in_place : row.out_of_place;
      time(c, in_place, row.bytes, timing);
      if (checkable_) timing.wrong = static_cast<std::int64_t>(world_.sum(check(c, in_place)));
    }
    return row;
  }

  // A synchronising run, then `iters` launches timed with the host clock, averaged over processes.
  void time(const Counts& c, bool in_place, std::uint64_t bytes, BenchTiming& timing) {
    launch(c, in_place);  // sync run
    wait();
    world_.barrier();
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < o_.iters; ++i) launch(c, in_place);
    wait();
    std::vector<double> seconds{std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
                                o_.iters};
    world_.sum(seconds);
    timing.time_s = seconds[0] / (world_.mpi() ? static_cast<double>(p_) : 1.0);  // mean over processes
    timing.algbw_Bps = timing.time_s > 0 ? static_cast<double>(bytes) / timing.time_s : 0;
    timing.busbw_Bps = timing.algbw_Bps * busbw_factor(o_.op, p_);
  }

  // One run on verifiable inputs; returns the wrong elements of this process's GPUs.
  std::uint64_t check(const Counts& c, bool in_place) {
    for (Device& d : devices_) {
      COMMSIM_CUDA(cudaSetDevice(d.device));
      char* input = in_place ? d.recv + c.send_inplace_offset * ws_ * static_cast<std::uint64_t>(d.rank) : d.send;
      kernels::bench_fill(input, type_.code, c.send, 0, d.rank, modulus_, d.stream);
      COMMSIM_CUDA(cudaMemsetAsync(d.wrong, 0, sizeof(unsigned long long), d.stream));
    }
    launch(c, in_place);
    std::uint64_t wrong = 0;
    for (Device& d : devices_) {
      COMMSIM_CUDA(cudaSetDevice(d.device));
      count_wrong(d, c, in_place);
      unsigned long long w = 0;
      COMMSIM_CUDA(cudaMemcpyAsync(&w, d.wrong, sizeof w, cudaMemcpyDeviceToHost, d.stream));
      COMMSIM_CUDA(cudaStreamSynchronize(d.stream));
      wrong += w;
    }
    return wrong;
  }

  // Enqueues the kernel counting the wrong elements of one GPU's output.
  void count_wrong(Device& d, const Counts& c, bool in_place) {
    const std::uint64_t r = static_cast<std::uint64_t>(d.rank);
    const char* output = in_place ? d.recv + c.recv_inplace_offset * ws_ * r : d.recv;
    const int op = static_cast<int>(redop_);
    const int code = type_.code;
    switch (o_.op) {
      case Collective::AllReduce:
        kernels::bench_count_wrong(output, code, c.recv, 0, 0, p_, op, 0, 0, modulus_, d.wrong, d.stream);
        break;
      case Collective::Reduce:
        if (d.rank == o_.root)
          kernels::bench_count_wrong(output, code, c.recv, 0, 0, p_, op, 0, 0, modulus_, d.wrong, d.stream);
        break;
      case Collective::Broadcast:
        kernels::bench_count_wrong(output, code, c.recv, 1, 0, p_, op, o_.root, 0, modulus_, d.wrong, d.stream);
        break;
      case Collective::AllGather:
        kernels::bench_count_wrong(output, code, c.recv, 2, 0, p_, op, 0, c.param, modulus_, d.wrong, d.stream);
        break;
      case Collective::ReduceScatter:
        kernels::bench_count_wrong(output, code, c.recv, 0, r * c.recv, p_, op, 0, 0, modulus_, d.wrong, d.stream);
        break;
    }
  }

  // One launch of the collective on every local GPU (one NCCL group when there are several).
  void launch(const Counts& c, bool in_place) {
    if (devices_.size() > 1) COMMSIM_NCCL(ncclGroupStart());
    for (Device& d : devices_) {
      COMMSIM_CUDA(cudaSetDevice(d.device));
      const std::uint64_t r = static_cast<std::uint64_t>(d.rank);
      void* send = in_place ? d.recv + c.send_inplace_offset * ws_ * r : d.send;
      void* recv = in_place ? d.recv + c.recv_inplace_offset * ws_ * r : d.recv;
      switch (o_.op) {
        case Collective::AllReduce:
          COMMSIM_NCCL(ncclAllReduce(send, recv, c.param, t_, redop_, d.comm, d.stream));
          break;
        case Collective::AllGather:
          COMMSIM_NCCL(ncclAllGather(send, recv, c.param, t_, d.comm, d.stream));
          break;
        case Collective::ReduceScatter:
          COMMSIM_NCCL(ncclReduceScatter(send, recv, c.param, t_, redop_, d.comm, d.stream));
          break;
        case Collective::Broadcast:
          COMMSIM_NCCL(ncclBroadcast(send, recv, c.param, t_, o_.root, d.comm, d.stream));
          break;
        case Collective::Reduce:
          COMMSIM_NCCL(ncclReduce(send, recv, c.param, t_, redop_, o_.root, d.comm, d.stream));
          break;
      }
    }
    if (devices_.size() > 1) COMMSIM_NCCL(ncclGroupEnd());
  }

  void wait() {
    for (Device& d : devices_) {
      COMMSIM_CUDA(cudaSetDevice(d.device));
      COMMSIM_CUDA(cudaStreamSynchronize(d.stream));
    }
  }

  const BenchOptions& o_;
  const World& world_;
  const TypeInfo type_;
  const int p_;  // ranks
  const bool rooted_;
  const ncclDataType_t t_;
  const ncclRedOp_t redop_;
  const std::uint64_t ws_;  // bytes per element
  const int modulus_;
  const bool checkable_;
  std::vector<Device> devices_;
};

}  // namespace

BenchResult bench_nccl(const BenchOptions& o) {
  validate(o);
  std::string why;
  if (!nccl_available(&why)) throw NcclUnavailable(why);
#if NCCL_VERSION_CODE < NCCL_VERSION(2, 24, 0)
  if (type_info(o.dtype).code >= 10) throw NcclUnavailable("nccl backend: fp8 types need NCCL 2.24 or newer");
#endif
  World world(o.launch, o.gpus);
  return world.run_or_abort([&] { return BenchRunner(o, world).run(); });
}

}  // namespace commsim::nccl
