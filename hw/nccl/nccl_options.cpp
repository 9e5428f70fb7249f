// The GPU-free half of the NCCL backend's API: option parsing and validation, and the nccl-tests style report of a
// microbenchmark (table and JSON). Built into commsim_nccl_plan, so it is tested on machines without a GPU.
#include <set>

#include "hw/nccl/nccl_backend.hpp"

namespace commsim::nccl {

bool parse_launch(const std::string& text, Launch& out) {
  if (text == "auto")
    out = Launch::Auto;
  else if (text == "single")
    out = Launch::SingleProcess;
  else if (text == "mpi")
    out = Launch::Mpi;
  else
    return false;
  return true;
}

void validate(const NcclOptions& o) {
  if (o.gpus < 0)
    throw InputError("--gpus", "", "must be >= 0 (0 = one per rank of the scenario), got " + std::to_string(o.gpus));
  if (o.warmup_steps < 0) throw InputError("--warmup", "", "must be >= 0, got " + std::to_string(o.warmup_steps));
  if (o.repeats < 1) throw InputError("--repeats", "", "must be >= 1, got " + std::to_string(o.repeats));
  if (o.trace_steps < 0) throw InputError("--trace-steps", "", "must be >= 0, got " + std::to_string(o.trace_steps));
  if (o.launch == Launch::Mpi && o.gpus > 1)
    throw InputError("--gpus", "",
                     "under mpirun every process drives one GPU; start one process per GPU instead of --gpus " +
                         std::to_string(o.gpus));
}

bool parse_bench_op(const std::string& text, Collective& out) { return parse_collective(text, out); }

namespace {

const std::set<std::string> kDtypes = {"float",  "half",  "bfloat16", "f8e4m3", "f8e5m2",
                                       "double", "int32", "int8",     "uint8"};
const std::set<std::string> kRedops = {"sum", "prod", "max", "min", "avg"};

// nccl-tests' time column: fewer decimals as the time grows.
std::string time_text(double seconds) {
  const double us = seconds * 1e6;
  char buf[32];
  std::snprintf(buf, sizeof buf, us >= 10000.0 ? "%7.0f" : us >= 100.0 ? "%7.1f" : "%7.2f", us);
  return buf;
}

nlohmann::json timing_json(const BenchTiming& t) {
  return {{"time_us", t.time_s * 1e6},
          {"algbw_GBps", t.algbw_Bps / 1e9},
          {"busbw_GBps", t.busbw_Bps / 1e9},
          {"wrong", t.wrong}};
}

}  // namespace

void validate(const BenchOptions& o) {
  if (!kDtypes.count(o.dtype))
    throw InputError(
        "--dtype", "",
        "unknown type \"" + o.dtype + "\" (float, half, bfloat16, f8e4m3, f8e5m2, double, int32, int8, uint8)");
  if (!kRedops.count(o.redop))
    throw InputError("--redop", "", "unknown reduction \"" + o.redop + "\" (sum, prod, max, min, avg)");
  if (o.min_bytes == 0 || o.max_bytes < o.min_bytes)
    throw InputError("--sizes", "",
                     "need 0 < min <= max, got " + std::to_string(o.min_bytes) + ":" + std::to_string(o.max_bytes));
  if (o.step_factor < 2) throw InputError("--step-factor", "", "must be >= 2, got " + std::to_string(o.step_factor));
  if (o.iters < 1) throw InputError("--iters", "", "must be >= 1, got " + std::to_string(o.iters));
  if (o.warmup_iters < 0) throw InputError("--warmup-iters", "", "must be >= 0, got " + std::to_string(o.warmup_iters));
  if (o.gpus < 0) throw InputError("--gpus", "", "must be >= 0 (0 = every visible GPU), got " + std::to_string(o.gpus));
  if (o.root < 0) throw InputError("--root", "", "must be >= 0, got " + std::to_string(o.root));
  if ((o.dtype == "f8e4m3" || o.dtype == "f8e5m2") && o.redop != "sum" && o.redop != "max" && o.redop != "min")
    throw InputError("--redop", "", "fp8 types reduce with sum, max or min only");
}

std::string perf_name(Collective op) {
  switch (op) {
    case Collective::AllReduce:
      return "all_reduce_perf";
    case Collective::ReduceScatter:
      return "reduce_scatter_perf";
    case Collective::AllGather:
      return "all_gather_perf";
    case Collective::Broadcast:
      return "broadcast_perf";
    case Collective::Reduce:
      return "reduce_perf";
  }
  return "?";
}

nlohmann::json BenchResult::to_json() const {
  nlohmann::json rows_json = nlohmann::json::array(), samples = nlohmann::json::array();
  for (const BenchRow& r : rows) {
    rows_json.push_back({{"size_bytes", r.bytes},
                         {"count", r.count},
                         {"type", r.type},
                         {"redop", r.redop},
                         {"root", r.root},
                         {"out_of_place", timing_json(r.out_of_place)},
                         {"in_place", timing_json(r.in_place)}});
    // One sample per timed run: what calibration fits link parameters to (seconds for `bytes` on `ranks` ranks).
    for (const auto* t : {&r.out_of_place, &r.in_place})
      samples.push_back({{"op", std::string(to_string(op))},
                         {"bytes", r.bytes},
                         {"ranks", ranks},
                         {"nodes", nodes},
                         {"seconds", t->time_s},
                         {"in_place", t == &r.in_place},
                         {"wrong", t->wrong}});
  }
  return {{"backend", "nccl"},
          {"fidelity", "measured"},
          {"commsim_version", COMMSIM_VERSION},
          {"benchmark", perf_name(op)},
          {"op", std::string(to_string(op))},
          {"ranks", ranks},
          {"nodes", nodes},
          {"nccl_version", nccl_version},
          {"dtype", options.dtype},
          {"redop", options.redop},
          {"iters", options.iters},
          {"warmup_iters", options.warmup_iters},
          {"devices", devices},
          {"rows", rows_json},
          {"samples", samples}};
}

void print_bench_table(const BenchResult& r, std::FILE* out) {
  const BenchOptions& o = r.options;
  std::fprintf(out, "# %s (commsim bench --backend nccl, nccl-tests format), NCCL version %s\n",
               perf_name(r.op).c_str(), r.nccl_version.c_str());
  std::fprintf(out,
               "# nThread 1 nGpus %d minBytes %llu maxBytes %llu step: %d(factor) warmup iters: %d iters: %d agg "
               "iters: 1 validation: %d graph: 0\n",
               r.gpus_per_process, static_cast<unsigned long long>(o.min_bytes),
               static_cast<unsigned long long>(o.max_bytes), o.step_factor, o.warmup_iters, o.iters, o.check ? 1 : 0);
  std::fprintf(out, "#\n# Using devices\n");
  for (const std::string& d : r.devices) std::fprintf(out, "%s\n", d.c_str());
  std::fprintf(out, "#\n");
  std::fprintf(out, "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n", "",
               "", "", "", "");
  std::fprintf(out, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s\n", "size", "count", "type",
               "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
  std::fprintf(out, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n", "(B)", "(elements)", "",
               "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  double bw_sum = 0;
  int bw_count = 0;
  std::int64_t errors = 0;
  for (const BenchRow& row : r.rows) {
    std::fprintf(out, "%12llu  %12llu  %8s  %6s  %6i", static_cast<unsigned long long>(row.bytes),
                 static_cast<unsigned long long>(row.count), row.type.c_str(), row.redop.c_str(), row.root);
    for (const BenchTiming* t : {&row.out_of_place, &row.in_place}) {
      std::fprintf(out, "  %7s  %6.2f  %6.2f", time_text(t->time_s).c_str(), t->algbw_Bps / 1e9, t->busbw_Bps / 1e9);
      if (t->wrong < 0)
        std::fprintf(out, "  %5s", "N/A");
      else
        std::fprintf(out, "  %5lld", static_cast<long long>(t->wrong));
      bw_sum += t->busbw_Bps / 1e9;
      ++bw_count;
      if (t->wrong > 0) ++errors;
    }
    std::fprintf(out, "\n");
  }
  std::fprintf(out, "# Out of bounds values : %lld %s\n", static_cast<long long>(errors), errors ? "FAILED" : "OK");
  std::fprintf(out, "# Avg bus bandwidth    : %g \n#\n", bw_count ? bw_sum / bw_count : 0.0);
}

}  // namespace commsim::nccl
