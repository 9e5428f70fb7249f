#include "reports/collective_table.hpp"

#include <algorithm>

#include "sim/collective/nccl_model.hpp"
#include "sim/network/symmetry.hpp"

namespace commsim::reports {
namespace {

constexpr std::uint64_t kFloatBytes = 4;  // nccl-tests' default type (-d float)
// Rank lines ("#  Rank r Group 0 Pid ...") are printed up to this many ranks; nccl-tests prints one per rank, which
// at 100 000 ranks would drown the table.
constexpr int kMaxRankLines = 1024;

std::string band_text(double band_rel) {
  if (band_rel <= 0) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "+-%.0f%%", band_rel * 100);
  return text;
}

void print_commsim_header(std::FILE* out, const CollectiveTableHeader& h, const Topology& topology) {
  if (!h.partial_note.empty()) std::fprintf(out, "# %s\n", h.partial_note.c_str());
  std::fprintf(out, "# commsim %s  %s\n# %s, fidelity %s, %d ranks\n", COMMSIM_VERSION, h.op_name.c_str(),
               topology.summary().c_str(), h.fidelity.c_str(), topology.ranks());
  if (!h.library.empty())
    std::fprintf(out, "# library %s: algorithm, protocol and channels as NCCL's tuner picks them\n", h.library.c_str());
  if (!h.library.empty() && h.gpus_per_thread > 1) {
    const double launch_us = nccl::launch_us_per_gpu(topology);
    std::fprintf(out,
                 "# one thread issues the kernels of %d GPUs (nccl-tests -g %d): an operation takes at least %d x "
                 "%.2f us = %.2f us\n",
                 h.gpus_per_thread, h.gpus_per_thread, h.gpus_per_thread, launch_us, h.gpus_per_thread * launch_us);
  }
}

}  // namespace

NcclTestsSizing nccl_tests_sizing(Collective op, Bytes requested_bytes, int ranks) {
  const std::uint64_t count = requested_bytes / kFloatBytes;
  if (op == Collective::AllGather || op == Collective::ReduceScatter) {
    // base = (count / nranks) & ~(16 / eltSize - 1): a multiple of 4 floats per rank.
    const std::uint64_t per_rank = (count / static_cast<std::uint64_t>(ranks)) & ~(16 / kFloatBytes - 1);
    return {per_rank * static_cast<std::uint64_t>(ranks) * kFloatBytes, per_rank};
  }
  return {count * kFloatBytes, count};
}

const char* nccl_tests_redop(Collective op) {
  return op == Collective::AllGather || op == Collective::Broadcast ? "none" : "sum";
}

int nccl_tests_root(Collective op) { return op == Collective::Broadcast || op == Collective::Reduce ? 0 : -1; }

std::string nccl_tests_number(double value, int width) {
  char text[64];
  for (const char* format : {"%*.2f", "%*.1f", "%*.0f"})
    if (std::snprintf(text, sizeof text, format, width, value) <= width) return text;
  std::snprintf(text, sizeof text, width >= 7 ? "%*.1e" : "%*.0e", width, value);
  return text;
}

