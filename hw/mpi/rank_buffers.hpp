// The memory one rank of the MPI backend works on: a flat fp32 gradient buffer of the model's real size (and
// parameters, for Local SGD and sharded steps), DGC residuals, the --check replicas, and per communication stream
// its communicators and the buffers its largest collective needs.
#pragma once

#include <cstdint>
#include <vector>

#include "hw/mpi/native_collectives.hpp"
#include "hw/mpi/prepared_tasks.hpp"

namespace commsim::hw {

// One communication stream's communicators and buffers.
struct Stream {
  StreamComms comms;
  std::vector<std::byte> vector, staging;  // the collective's vector in the comm dtype; received operands
  std::vector<float> floats;               // the vector read back to fp32
  double bytes_sent = 0;                   // this step
};

struct RankBuffers {
  std::vector<float> gradients, parameters;
  std::vector<float> loss = std::vector<float>(kLossElements);  // adaptive Local SGD's averaged loss
  std::vector<std::vector<float>> residuals;                    // DGC: [PreparedTask::residual]
  std::vector<std::vector<std::vector<float>>> shadows;         // --check: [residual][rank]
  std::vector<std::vector<float>> expected_sparse;              // --check: [residual]
  std::vector<std::uint64_t> window_salts;                      // --check: Local SGD steps since the last average
  std::vector<Stream> streams;                                  // [stream]; 0, the compute stream, holds no buffers

  // Buffers sized for the largest collective of each stream; communicators in stream order on every rank
  // (collective over MPI_COMM_WORLD). Ends with reset().
  RankBuffers(const RankContext& context, const PreparedTasks& tasks, const GradientLayout& layout);

  // Gradients start as small pseudo-random numbers (real data, not zeros); parameters and DGC residuals at zero.
  void reset(int rank);

  // The buffer a task's vector comes from and goes back to.
  float* source(Buffer buffer) {
    switch (buffer) {
      case Buffer::Parameters:
        return parameters.data();
      case Buffer::Loss:
        return loss.data();
      case Buffer::Gradients:
        break;
    }
    return gradients.data();
  }

  void free_communicators();
};

}  // namespace commsim::hw
