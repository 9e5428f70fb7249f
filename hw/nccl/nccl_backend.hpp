// The NCCL backend: executes a Plan on NVIDIA GPUs with NCCL and measures it, and runs nccl-tests style
// microbenchmarks for calibration. This header has no CUDA or NCCL types, so the CLI includes it as is; it is
// available when the target commsim_nccl exists (compile definition COMMSIM_HAVE_NCCL).
//
// Ranks: one process per GPU under mpirun (rank 0 creates the NCCL unique id, MPI_Bcast hands it to the others),
// or one process driving several GPUs (ncclCommInitAll). What is real and what is emulated:
//   * real: every collective of the Plan, with NCCL, on real buffers, in the comm dtype; casts, DGC top-k selection,
//     gather and decompression as GPU kernels; Local SGD averaging; the streams, communicators and events that give
//     the Plan's overlap;
//   * emulated: the compute of each layer, as a busy-wait kernel of the Plan's duration on the compute stream
//     (calibrated clock64 loop on one SM), which the output states.
#pragma once

#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/collective/collective.hpp"
#include "sim/core/error.hpp"
#include "sim/plan/plan.hpp"
#include "sim/result/result.hpp"

namespace commsim::nccl {

// No usable GPU, driver or NCCL: bad input for this machine (the CLI's exit code 2), one line.
class NcclUnavailable : public InputError {
 public:
  using InputError::InputError;
};

// A CUDA, NCCL or MPI call failed during a run; the message names the call, file, line and host.
class HardwareError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class Launch : std::uint8_t {
  Auto,           // Mpi when started by mpirun/srun with more than one process, else SingleProcess
  SingleProcess,  // this process drives `gpus` GPUs (ncclCommInitAll)
  Mpi,            // one process per GPU; needs a build with MPI
};
bool parse_launch(const std::string& text, Launch& out);  // "auto", "single", "mpi"

struct NcclOptions {
  Launch launch = Launch::Auto;
  int gpus = 0;               // SingleProcess: GPUs to drive; 0 = the Plan's ranks. Must equal the Plan's ranks.
  int warmup_steps = 2;       // steps run before timing (the Plan's first steps), not reported
  int repeats = 3;            // the Plan's steps are timed this many times; a step's time is its median
  bool check = false;         // one extra untimed pass per step kind with verifiable inputs; counts wrong elements
  bool nccl_estimate = true;  // record NCCL's own estimate of each collective (ncclGroupSimulateEnd, NCCL >= 2.22)
  bool set_nccl_algo = true;  // strategy.algorithm ring/tree -> NCCL_ALGO=Ring/Tree unless the environment sets it
  int trace_steps = 1;        // steps of rank 0 kept in Result::trace
};
// Throws InputError naming the option (e.g. "--repeats: must be >= 1, got 0").
void validate(const NcclOptions& options);

struct NcclRun {
  Result result;                     // backend "nccl", fidelity "measured"
  bool checked = false;              // the check pass ran
  std::uint64_t wrong_elements = 0;  // over every rank and every checked collective
  bool root = true;                  // this process prints and writes files (rank 0 under mpirun)
};

// True when a CUDA device, its driver and NCCL can be used; otherwise false and `why` gets one line naming the cause
// (e.g. "no usable GPU: cudaGetDeviceCount: CUDA driver version is insufficient for CUDA runtime version
// (cudaErrorInsufficientDriver)").
bool nccl_available(std::string* why = nullptr);

// Executes the Plan and measures it. Throws NcclUnavailable (one line) when no GPU can be used, InputError when the
// Plan cannot run here (rank count differs from the GPUs started, fp8 without sm_90, ...), HardwareError when a
// CUDA/NCCL/MPI call fails. `topology` is the Plan's (its ranks per node define the hierarchy groups).
NcclRun run_nccl(const Plan& plan, const Topology& topology, const NcclOptions& options);

// ---- Microbenchmarks (nccl-tests' all_reduce_perf & co.) ----

struct BenchOptions {
  Collective op = Collective::AllReduce;
  std::string dtype = "float";  // float, half, bfloat16, f8e4m3, f8e5m2, double, int32, int8, uint8
  std::string redop = "sum";    // sum, prod, max, min, avg
  std::uint64_t min_bytes = 8, max_bytes = 128ull << 20;
  int step_factor = 2;               // sizes min, min x f, ... <= max (nccl-tests -f)
  int iters = 20, warmup_iters = 5;  // nccl-tests -n / -w
  bool check = true;                 // nccl-tests -c: one checked run per size and mode
  int root = 0;                      // broadcast / reduce
  Launch launch = Launch::Auto;
  int gpus = 0;  // SingleProcess: GPUs (0 = all visible)
};
void validate(const BenchOptions& options);
bool parse_bench_op(const std::string& text,
                    Collective& out);  // allreduce, allgather, reducescatter, broadcast, reduce

// One run's timing, averaged over `iters` (as nccl-tests reports it).
struct BenchTiming {
  double time_s = 0;
  double algbw_Bps = 0;     // bytes / time
  double busbw_Bps = 0;     // algbw x nccl-tests' bus factor
  std::int64_t wrong = -1;  // wrong elements summed over ranks; -1 = not checked
};

struct BenchRow {
  std::uint64_t bytes = 0;  // nccl-tests' size column: the larger of send and receive bytes per rank
  std::uint64_t count = 0;  // elements per rank as NCCL takes them
  std::string type, redop;
  int root = -1;  // -1 for collectives without a root
  BenchTiming out_of_place, in_place;
};

struct BenchResult {
  Collective op = Collective::AllReduce;
  int ranks = 0, nodes = 0;
  int gpus_per_process = 1;          // GPUs this process drives (nccl-tests' nGpus): all of them without MPI
  std::string nccl_version;          // e.g. "2.28.9"
  std::vector<std::string> devices;  // "#  Rank  0 Group  0 Pid 1234 on host device  0 [0000:07:00] NVIDIA H100 ..."
  BenchOptions options;
  std::vector<BenchRow> rows;
  bool root = true;  // this process prints and writes
  // Calibration samples: {"backend":"nccl","op":..,"ranks":..,"rows":[...], "samples":[{"bytes","seconds",..}]}
  nlohmann::json to_json() const;
};

BenchResult bench_nccl(const BenchOptions& options);

// nccl-tests' table (header, one line per size with out-of-place and in-place columns, "# Avg bus bandwidth").
void print_bench_table(const BenchResult& result, std::FILE* out);

// nccl-tests' name of a collective's perf binary ("all_reduce_perf", ...), for the header line.
std::string perf_name(Collective op);

}  // namespace commsim::nccl