CollectivePrediction predict_collective(const CollectiveSpec& base, const Topology& topology, Fidelity fidelity,
                                        const std::vector<Bytes>& sizes, double band_rel,
                                        const CollectiveProgress& progress) {
  const int p = topology.ranks();
  CollectivePrediction out;
  for (Bytes requested : sizes) out.sizes += nccl_tests_sizing(base.op, requested, p).bytes > 0 ? 1 : 0;
  std::vector<CollectiveRow>& rows = out.rows;
  CollectiveSpec spec = base;
  for (Bytes requested : sizes) {
    CollectiveRow row;
    row.requested_bytes = requested;
    row.sizing = nccl_tests_sizing(spec.op, requested, p);
    if (row.sizing.bytes == 0) continue;
    if (progress.before_size && !progress.before_size(row.sizing.bytes)) break;
    spec.bytes = row.sizing.bytes;
    spec.chunks = floored_chunks(base.chunks, spec.bytes, spec.channels, p);
    CollectiveSpec resolved = spec;
    resolved.algorithm = choose_algorithm(spec, topology, fidelity != Fidelity::Analytical);
    row.channels = spec.channels;
    row.band_rel = band_rel;
    if (fidelity == Fidelity::Analytical && spec.algorithm == Algorithm::Hierarchical &&
        uses_library_model(spec, topology)) {
      row.seconds = library_prediction(spec, topology).seconds;  // three NCCL collectives, each with its own choice
    } else if (fidelity == Fidelity::Analytical && uses_library_model(spec, topology)) {
      const nccl::Estimate e = nccl::predict(spec, topology, "--algo");
      resolved.algorithm = e.algorithm;
      row.protocol = to_string(e.protocol);
      row.channels = e.channels;
      row.seconds = e.seconds;
      if (e.band_rel > 0) row.band_rel = e.band_rel;
    } else if (fidelity == Fidelity::Analytical) {
      row.seconds = closed_form_seconds(resolved, topology);
    } else {  // flow: once per orbit where the ring's symmetry allows it, else the full schedule (same result)
      const FlowCollectivesResult flow = simulate_flow_collectives({resolved}, topology, true, progress.flow);
      if (!flow.complete) break;  // stopped part-way: its time so far is a lower bound, not a prediction
      row.seconds = flow.seconds.front();
    }
    row.algorithm = to_string(resolved.algorithm);
    row.algbw_GBps = static_cast<double>(row.sizing.bytes) / row.seconds / 1e9;
    row.busbw_GBps = row.algbw_GBps * busbw_factor(spec.op, p);
    rows.push_back(row);
    if (progress.size_done) progress.size_done(rows.size());
  }
  return out;
}

