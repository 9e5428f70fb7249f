// `commsim collective`: predicts one collective over a size sweep and prints it as nccl-tests does
// (reports/collective_table.hpp).
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "explore/interrupt.hpp"
#include "reports/collective_table.hpp"
#include "reports/format.hpp"
#include "sim/collective/collective.hpp"
#include "sim/collective/nccl_model.hpp"
#include "sim/collective/nccl_printed_table.hpp"
#include "sim/collective/registry.hpp"
#include "sim/core/error.hpp"
#include "sim/core/limits.hpp"
#include "sim/engine/executor.hpp"
#include "sim/topology/calibration_band.hpp"

namespace commsim::cli {

std::vector<Bytes> parse_sizes(const std::string& text) {
  auto one = [&](const std::string& s) -> Bytes {
    unsigned long long value = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);  // digits only: no sign, no wrap
    if (ec != std::errc() || end == s.data())
      throw InputError("--sizes", "", "\"" + s + "\" is not a size (e.g. 8, 64K, 1M, 1G)");
    const std::string suffix(end, s.data() + s.size());
    Bytes scale = suffix.empty()  ? 1
                  : suffix == "K" ? 1ull << 10
                  : suffix == "M" ? 1ull << 20
                  : suffix == "G" ? 1ull << 30
                                  : 0;
    if (scale == 0 || value == 0)
      throw InputError("--sizes", "", "\"" + s + "\" is not a positive size (suffixes K, M, G)");
    if (value > kMaxBytes / scale) throw InputError("--sizes", "", "\"" + s + "\" is over the 1 TiB limit (1024G)");
    return value * scale;
  };
  std::vector<Bytes> sizes;
  if (auto colon = text.find(':'); colon != std::string::npos) {
    Bytes lo = one(text.substr(0, colon)), hi = one(text.substr(colon + 1));
    if (lo > hi) throw InputError("--sizes", "", "range " + text + " goes down");
    for (Bytes s = lo; s <= hi; s *= 2) sizes.push_back(s);
  } else {
    std::size_t start = 0;
    while (start <= text.size()) {
      std::size_t comma = text.find(',', start);
      sizes.push_back(one(text.substr(start, comma - start)));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return sizes;
}

namespace {

struct CollectiveOptions {
  std::string topology, format = "nccl-tests", op = "allreduce", algo, proto = "auto", sizes = "8:1G",
                        fidelity = "analytical", json, nccl_version, against;
  int nodes = 0, channels = 0, chunks = 0, hierarchy_groups = 0, gpus_per_thread = 1;
  double reduce_Bps = 0;
  bool tuning_table = false;
  bool reduce_Bps_given = false;  // --reduce-Bps was given (its default 0 means a free reduction)
  bool algo_given = false;        // --algo was given (without it: the library's own choice, run_collective)
};

// A flow run of a large collective can take minutes: on a terminal its progress is drawn on stderr (the size in
// flight, the simulated time it reached, events processed and their rate); SIGINT/SIGTERM stop it at the next check
// (every kCheckEveryEvents events, or before the next size), keeping the sizes done.
class FlowRunMonitor {
 public:
  explicit FlowRunMonitor(std::size_t sizes) : bar_("sizes", sizes, 1) {}

  reports::CollectiveProgress progress() {
    reports::CollectiveProgress p;
    p.before_size = [this](Bytes size_bytes) {
      size_bytes_ = size_bytes;
      size_start_ = std::chrono::steady_clock::now();
      last_draw_ = {};  // the size's first check draws
      bar_.update(rows_done_, std::to_string(size_bytes_) + " B: starting");
      return guard_.signal() == 0;
    };
    p.flow.every_events = kCheckEveryEvents;
    p.flow.keep_going = [this](const EventQueue& queue) {
      const auto now = std::chrono::steady_clock::now();
      if (bar_.enabled() && now - last_draw_ >= kRedrawEvery) {
        bar_.update(rows_done_, detail(queue));
        last_draw_ = now;
      }
      return guard_.signal() == 0;
    };
    p.size_done = [this](std::size_t rows_done) {
      rows_done_ = rows_done;
      bar_.update(rows_done_, std::to_string(size_bytes_) + " B: done");
      guard_.item_done(rows_done);
    };
    return p;
  }
  // The outputs are being written: from now on a second signal no longer ends the process.
  int finish() {
    bar_.finish();
    guard_.writing();
    return guard_.signal();
  }

 private:
  std::string detail(const EventQueue& queue) const {
    const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - size_start_).count();
    const double events = static_cast<double>(queue.processed());
    return std::to_string(size_bytes_) + " B: simulated " + reports::fixed(ps_to_seconds(queue.now()) * 1e6, 1) +
           " us, " + reports::fixed(events / 1e6, 1) + " M events, " +
           reports::fixed(wall_s > 0 ? events / wall_s / 1e6 : 0, 2) + " M events/s";
  }

  // At the 10 - 14 M events/s of a flow run (README, "Scale") a check every 2^16 events comes every ~5 ms: a signal
  // stops the run without a wait a user notices, and the check (a flag read) costs nothing next to 2^16 events.
  static constexpr std::uint64_t kCheckEveryEvents = 1 << 16;
  static constexpr std::chrono::milliseconds kRedrawEvery{200};  // a terminal line redrawn 5 times a second

  explore::InterruptGuard guard_;
  reports::ProgressBar bar_;
  std::chrono::steady_clock::time_point last_draw_;
  std::size_t rows_done_ = 0;
  Bytes size_bytes_ = 0;
  std::chrono::steady_clock::time_point size_start_;
};

// "nccl 2.27.3 (constants of 2.26)": the release, and the table it is priced with where that is an older one.
std::string library_label(const std::string& version) {
  const std::string table = nccl::table_for(version);
  return "nccl " + version + (table == version ? "" : " (constants of " + table + ")");
}

// The collective, algorithm, protocol and fidelity named on the command line (exit 2 on an unknown name).
CollectiveSpec parse_names(const CollectiveOptions& o, Fidelity& fidelity) {
  CollectiveSpec spec;
  if (!parse_collective(o.op, spec.op))
    throw InputError("--op", "",
                     "unknown collective \"" + o.op + "\" (allreduce, reducescatter, allgather, broadcast, reduce)");
  // A list in NCCL_ALGO / NCCL_PROTO's syntax narrows NCCL's own choice (algorithm / protocol Auto). Without --algo
  // the spec keeps the ring until run_collective knows the library.
  if (o.algo_given && nccl::is_nccl_list(o.algo))
    spec.algorithm = Algorithm::Auto, spec.nccl_algorithms = nccl::enabled_by_list(o.algo, spec.op, false, "--algo");
  else if (o.algo_given && !parse_algorithm(o.algo, spec.algorithm))
    throw InputError("--algo", "", "unknown algorithm \"" + o.algo + "\" (" + algorithm_names(", ") + ")");
  if (nccl::is_nccl_list(o.proto))
    spec.protocol = Protocol::Auto, spec.nccl_protocols = nccl::enabled_by_list(o.proto, spec.op, true, "--proto");
  else if (!parse_protocol(o.proto, spec.protocol))
    throw InputError("--proto", "", "unknown protocol \"" + o.proto + "\" (ll, ll128, simple, auto)");
  if (!parse_fidelity(o.fidelity, fidelity))
    throw InputError("--fidelity", "", "unknown fidelity \"" + o.fidelity + "\" (analytical, flow)");
  return spec;
}

void write_collective_json(const CollectiveOptions& o, const CollectiveSpec& spec, int p,
                           const reports::CollectivePrediction& prediction, const std::string& partial_note) {
  const std::vector<reports::CollectiveRow>& rows = prediction.rows;
  nlohmann::json doc = {{"commsim_version", COMMSIM_VERSION},
                        {"topology", o.topology},
                        {"ranks", p},
                        {"op", o.op},
                        {"fidelity", o.fidelity},
                        {"channels", spec.channels},
                        {"rows", reports::collective_rows_json(rows)}};
  if (!prediction.complete()) {  // as `sweep` marks a partial sweep.json
    doc["partial"] = true;
    doc["sizes_done"] = rows.size();
    doc["sizes_total"] = prediction.sizes;
    doc["note"] = partial_note;
  }
  write_file(o.json, doc.dump(2) + "\n", "--json");
}

// The topology of --topology (and --nodes): a collective needs a peer (simulate takes one rank, as a single-GPU
// baseline).
std::unique_ptr<Topology> collective_topology(const CollectiveOptions& o) {
  auto topology = load_topology(o.topology, o.nodes);
  if (topology->ranks() < 2)
    throw InputError(o.topology, "nodes",
                     "one rank: a collective needs two or more (NCCL runs one rank's collective as a local copy)");
  return topology;
}

int run_collective(const CollectiveOptions& o) {
  Fidelity fidelity;
  CollectiveSpec spec = parse_names(o, fidelity);
  auto topology = collective_topology(o);
  const bool nccl = topology->library().kind == LibraryKind::Nccl;
  // Without --algo, NCCL picks as nccl-tests' runs without NCCL_ALGO do; other libraries run the ring.
  if (!o.algo_given && nccl) spec.algorithm = Algorithm::Auto;
  if (!o.nccl_version.empty()) nccl::use_release(*topology, o.nccl_version, "--nccl-version", "");
  if ((spec.protocol != Protocol::Auto || spec.nccl_protocols != 0) && !nccl)
    throw InputError("--proto", "", "protocols are NCCL's: " + o.topology + " names no NCCL library");
  if (spec.nccl_algorithms != 0 && !nccl)
    throw InputError("--algo", "", "lists in NCCL_ALGO's syntax are NCCL's: " + o.topology + " names no NCCL library");
  spec.channels = o.channels > 0 ? o.channels : topology->default_channels();
  spec.nccl_channels = nccl ? o.channels : 0;
  spec.gpus_per_thread = o.gpus_per_thread;
  spec.chunks = o.chunks;
  spec.hierarchy_groups = o.hierarchy_groups;
  spec.reduce_Bps = o.reduce_Bps;
  spec.ranks_per_node = topology->ranks_per_node();
  if (o.hierarchy_groups > 0 && spec.algorithm != Algorithm::Hierarchical)
    throw InputError("--groups", "", "sets the groups of --algo hierarchical only");
  // NCCL's model prices its own chunks and reductions: options for the schedules would be silently ignored.
  if (fidelity == Fidelity::Analytical && uses_library_model(spec, *topology))
    for (const auto& [flag, given] : {std::pair{"--chunks", o.chunks > 0}, {"--reduce-Bps", o.reduce_Bps_given}})
      if (given)
        throw InputError(flag, "",
                         "does not apply: " + o.topology + " is priced by NCCL's model, which has its own (use " +
                             "--fidelity flow to run the schedule)");
  // The flow fidelity runs the algorithm's schedule: NCCL's protocols are part of its model, not of a schedule.
  if (fidelity == Fidelity::Flow && (spec.protocol != Protocol::Auto || spec.nccl_protocols != 0))
    throw InputError("--proto", "",
                     "does not apply to --fidelity flow, which runs the algorithm's schedule without NCCL's protocols "
                     "(the analytical fidelity prices them)");
  // The host threads' issue time is a term of NCCL's analytical model only: elsewhere the value would be ignored.
  if (o.gpus_per_thread > 1 && (!nccl || fidelity == Fidelity::Flow))
    throw InputError("--gpus-per-thread", "",
                     !nccl ? "applies to NCCL's model: " + o.topology + " names no NCCL library"
                           : std::string("does not apply to --fidelity flow, which runs the algorithm's schedule "
                                         "without NCCL's issue time (the analytical fidelity prices it)"));
  const int p = topology->ranks();
  if (fidelity != Fidelity::Analytical) check_network_size(fidelity, *topology);
  check_supported(spec, p, "--algo");
  const double band_rel = calibration_band_rel(o.topology);
  const std::vector<Bytes> sizes = parse_sizes(o.sizes);
  if (std::none_of(sizes.begin(), sizes.end(),
                   [&](Bytes size) { return reports::nccl_tests_sizing(spec.op, size, p).bytes > 0; }))
    throw InputError("--sizes", "",
                     "no size holds a whole element per rank of " + std::string(to_string(spec.op)) + " over " +
                         std::to_string(p) + " ranks (nccl-tests prints no row for them): give larger sizes");
  reports::CollectivePrediction prediction;
  int stopped_by_signal = 0;
  if (fidelity == Fidelity::Flow) {
    const auto runs = std::count_if(sizes.begin(), sizes.end(), [&](Bytes size_bytes) {
      return reports::nccl_tests_sizing(spec.op, size_bytes, p).bytes > 0;  // as predict_collective leaves sizes out
    });
    FlowRunMonitor monitor(static_cast<std::size_t>(runs));
    prediction = reports::predict_collective(spec, *topology, fidelity, sizes, band_rel, monitor.progress());
    stopped_by_signal = monitor.finish();
  } else {  // a closed form per size: done in microseconds, nothing to show or stop
    prediction = reports::predict_collective(spec, *topology, fidelity, sizes, band_rel);
  }
  const std::vector<reports::CollectiveRow>& rows = prediction.rows;
  const std::string partial_note =
      prediction.complete() ? ""
                            : "partial: " + std::to_string(rows.size()) + " of " + std::to_string(prediction.sizes) +
                                  " sizes (stopped by " + explore::signal_name(stopped_by_signal) + ")";
  const reports::CollectiveTableHeader header{to_string(spec.op).data(),
                                              o.topology,
                                              o.fidelity,
                                              nccl ? library_label(topology->library().version) : "",
                                              o.sizes.find(':') != std::string::npos,
                                              partial_note,
                                              o.gpus_per_thread};
  if (o.format == "commsim")
    reports::print_commsim_table(stdout, header, *topology, rows);
  else
    reports::print_nccl_tests_table(stdout, header, *topology, rows);
  if (!o.json.empty()) write_collective_json(o, spec, p, prediction, header.partial_note);
  return prediction.complete() ? 0 : 128 + stopped_by_signal;
}

// A log that states the NCCL release it ran (its "NCCL version" line, nccl-tests' nccl-library= header; the last one,
// as calibrate reads it) is compared with that release's table and choices, as calibrate prices each log with its own
// release; a --nccl-version that says another release contradicts the log.
void price_as_the_log_states(const CollectiveOptions& o, Topology& topology) {
  note_input_file(o.against);
  if (const std::string why = not_an_input_file(o.against, "log"); !why.empty()) throw InputError(o.against, "", why);
  std::ifstream log(o.against);
  if (!log) throw InputError(o.against, "", "cannot open the log");
  std::string stated;
  for (std::string line; std::getline(log, line);)
    if (std::string release = nccl::release_stated_in(line); !release.empty()) stated = std::move(release);
  if (stated.empty()) return;
  if (!o.nccl_version.empty() && o.nccl_version != stated)
    throw InputError(o.against, "NCCL version",
                     "the log ran NCCL " + stated + ", --nccl-version says " + o.nccl_version + ": give one of them");
  nccl::use_release(topology, stated, o.against, "NCCL version");
}

// --tuning-table --against LOG: the table NCCL printed in LOG, cell by cell against commsim's, and each choice NCCL
// printed there (2.25 and later: algorithm, protocol and channels per size) against commsim's under the same
// --algo / --proto / --channels. Exit 0 when everything matches (cells round to NCCL's printed value), 1 when something
// differs, as diff does.
int compare_with_log(const CollectiveOptions& o, const std::string& algorithms, const std::string& protocols,
                     const nccl::TuningTable& ours, const Topology& topology, const std::string& machine) {
  const std::string& log_file = o.against;
  // Read twice more, line by line (a log of many ranks can be large): the table, then the choices.
  std::ifstream table_text(log_file), choices_text(log_file);
  if (!table_text || !choices_text) throw InputError(log_file, "", "cannot open the log");
  const nccl::TuningTable printed = nccl::read_printed_tuning_table(table_text, log_file);
  // A table cut short (another rank's line inside it ends the read) would match on the cells it has: refuse it.
  if (printed.algorithms.size() < ours.algorithms.size())
    throw InputError(log_file, "",
                     "NCCL's tuning table ends after " + std::to_string(printed.algorithms.size()) + " of the " +
                         std::to_string(ours.algorithms.size()) +
                         " algorithms of its release's table (a line of another rank inside it? give one rank's "
                         "lines; or the release: --nccl-version)");
  const nccl::TuningComparison c = nccl::compare_tuning_tables(printed, ours);
  const nccl::ChoiceComparison choices = nccl::compare_choices(nccl::read_printed_choices(choices_text, log_file),
                                                               topology, algorithms, protocols, o.channels);
  std::printf("# commsim %s  NCCL's tuning table in %s against commsim's (%s)\n", COMMSIM_VERSION, log_file.c_str(),
              machine.c_str());
  if (!c.mismatches.empty())
    std::printf("# %-13s %-24s %18s %18s\n", "collective", "algorithm/protocol", "NCCL lat/bw", "commsim lat/bw");
  for (const nccl::TuningMismatch& m : c.mismatches) {
    char ours_cell[32] = "not in its table";
    if (m.in_commsim)
      std::snprintf(ours_cell, sizeof ours_cell, "%8.1f/%6.1f", m.commsim.latency_us, m.commsim.algbw_GBps);
    std::printf("  %-13s %-24s %8.1f/%6.1f %18s\n", m.collective.c_str(), (m.algorithm + "/" + m.protocol).c_str(),
                m.nccl.latency_us, m.nccl.algbw_GBps, ours_cell);
  }
  std::printf(
      "# %d of %d cells match (latency us and algorithm bandwidth GB/s, each rounding to NCCL's printed value)\n",
      c.cells - static_cast<int>(c.mismatches.size()), c.cells);
  for (const nccl::ChoiceMismatch& m : choices.mismatches)
    std::printf("  %s %llu bytes: NCCL %s/%s on %d channel(s), commsim %s/%s on %d\n", m.nccl.collective.c_str(),
                static_cast<unsigned long long>(m.nccl.bytes), m.nccl.algorithm.c_str(), m.nccl.protocol.c_str(),
                m.nccl.channels, m.algorithm.c_str(), m.protocol.c_str(), m.channels);
  std::printf("# %d of %d choices NCCL printed match commsim's (algorithm, protocol and channels per size)\n",
              choices.compared - static_cast<int>(choices.mismatches.size()), choices.compared);
  return c.mismatches.empty() && choices.mismatches.empty() ? 0 : 1;
}

// --tuning-table: NCCL's latency and bandwidth of every collective, algorithm and protocol on the topology, in the
// layout NCCL prints at init, so a user can set it beside their own NCCL_DEBUG_SUBSYS=TUNING output. `--algo` and
// `--proto`, when given, are NCCL_ALGO and NCCL_PROTO (a single name enables only that one).
int print_tuning_table(const CollectiveOptions& o, bool algo_given, bool proto_given) {
  auto topology = collective_topology(o);
  if (topology->library().kind != LibraryKind::Nccl)
    throw InputError("--tuning-table", "", "the tuning table is NCCL's: " + o.topology + " names no NCCL library");
  if (!o.nccl_version.empty()) nccl::use_release(*topology, o.nccl_version, "--nccl-version", "");
  if (!o.against.empty()) price_as_the_log_states(o, *topology);
  const std::string algorithms = algo_given && o.algo != "auto" ? o.algo : "";
  const std::string protocols = proto_given && o.proto != "auto" ? o.proto : "";
  const nccl::TuningTable table = nccl::tuning_table(*topology, algorithms, protocols, o.channels);
  const std::string machine = topology->name() + ": " + std::to_string(topology->nodes()) + " node(s) x " +
                              std::to_string(topology->ranks_per_node()) + " rank(s), " +
                              library_label(topology->library().version) + ", " + std::to_string(table.channels) +
                              " channels";
  if (!o.against.empty()) return compare_with_log(o, algorithms, protocols, table, *topology, machine);
  std::printf("# commsim %s  NCCL tuning table (latency us / algorithm bandwidth GB/s, as NCCL_DEBUG_SUBSYS=TUNING)\n",
              COMMSIM_VERSION);
  std::printf("# %s\n", machine.c_str());
  std::fputs(nccl::format_tuning_table(table).c_str(), stdout);
  return 0;
}

}  // namespace

void register_collective(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<CollectiveOptions>();
  CLI::App* cmd = app.add_subcommand("collective", "Predict one collective over a size sweep (nccl-tests style table)");
  cmd->add_option("--topology", o->topology, "topology JSON file")->required();
  cmd->add_option("--nodes", o->nodes, "number of nodes (overrides the file)")->check(number_in(1, kMaxNodes));
  cmd->add_option("--op", o->op, "allreduce | reducescatter | allgather | broadcast | reduce");
  cmd->add_option("--algo", o->algo,
                  algorithm_names(" | ") +
                      "; on NCCL topologies also a list in NCCL_ALGO's syntax (ring,tree  ^nvls  "
                      "ring;allreduce:tree). Default: NCCL's own choice (auto) on NCCL topologies, ring elsewhere");
  cmd->add_option("--proto", o->proto,
                  "ll | ll128 | simple | auto, or a list in NCCL_PROTO's syntax (simple,ll128  ^ll): NCCL's protocol, "
                  "NCCL topologies only");
  cmd->add_option("--sizes", o->sizes, "MIN:MAX doubling range or a comma list, bytes with K/M/G suffixes");
  cmd->add_option("--fidelity", o->fidelity, "analytical | flow");
  cmd->add_option("--channels", o->channels,
                  "independent rings/trees (NCCL channels: NCCL_MIN/MAX_NCHANNELS); 0 = the library's own count, one "
                  "per NIC of a node otherwise")
      ->check(number_in(0, kMaxChannels));
  cmd->add_option("--chunks", o->chunks,
                  "pipeline pieces per step (0 = algorithm default); per size at most as many as keep a piece of a "
                  "ring's share (bytes / (channels x ranks)) at 4 KiB or more (NCCL's smallest chunk)")
      ->check(number_in(0, kMaxChunks));
  cmd->add_option(
         "--groups", o->hierarchy_groups,
         "hierarchical: number of groups = leaders (Paddle's hierarchical_allreduce_inter_nranks is ranks / groups)")
      ->check(number_in(0));
  cmd->add_option("--reduce-Bps", o->reduce_Bps, "local reduction rate gamma in bytes/s (0 = free)")
      ->check(number_in(0));
  cmd->add_option("--gpus-per-thread", o->gpus_per_thread,
                  "NCCL model: GPUs whose kernels one host thread issues per operation (nccl-tests -g, default 1); an "
                  "operation takes at least that many times the fitted per-GPU issue time")
      ->check(number_in(1, 1024));
  cmd->add_option("--format", o->format,
                  "nccl-tests (default: all_reduce_perf's columns, commsim's choices in '#' lines) | commsim (one wide "
                  "table with algorithm, protocol, channels and band)")
      ->check(CLI::IsMember({"nccl-tests", "commsim"}));
  cmd->add_option("--nccl-version", o->nccl_version,
                  "NCCL release to price with (e.g. 2.26.2), in place of the topology's library.version; NCCL "
                  "topologies only")
      ->check(nccl_release());
  cmd->add_option("--json", o->json, "write the rows as JSON")->check(writable_file());
  cmd->add_flag("--tuning-table", o->tuning_table,
                "print NCCL's tuning table for the topology instead (every collective, algorithm and protocol: "
                "latency / algorithm bandwidth, NCCL's layout); --algo / --proto act as NCCL_ALGO / NCCL_PROTO");
  cmd->add_option("--against", o->against,
                  "with --tuning-table: compare with the table NCCL printed in this log (NCCL_DEBUG=INFO "
                  "NCCL_DEBUG_SUBSYS=TUNING), cell by cell, and with the choices it printed per size; exit 1 when "
                  "anything differs");
  cmd->callback([o, cmd, &exit_code] {
    try {
      if (!o->tuning_table && cmd->count("--against") > 0)
        throw InputError("--against", "", "compares NCCL's printed tuning table: it needs --tuning-table");
      if (cmd->count("--against") > 0 && o->against.empty()) throw InputError("--against", "", "names no log");
      o->algo_given = cmd->count("--algo") > 0;
      if (o->tuning_table) {
        for (const char* unused : {"--op", "--sizes", "--fidelity", "--chunks", "--groups", "--reduce-Bps",
                                   "--gpus-per-thread", "--format", "--json"})
          if (cmd->count(unused) > 0)
            throw InputError("--tuning-table", "",
                             std::string(unused) + " does not apply: the table is NCCL's model of every collective");
        exit_code = print_tuning_table(*o, o->algo_given, cmd->count("--proto") > 0);
        return;
      }
      o->reduce_Bps_given = cmd->count("--reduce-Bps") > 0;
      exit_code = run_collective(*o);
    } catch (const TimeRangeError& e) {  // a rate of the topology is out of proportion to the sizes asked for
      throw InputError(o->topology, e.quantity(), e.detail());
    }
  });
}

}  // namespace commsim::cli
