#include "hw/nccl/world.hpp"

#include <cstdio>
#include <cstdlib>
#include <numeric>

#include "hw/nccl/checks.hpp"

#ifdef COMMSIM_NCCL_MPI
#include <mpi.h>
#define COMMSIM_MPI_CALL(call)                                              \
  do {                                                                      \
    const int commsim_m_ = (call);                                          \
    if (commsim_m_ != MPI_SUCCESS) {                                        \
      char commsim_s_[MPI_MAX_ERROR_STRING] = "";                           \
      int commsim_l_ = 0;                                                   \
      MPI_Error_string(commsim_m_, commsim_s_, &commsim_l_);                \
      ::commsim::nccl::detail::fail(#call, commsim_s_, __FILE__, __LINE__); \
    }                                                                       \
  } while (0)
#endif

namespace commsim::nccl {

bool launched_by_mpi() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MV2_COMM_WORLD_SIZE"})
    if (const char* v = std::getenv(var); v && std::atoi(v) > 1) return true;
  return false;
}

bool nccl_available(std::string* why) {
  auto no = [&](const std::string& reason) {
    if (why) *why = "nccl backend: " + reason;
    return false;
  };
  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess)
    return no(std::string("no usable GPU: cudaGetDeviceCount failed with ") + cudaGetErrorName(e) + " (" +
              cudaGetErrorString(e) + "); the backend needs an NVIDIA GPU and its driver");
  if (devices == 0) {
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    return no(std::string("no CUDA device is visible") +
              (visible ? std::string(" (CUDA_VISIBLE_DEVICES=") + visible + ")" : ""));
  }
  int version = 0;
  if (ncclGetVersion(&version) != ncclSuccess) return no("the NCCL library does not answer ncclGetVersion");
  return true;
}

World::World(Launch launch, int gpus, int default_gpus) {
  host_ = host_name();
  std::string why;
  if (!nccl_available(&why)) throw NcclUnavailable(why);
  int count = 0;
  COMMSIM_CUDA(cudaGetDeviceCount(&count));
  const bool use_mpi = launch == Launch::Mpi || (launch == Launch::Auto && launched_by_mpi());
  if (use_mpi) {
#ifdef COMMSIM_NCCL_MPI
    int initialized = 0, finalized = 0;
    COMMSIM_MPI_CALL(MPI_Initialized(&initialized));
    COMMSIM_MPI_CALL(MPI_Finalized(&finalized));
    if (finalized)
      throw NcclUnavailable("nccl backend: MPI was already finalized in this process; run one command per mpirun");
    if (!initialized) {
      int provided = 0;
      COMMSIM_MPI_CALL(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided));
      mpi_owned_ = true;
    }
    mpi_ = true;
    COMMSIM_MPI_CALL(MPI_Comm_rank(MPI_COMM_WORLD, &process_));
    COMMSIM_MPI_CALL(MPI_Comm_size(MPI_COMM_WORLD, &processes_));
    MPI_Comm local;
    COMMSIM_MPI_CALL(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, process_, MPI_INFO_NULL, &local));
    int local_rank = 0, local_size = 1;
    COMMSIM_MPI_CALL(MPI_Comm_rank(local, &local_rank));
    COMMSIM_MPI_CALL(MPI_Comm_size(local, &local_size));
    COMMSIM_MPI_CALL(MPI_Comm_free(&local));
    int leader = local_rank == 0 ? 1 : 0;
    COMMSIM_MPI_CALL(MPI_Allreduce(&leader, &nodes_, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    if (count > 1 && local_size > count)
      throw InputError("mpirun", "",
                       std::to_string(local_size) + " processes were started on " + host_ + ", which has " +
                           std::to_string(count) + " GPU(s): start one process per GPU");
    if (gpus > 1)
      throw InputError("--gpus", "", "under mpirun every process drives one GPU; start one process per GPU instead");
    devices_ = {count == 1 ? 0 : local_rank};  // one visible GPU: the launcher already gave each process its own
    ranks_ = {process_};
    nranks_ = processes_;
    ranks_per_host_ = local_size;
#else
    throw NcclUnavailable(
        "nccl backend: this commsim was built without MPI, so it cannot run one process per GPU under mpirun; "
        "rebuild with Open MPI installed, or run one process that drives every GPU (--launch single)");
#endif
  } else {
    const int g = gpus > 0 ? gpus : default_gpus > 0 ? default_gpus : count;
    if (g > count)
      throw InputError("--gpus", "",
                       std::to_string(g) + " GPUs are needed in this process (--gpus, or the scenario's ranks) but " +
                           host_ + " has " + std::to_string(count) +
                           ": start one process per GPU under mpirun across hosts, or run fewer ranks (--set nodes=N)");
    devices_.resize(static_cast<std::size_t>(g));
    std::iota(devices_.begin(), devices_.end(), 0);
    ranks_ = devices_;
    nranks_ = g;
    ranks_per_host_ = g;
  }
}

