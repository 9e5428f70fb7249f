// Limits on the size of what an input may ask for. Each is far above any real cluster or training job and is
// checked where the input is read, before anything is allocated, so that a typo (an extra digit, a value in the
// wrong unit) is a one-line error naming the field instead of an exhausted machine. docs/*-format.md and the
// README state them.
#pragma once

#include <cstdint>

namespace commsim {

// Largest message, bucket or size-sweep entry: 1 TiB, in bytes (keeps byte counts times rank counts inside 64 bits).
inline constexpr std::uint64_t kMaxBytes = std::uint64_t{1} << 40;
// Elements of one tensor of a model, and of the whole model (a model file's elements, shape dimensions and
// total_parameters): 2^50, about 10^15, so that elements times bytes per element (at most 8) stay inside 64 bits.
inline constexpr std::int64_t kMaxElements = std::int64_t{1} << 50;
// Nodes of a cluster topology (also the largest --nodes).
inline constexpr std::int64_t kMaxNodes = 1 << 22;
// Devices in one node template (GPUs, CPUs, switches, NICs), and ranks among them: per-node routing tables are
// quadratic in the ranks of a node (1024 ranks: 1 M local paths).
inline constexpr std::int64_t kMaxDevicesPerNode = 4096;
inline constexpr std::int64_t kMaxRanksPerNode = 1024;
// Ranks of a whole cluster (nodes x ranks per node) in the analytical fidelity, which never enumerates them all.
inline constexpr std::int64_t kMaxRanks = std::int64_t{1} << 22;
// Ranks in the flow fidelity, which keeps a flow and a route per transfer (8192 ranks take 27 s, BENCHMARKS.md).
inline constexpr std::int64_t kMaxFlowRanks = 1 << 16;
// A link's latency, in seconds (one hop).
inline constexpr double kMaxLinkLatencySeconds = 1.0;
// Channels of a collective (NCCL's MAXCHANNELS is 64) and pipeline chunks per step.
inline constexpr int kMaxChannels = 64;
inline constexpr int kMaxChunks = 1024;
// What a gzipped JSON file (a profiler's .json.gz trace) may expand to: 1 GiB (its parsed document takes several
// times that). Gzip compresses runs of one byte about 1000:1, so a small file could otherwise fill the memory.
inline constexpr std::uint64_t kMaxGunzippedBytes = std::uint64_t{1} << 30;
// Steps of a simulated or measured run, and parallel simulations of one command.
inline constexpr int kMaxSteps = 100000;
inline constexpr int kMaxJobs = 1024;

}  // namespace commsim
