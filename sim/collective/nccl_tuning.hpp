// NCCL's estimate of one (collective, algorithm, protocol) on a machine (src/graph/tuning.cc ncclTopoTuneModel,
// ncclTopoGetAlgoTime), the channels it launches and the NVLS pipeline's fill (src/enqueue.cc). Internal to the
// NCCL model (nccl_model.cpp).
#pragma once

#include "sim/collective/nccl_table.hpp"

namespace commsim::nccl::detail {

inline int proto_index(Protocol p) { return static_cast<int>(p); }

struct Evaluation {
  bool applicable = false;
  double latency_us = 0;
  double algbw_GBps = 0;
};

bool is_network(LinkClass c);
int log2i(Bytes n);

// NCCL's latency and algorithm bandwidth for algorithm a, protocol p (applicable = NCCL would consider it).
Evaluation evaluate(int a, int p, Collective op, const Machine& m, const CommLibrary& lib, const Table& t);
// Whether NCCL's tuning loop computes a latency for (collective, algorithm, protocol) at all, enabled or not (the
// cells it prints as 0/0 are the others), and that latency.
bool modeled(int a, int p, Collective op, const Machine& m, const CommLibrary& lib, const Table& t);
double latency_us(int a, int p, Collective op, const Machine& m, const CommLibrary& lib, const Table& t);
// The most algorithm bandwidth the machine's links allow algorithm a, whatever NCCL's constants or a fit say.
double link_ceiling_algbw_GBps(int a, Collective op, const Machine& m);
// NCCL's size-dependent factors of its estimate (ncclTopoGetAlgoTime): tree's size correction of the bandwidth, the
// ring's plateau of the latency.
struct SizeFactors {
  double bandwidth = 1, latency = 1;
};
SizeFactors size_factors(int a, int p, Bytes bytes, const Machine& m, const CommLibrary& lib, const Table& t,
                         Collective op);
// NCCL's estimate for `bytes`: its latency and bandwidth with those factors.
double nccl_time_us(int a, int p, const Evaluation& e, Bytes bytes, const Machine& m, const CommLibrary& lib,
                    const Table& t, Collective op);
// NVLS's channels and chunks on this machine (transport/nvls.cc ncclNvlsTuning; the table's nvls block).
struct NvlsSetup {
  int channels = 0;
  Bytes chunk_bytes = 0;       // comm->nvlsChunkSize: NVLS's largest chunk
  Bytes tree_chunk_bytes = 0;  // NVLS-tree's largest chunk (enqueue.cc calcCollChunking)
};
NvlsSetup nvls_setup(const Table& t, GpuArch arch, const Machine& m);
// Channels NCCL launches for `bytes` (enqueue.cc).
int launched_channels(int a, int p, Collective op, Bytes bytes, const Machine& m, const Table& t,
                      const CommLibrary& lib);
// How NVLS / NVLS-tree chunk a collective (nccl_tuning.cpp): the bytes their pipeline adds to the bandwidth term,
// and the rounds of chunks the kernel runs; 0 and 0 for other algorithms.
struct NvlsChunking {
  double fill_bytes = 0;
  double rounds = 0;
};
NvlsChunking nvls_chunking(int a, Collective op, Bytes bytes, const Machine& m, const Table& t, GpuArch arch);

}  // namespace commsim::nccl::detail
