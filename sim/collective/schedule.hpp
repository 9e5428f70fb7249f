// A collective expanded into a DAG of operations: transfer(src -> dst, bytes) and reduce(rank, bytes), each with
// the operations it waits for. Generators (registry.hpp) produce it; the engine executes it without knowing
// rings or trees. Operations are stored in creation order, so every dependency points to an earlier operation.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "sim/core/units.hpp"

namespace commsim {

using OpId = std::uint32_t;
inline constexpr OpId kNoOp = 0xffffffffu;

enum class OpKind : std::uint8_t {
  Transfer,  // move `bytes` from src to dst over the network
  Reduce,    // combine `bytes` at rank src (the gamma term); dst == src
  Delay,     // wait `bytes` picoseconds at rank src (latency terms of an aggregated collective)
};

// 32 bytes, fields ordered by size: a 1 GiB ring over 8192 GPUs is 134 M of these, and the flow engine's speed at
// that scale is bound by reading them.
struct Op {
  Bytes bytes;
  // Where the moved or reduced bytes start in the collective's vector (CollectiveSpec::offset included), so that
  // a backend can execute the schedule on real data: a transfer sends [offset, offset + bytes) of src's vector to
  // the same range at dst; a reduce combines the range it received with the rank's own.
  Bytes offset = 0;
  std::int32_t src;
  std::int32_t dst;
  std::uint32_t dep_begin = 0;  // range [dep_begin, dep_end()) in Schedule::deps
  std::uint16_t dep_count = 0;
  OpKind kind;

  std::uint32_t dep_end() const { return dep_begin + dep_count; }
};
static_assert(sizeof(Op) == 32);

struct Schedule {
  std::vector<Op> ops;
  std::vector<OpId> deps;
  // Per operation, in a schedule lumped onto a flow network's quotient (flow_partition.hpp): the operations of the
  // full schedule it stands for. Empty otherwise.
  std::vector<std::uint32_t> copies;

  // kNoOp entries in `after` are ignored, so generators can pass "no predecessor" uniformly.
  OpId transfer(int src, int dst, Bytes bytes, std::initializer_list<OpId> after, Bytes offset = 0) {
    return add({.bytes = bytes, .offset = offset, .src = src, .dst = dst, .kind = OpKind::Transfer}, after);
  }
  OpId reduce(int rank, Bytes bytes, std::initializer_list<OpId> after, Bytes offset = 0) {
    return add({.bytes = bytes, .offset = offset, .src = rank, .dst = rank, .kind = OpKind::Reduce}, after);
  }
  OpId delay(int rank, TimePs duration, std::initializer_list<OpId> after) {
    return add({.bytes = static_cast<Bytes>(duration), .src = rank, .dst = rank, .kind = OpKind::Delay}, after);
  }
  Bytes bytes_transferred() const;

 private:
  OpId add(Op op, std::initializer_list<OpId> after) {
    op.dep_begin = static_cast<std::uint32_t>(deps.size());
    for (OpId d : after)
      if (d != kNoOp) deps.push_back(d);
    op.dep_count = static_cast<std::uint16_t>(deps.size() - op.dep_begin);  // a handful: `after` is a literal list
    ops.push_back(op);
    return static_cast<OpId>(ops.size() - 1);
  }
};

}  // namespace commsim
