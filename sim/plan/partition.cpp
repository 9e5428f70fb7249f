// ByteScheduler's tensor partitioning (Peng et al., "A Generic Communication Scheduler for Distributed DNN Training
// Acceleration", SOSP 2019, sec. 3.2): a bucket's gradients are cut into pieces of at most strategy.partition_mb,
// each its own collective with its own fixed costs (libraries/overheads.json: the library's launch and the
// framework's per-collective work; ByteScheduler posts every partition as a separate CommTask through the framework
// engine), so that a piece of an earlier layer can overtake the rest of a large, later one (priority forward_order).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "sim/core/error.hpp"
#include "sim/plan/plan_builder.hpp"

namespace commsim {

namespace {

std::string format_number(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", x);
  return text;
}

// The most pieces one step may have: a step's tasks are kept in memory for every step simulated.
constexpr double kMaxPiecesPerStep = 1 << 16;

// Elements of fp32 gradients in one piece of at most partition_mb MiB (as bucket sizes, fp32 bytes), at least one.
std::uint64_t piece_elements(double partition_mb) {
  return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::floor(partition_mb * kMB / 4.0)));
}

// The tensors of `bucket` (listed in its order) that elements [begin, end) of its buffer overlap, and where the
// range starts in their concatenation.
std::pair<std::vector<int>, ElementRange> piece_of(const Model& model, const Bucket& bucket, std::uint64_t begin,
                                                   std::uint64_t end) {
  std::vector<int> tensors;
  ElementRange range{0, end - begin};
  std::uint64_t at = 0;
  for (int t : bucket.tensors) {
    const std::uint64_t size = model.tensors[t].elements;
    if (at + size > begin && at < end) {
      if (tensors.empty()) range.offset = begin - at;
      tensors.push_back(t);
    }
    at += size;
  }
  return {tensors, range};
}

}  // namespace

void check_partition(const Scenario& sc, const std::vector<Bucket>& buckets) {
  const double mb = sc.strategy.partition_mb;
  if (mb <= 0) return;
  const double per_piece = static_cast<double>(piece_elements(mb));
  double pieces = 0;
  for (const Bucket& b : buckets) pieces += std::ceil(static_cast<double>(b.elements) / per_piece);
  if (pieces > kMaxPiecesPerStep)
    throw InputError(sc.file, "strategy.partition_mb",
                     format_number(mb) + " MiB cuts a step's gradients into " + format_number(pieces) +
                         " pieces, more than the " + std::to_string(static_cast<int>(kMaxPiecesPerStep)) +
                         " a plan keeps per step: use larger pieces");
}

void allreduce_bucket(const StepBuilder& b, StepPlan& step, const Bucket& bucket, int index, int dep) {
  const Strategy& st = b.sc.strategy;
  const std::string name = "bucket " + std::to_string(index);
  if (st.partition_mb <= 0) {
    b.communicate(step, bucket.stream, Collective::AllReduce, bucket.elements, {dep}, name, index, bucket.tensors,
                  st.algorithm, Purpose::DenseGradients);
    return;
  }
  // Pieces of partition_mb from the start of the bucket's buffer (backward order), the last one shorter.
  const std::uint64_t size = piece_elements(st.partition_mb);
  int piece = 0;
  for (std::uint64_t begin = 0; begin < bucket.elements; begin += size, ++piece) {
    const std::uint64_t end = std::min(bucket.elements, begin + size);
    auto [tensors, range] = piece_of(b.model, bucket, begin, end);
    b.communicate(step, bucket.stream, Collective::AllReduce, range.count, {dep},
                  name + " piece " + std::to_string(piece), index, tensors, st.algorithm, Purpose::DenseGradients,
                  range);
  }
}

int earliest_layer(const Task& task, const Model& model) {
  int layer = -1;
  for (int t : task.tensors) {
    const int l = model.tensors[static_cast<std::size_t>(t)].layer;
    if (layer < 0 || l < layer) layer = l;
  }
  return layer;
}

}  // namespace commsim
