#include "hw/nccl/launch_ops.hpp"

#include <cmath>

#include "hw/nccl/checks.hpp"

namespace commsim::nccl {
namespace {

// A non-collective op on one GPU's stream.
void enqueue_local(Rank& r, const LaunchProgram& program, const LaunchOp& op, double factor, bool no_spin) {
  const kernels::Wire wire = wire_of(program.comm_dtype);
  const std::uint64_t wb = static_cast<std::uint64_t>(kernels::wire_bytes(wire));
  COMMSIM_CUDA(cudaSetDevice(r.device));
  cudaStream_t s = r.streams[static_cast<std::size_t>(op.stream)];
  Buffers* b = op.buffer >= 0 ? &r.buffers[static_cast<std::size_t>(op.buffer)] : nullptr;
  const std::uint64_t offset = op.first + (op.shard ? static_cast<std::uint64_t>(r.rank) * op.count : 0);
  switch (op.kind) {
    case OpKind::Record:
      COMMSIM_CUDA(cudaEventRecord(r.events[static_cast<std::size_t>(op.event)], s));
      break;
    case OpKind::Wait:
      COMMSIM_CUDA(cudaStreamWaitEvent(s, r.events[static_cast<std::size_t>(op.event)], 0));
      break;
    case OpKind::Spin:
      if (!no_spin) kernels::spin(std::llround(op.seconds * factor * r.cycles_per_s), s);
      break;
    case OpKind::CastDown:
      kernels::cast_down(b->f32 + offset, static_cast<char*>(b->comm) + offset * wb, wire, op.count, s);
      break;
    case OpKind::CastUp: {
      const bool narrow = op.dtype != Dtype::Float32;  // from the comm dtype's copy, else the fp32 buffer in place
      const void* src = narrow ? static_cast<const void*>(static_cast<char*>(b->comm) + offset * wb) : b->f32 + offset;
      kernels::cast_up(src, b->f32 + offset, narrow ? wire : kernels::Wire::F32, op.count, op.scale, s);
      break;
    }
    case OpKind::TopK:
      kernels::topk(b->f32, op.elements, op.count, b->packed, wire, r.scratch[static_cast<std::size_t>(op.stream)], s);
      break;
    case OpKind::Scatter:
      kernels::scatter_add(b->gathered, words_for(op.count, kernels::wire_bytes(wire)), program.ranks, op.count, wire,
                           b->dense, op.elements, s);
      break;
    case OpKind::Collective:
      break;
  }
}

}  // namespace

void enqueue_collective(Rank& r, const LaunchOp& op) {
  ncclComm_t c = r.comms[static_cast<std::size_t>(op.comm)];
  if (!c) return;  // not a member (Inter communicator on a non-leader)
  Buffers& b = r.buffers[static_cast<std::size_t>(op.buffer)];
  cudaStream_t s = r.streams[static_cast<std::size_t>(op.stream)];
  const ncclDataType_t t = nccl_type(op.dtype);
  char* base = static_cast<char*>(op.dtype == Dtype::Float32 ? static_cast<void*>(b.f32) : b.comm) +
               op.first * static_cast<std::size_t>(dtype_size(op.dtype));
  // Sharded ops use the world communicator, where this GPU's rank is its global rank.
  const std::size_t shard =
      static_cast<std::size_t>(r.rank) * op.count * static_cast<std::size_t>(dtype_size(op.dtype));
  COMMSIM_CUDA(cudaSetDevice(r.device));
  switch (op.call) {
    case Call::AllReduce:
      COMMSIM_NCCL(ncclAllReduce(base, base, op.count, t, ncclSum, c, s));
      break;
    case Call::Reduce:
      COMMSIM_NCCL(ncclReduce(base, base, op.count, t, ncclSum, op.root, c, s));
      break;
    case Call::Broadcast:
      COMMSIM_NCCL(ncclBroadcast(base, base, op.count, t, op.root, c, s));
      break;
    case Call::ReduceScatter:
      COMMSIM_NCCL(ncclReduceScatter(base, base + shard, op.count, t, ncclSum, c, s));
      break;
    case Call::AllGather:
      if (op.dtype == Dtype::Packed32)
        COMMSIM_NCCL(ncclAllGather(b.packed, b.gathered, op.count, t, c, s));
      else
        COMMSIM_NCCL(ncclAllGather(base + shard, base, op.count, t, c, s));
      break;
  }
}

void enqueue_op(std::vector<Rank>& ranks, const LaunchProgram& program, const LaunchOp& op, double factor,
                bool no_spin) {
  if (op.kind == OpKind::Collective) {
    COMMSIM_NCCL(ncclGroupStart());
    for (Rank& r : ranks) enqueue_collective(r, op);
    COMMSIM_NCCL(ncclGroupEnd());
    return;
  }
  for (Rank& r : ranks) enqueue_local(r, program, op, factor, no_spin);
}

}  // namespace commsim::nccl