World::~World() {
#ifdef COMMSIM_NCCL_MPI
  if (mpi_owned_) MPI_Finalize();
#endif
}

std::vector<ncclComm_t> World::init_comms() const {
  std::vector<ncclComm_t> comms(devices_.size(), nullptr);
  if (!mpi_) {
    COMMSIM_NCCL(ncclCommInitAll(comms.data(), static_cast<int>(devices_.size()), devices_.data()));
    return comms;
  }
#ifdef COMMSIM_NCCL_MPI
  ncclUniqueId id;
  if (process_ == 0) COMMSIM_NCCL(ncclGetUniqueId(&id));
  COMMSIM_MPI_CALL(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD));
  COMMSIM_CUDA(cudaSetDevice(devices_[0]));
  COMMSIM_NCCL(ncclCommInitRank(&comms[0], nranks_, id, ranks_[0]));
#endif
  return comms;
}

void World::barrier() const {
#ifdef COMMSIM_NCCL_MPI
  if (mpi_) COMMSIM_MPI_CALL(MPI_Barrier(MPI_COMM_WORLD));
#endif
}

void World::max(std::vector<double>& values) const {
#ifdef COMMSIM_NCCL_MPI
  if (mpi_ && !values.empty())
    COMMSIM_MPI_CALL(MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_DOUBLE, MPI_MAX,
                                   MPI_COMM_WORLD));
#else
  (void)values;
#endif
}

void World::sum(std::vector<double>& values) const {
#ifdef COMMSIM_NCCL_MPI
  if (mpi_ && !values.empty())
    COMMSIM_MPI_CALL(MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_DOUBLE, MPI_SUM,
                                   MPI_COMM_WORLD));
#else
  (void)values;
#endif
}

std::uint64_t World::sum(std::uint64_t value) const {
#ifdef COMMSIM_NCCL_MPI
  if (mpi_) {
    unsigned long long v = value, total = 0;
    COMMSIM_MPI_CALL(MPI_Allreduce(&v, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
    return total;
  }
#endif
  return value;
}

std::vector<std::string> World::gather(const std::vector<std::string>& lines) const {
  if (!mpi_) return lines;
#ifdef COMMSIM_NCCL_MPI
  std::string mine;
  for (const std::string& l : lines) mine += l + "\n";
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(static_cast<std::size_t>(processes_)), offsets(static_cast<std::size_t>(processes_));
  COMMSIM_MPI_CALL(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD));
  int total = 0;
  for (int p = 0; p < processes_; ++p)
    offsets[static_cast<std::size_t>(p)] = total, total += lengths[static_cast<std::size_t>(p)];
  std::string all(static_cast<std::size_t>(process_ == 0 ? total : 0), '\0');
  COMMSIM_MPI_CALL(MPI_Gatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, 0,
                               MPI_COMM_WORLD));
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < all.size()) {
    const std::size_t end = all.find('\n', start);
    out.push_back(all.substr(start, end - start));
    start = end + 1;
  }
  return out;
#else
  return lines;
#endif
}

void World::abort_job(const std::string& message, int code) const {
#ifdef COMMSIM_NCCL_MPI
  if (!mpi_ || processes_ < 2) return;
  std::fprintf(stderr, "commsim: rank %d on %s: %s\n", process_, host_.c_str(), message.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
#else
  (void)message;
  (void)code;
#endif
}

std::string World::describe() const {
  if (!mpi_) return "single process driving " + std::to_string(nranks_) + " GPU(s) on " + host_ + " (ncclCommInitAll)";
  return "MPI, " + std::to_string(nranks_) + " processes on " + std::to_string(nodes_) +
         " host(s), one GPU each (ncclCommInitRank, unique id broadcast by MPI)";
}

}  // namespace commsim::nccl
