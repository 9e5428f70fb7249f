// A collective expanded into a DAG of operations: transfer(src -> dst, bytes) and reduce(rank, bytes), each with
// the operations it waits for. Generators (algorithms.hpp) produce it; the engine executes it without knowing
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

struct Op {
  OpKind kind;
  std::int32_t src;
  std::int32_t dst;
  Bytes bytes;
  std::uint32_t dep_begin;  // range in Schedule::deps
  std::uint32_t dep_end;
  // Where the moved or reduced bytes start in the collective's vector (CollectiveSpec::offset included), so that
  // a backend can execute the schedule on real data: a transfer sends [offset, offset + bytes) of src's vector to
  // the same range at dst; a reduce combines the range it received with the rank's own.
  Bytes offset = 0;
};

struct Schedule {
  std::vector<Op> ops;
  std::vector<OpId> deps;

  // kNoOp entries in `after` are ignored, so generators can pass "no predecessor" uniformly.
  OpId transfer(int src, int dst, Bytes bytes, std::initializer_list<OpId> after, Bytes offset = 0) {
    return add({OpKind::Transfer, src, dst, bytes, 0, 0, offset}, after);
  }
  OpId reduce(int rank, Bytes bytes, std::initializer_list<OpId> after, Bytes offset = 0) {
    return add({OpKind::Reduce, rank, rank, bytes, 0, 0, offset}, after);
  }
  OpId delay(int rank, TimePs duration, std::initializer_list<OpId> after) {
    return add({OpKind::Delay, rank, rank, static_cast<Bytes>(duration), 0, 0}, after);
  }
  Bytes bytes_transferred() const;

 private:
  OpId add(Op op, std::initializer_list<OpId> after) {
    op.dep_begin = static_cast<std::uint32_t>(deps.size());
    for (OpId d : after)
      if (d != kNoOp) deps.push_back(d);
    op.dep_end = static_cast<std::uint32_t>(deps.size());
    ops.push_back(op);
    return static_cast<OpId>(ops.size() - 1);
  }
};

}  // namespace commsim