void print_nccl_tests_table(std::FILE* out, const CollectiveTableHeader& h, const Topology& topology,
                            const std::vector<CollectiveRow>& rows) {
  print_commsim_header(out, h, topology);
  std::fprintf(out,
               "# predicted, not measured: no warm-up, one evaluation per size, no data check (#wrong N/A); the "
               "in-place columns repeat the prediction\n");
  const Bytes min_bytes = rows.empty() ? 0 : rows.front().sizing.bytes;
  const Bytes max_bytes = rows.empty() ? 0 : rows.back().sizing.bytes;
  // nccl-tests v2.19.6 src/util.cu: "# nThread %d nGpus %d minBytes %ld maxBytes %ld step: ..."; nGpus: the GPUs
  // one thread drives (1: one GPU per process, as an MPI launch of nccl-tests runs it).
  std::fprintf(out,
               "# nThread 1 nGpus %d minBytes %llu maxBytes %llu step: %s warmup iters: 0 iters: 1 agg iters: 1 "
               "validation: 0 graph: 0\n#\n# Using devices\n",
               h.gpus_per_thread, static_cast<unsigned long long>(min_bytes),
               static_cast<unsigned long long>(max_bytes), h.doubling_range ? "2(factor)" : "0(list)");
  const int p = topology.ranks(), per_node = topology.ranks_per_node();
  if (p <= kMaxRankLines) {
    for (int r = 0; r < p; ++r) {
      const std::string host = "node" + std::to_string(r / per_node);
      std::fprintf(out, "#  Rank %2d Group %2d Pid %6d on %10s device %2d [sim] %s\n", r, 0, 0, host.c_str(),
                   r % per_node, h.topology_path.c_str());
    }
  } else {
    std::fprintf(out, "#  (%d ranks on %d nodes; one line per rank only up to %d ranks)\n", p, topology.nodes(),
                 kMaxRankLines);
  }
  // Header, rows and footer as src/util.cu writeResultHeader / writeBenchmarkLine* / writeResultFooter print them.
  std::fprintf(out, "#\n# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n",
               "", "", "", "", "");
  std::fprintf(out, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "size", "count", "type",
               "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
  std::fprintf(out, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "(B)", "(elements)", "",
               "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  const Collective op = [&] {
    Collective c = Collective::AllReduce;
    parse_collective(h.op_name, c);
    return c;
  }();
  double busbw_sum = 0;
  for (const CollectiveRow& row : rows) {
    char root[16];
    std::snprintf(root, sizeof root, "%6i", nccl_tests_root(op));
    std::fprintf(out, "%12llu  %12llu  %8s  %6s  %6s", static_cast<unsigned long long>(row.sizing.bytes),
                 static_cast<unsigned long long>(row.sizing.count), "float", nccl_tests_redop(op), root);
    for (int pass = 0; pass < 2; ++pass)  // out-of-place, in-place
      std::fprintf(out, "  %7s  %6s  %6s    N/A", nccl_tests_number(row.seconds * 1e6, 7).c_str(),
                   nccl_tests_number(row.algbw_GBps, 6).c_str(), nccl_tests_number(row.busbw_GBps, 6).c_str());
    std::fprintf(out, "\n");
    busbw_sum += 2 * row.busbw_GBps;
  }
  // The average over every out-of-place and in-place column (src/common.cu: bw[0] += busBw per BenchTime call).
  const double avg_busbw = rows.empty() ? 0 : busbw_sum / static_cast<double>(2 * rows.size());
  std::fprintf(out, "# %-20s : %d %s\n", "Out of bounds values", 0, "OK");
  std::fprintf(out, "# %-20s : %g \n#\n", "Avg bus bandwidth", avg_busbw);
  std::fprintf(out, "# commsim: what was priced for each size (as NCCL_DEBUG_SUBSYS=TUNING would show it)\n");
  std::fprintf(out, "# %10s  %14s  %8s  %4s  %7s\n", "size", "algorithm", "protocol", "nch", "band");
  for (const CollectiveRow& row : rows)
    std::fprintf(out, "# %10llu  %14s  %8s  %4d  %7s\n", static_cast<unsigned long long>(row.sizing.bytes),
                 row.algorithm.c_str(), row.protocol.c_str(), row.channels, band_text(row.band_rel).c_str());
}

void print_commsim_table(std::FILE* out, const CollectiveTableHeader& h, const Topology& topology,
                         const std::vector<CollectiveRow>& rows) {
  print_commsim_header(out, h, topology);
  std::fprintf(out, "#%12s %12s %6s %14s %8s %4s %13s %12s %12s %7s\n", "size(B)", "count", "type", "algo", "proto",
               "nch", "time(us)", "algbw(GB/s)", "busbw(GB/s)", "band");
  for (const CollectiveRow& row : rows)
    std::fprintf(out, " %12llu %12llu %6s %14s %8s %4d %13.2f %12.2f %12.2f %7s\n",
                 static_cast<unsigned long long>(row.sizing.bytes), static_cast<unsigned long long>(row.sizing.count),
                 "float", row.algorithm.c_str(), row.protocol.c_str(), row.channels, row.seconds * 1e6, row.algbw_GBps,
                 row.busbw_GBps, band_text(row.band_rel).c_str());
}

nlohmann::json collective_rows_json(const std::vector<CollectiveRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const CollectiveRow& row : rows)
    out.push_back({{"size_bytes", row.sizing.bytes},
                   {"requested_bytes", row.requested_bytes},
                   {"count", row.sizing.count},
                   {"type", "float"},
                   {"algorithm", row.algorithm},
                   {"protocol", row.protocol},
                   {"channels", row.channels},
                   {"band_rel", row.band_rel},
                   {"time_us", row.seconds * 1e6},
                   {"algbw_GBps", row.algbw_GBps},
                   {"busbw_GBps", row.busbw_GBps}});
  return out;
}

}  // namespace commsim::reports
