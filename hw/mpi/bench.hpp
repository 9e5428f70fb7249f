// Microbenchmarks for calibration (`commsim bench --backend mpi`), run in every rank of an MPI job:
//  - ping-pong between two ranks for each link class present (same node: shared memory; across emulated nodes: the
//    fabric's class, tcp), 8 B up to the size cap, doubling: alpha and beta of each class;
//  - allreduce from 8 B to 256 MiB (doubling; --max-bytes caps it), printed as nccl-tests' all_reduce_perf prints
//    it (time, algbw = size / time, busbw = algbw x 2(n-1)/n, doc/PERFORMANCE.md), each size checked once with
//    verifiable inputs (#wrong);
//  - local reduction throughput (gamma): a float sum a[i] += b[i] over a 64 MiB vector, in bytes of the vector/s.
// Every sample (size, seconds per repetition, repetitions) goes to the JSON that calibration fits alpha/beta/gamma to.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "hw/mpi/mpi_backend.hpp"
#include "sim/topology/topology.hpp"

namespace commsim::hw {

struct BenchOptions {
  std::uint64_t max_bytes = 256ull << 20;  // largest allreduce (and ping-pong, at most 64 MiB) in bytes
  CollectiveImpl impl = CollectiveImpl::Native;
  double target_s = 0.05;  // measuring time aimed at per size (at least one repetition)
  std::string network;     // what the job runs on (the launcher's words), the report's "network"; empty: left out
};

// Returns the report on rank 0 (null elsewhere) and prints its tables there. `topology` names the link classes.
nlohmann::json run_bench(const Topology& topology, const BenchOptions& options);

}  // namespace commsim::hw
