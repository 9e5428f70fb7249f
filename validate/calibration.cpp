#include "validate/calibration.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "sim/core/host.hpp"
#include "sim/core/json_fields.hpp"
#include "sim/core/limits.hpp"
#include "sim/core/statistics.hpp"

namespace commsim::validate {
namespace {

std::string fmt(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

Json line_json(const LineFit& f) {
  return {{"alpha_s", f.alpha_s},
          {"beta_Bps", f.beta_Bps},
          {"alpha_se_s", f.alpha_se_s},
          {"inv_beta_se_s_per_B", f.inv_beta_se_s_per_B},
          {"samples", f.samples},
          {"min_bytes", f.min_bytes},
          {"max_bytes", f.max_bytes},
          {"rms_rel_residual", f.rms_rel},
          {"max_abs_rel_residual", f.max_abs_rel}};
}

// Reads the ping-pong samples of one bench entry: one-way time = round trip / 2.
std::vector<Sample> read_samples(const Json& entry, const std::string& file, const std::string& at) {
  JsonFields f(entry, file, at);
  const Json& samples = f.array("samples");
  std::vector<Sample> out;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    JsonFields s(samples[i], file, at + ".samples[" + std::to_string(i) + "]");
    const double bytes = s.positive("bytes");
    const double round_trip_s = s.positive("seconds_per_repetition");
    out.push_back({bytes, round_trip_s / 2});
  }
  std::stable_sort(out.begin(), out.end(), [](const Sample& a, const Sample& b) { return a.bytes < b.bytes; });
  return out;
}

// The fit's own consistency: does the data follow alpha + bytes/beta per regime? The single line the topology
// keeps is reported beside it, not judged: where the data has regimes (MPI protocols, tc's token bucket) no one
// line follows all of them, and that is the simulator's limit, not the measurement's.
std::string judge_fit(const PiecewiseFit& fit, std::size_t samples, const TrustLimits& limits) {
  if (samples < limits.min_samples)
    return std::to_string(samples) + " sizes, need at least " + std::to_string(limits.min_samples);
  for (const LineFit& s : fit.segments)
    if (!s.valid) return "sizes " + fmt("%.0f", s.min_bytes) + "-" + fmt("%.0f", s.max_bytes) + " B: " + s.why_invalid;
  if (fit.r2 < limits.min_r2)
    return "R^2 = " + fmt("%.3f", fit.r2) + " < " + fmt("%.2f", limits.min_r2) +
           " (the times do not follow alpha + bytes/beta; noisy or overloaded host?)";
  if (fit.rms_rel > limits.max_rms_rel)
    return "RMS relative residual " + fmt("%.1f", 100 * fit.rms_rel) + " % > " + fmt("%.0f", 100 * limits.max_rms_rel) +
           " % (noisy or overloaded host?)";
  if (fit.max_abs_rel > limits.max_abs_rel)
    return "largest relative residual " + fmt("%.1f", 100 * fit.max_abs_rel) + " % > " +
           fmt("%.0f", 100 * limits.max_abs_rel) + " %";
  return "";
}

void line_statistics(ClassCalibration& c) {
  std::vector<double> predicted;
  for (const Sample& s : c.samples) predicted.push_back(c.alpha_s + s.bytes / c.beta_Bps);
  c.line_rel_residuals = relative_residuals(c.samples, predicted);
  double sse = 0;
  c.line_max_abs_rel = 0;
  for (double r : c.line_rel_residuals) {
    sse += r * r;
    c.line_max_abs_rel = std::max(c.line_max_abs_rel, std::abs(r));
  }
  c.line_rms_rel = std::sqrt(sse / static_cast<double>(c.samples.size()));
  c.line_r2 = r_squared(c.samples, predicted);
}

Json samples_json(const std::vector<Sample>& samples, const std::vector<double>& piecewise,
                  const std::vector<double>& line) {
  Json out = Json::array();
  for (std::size_t i = 0; i < samples.size(); ++i) {
    Json s = {{"bytes", samples[i].bytes},
              {"seconds", samples[i].seconds},
              {"piecewise_rel_residual", i < piecewise.size() ? piecewise[i] : 0.0}};
    if (!line.empty()) s["line_rel_residual"] = line[i];
    out.push_back(s);
  }
  return out;
}

Json piecewise_json(const PiecewiseFit& f) {
  Json segments = Json::array();
  for (const LineFit& s : f.segments) segments.push_back(line_json(s));
  return {{"segments", segments},
          {"breakpoints_bytes", f.breakpoints_bytes},
          {"r2", f.r2},
          {"rms_rel_residual", f.rms_rel},
          {"max_abs_rel_residual", f.max_abs_rel}};
}

// The allreduce sweep fitted with the ring's closed form (CollectiveFit).
CollectiveFit fit_collective(const Json& bench, const std::string& bench_file,
                             const std::vector<ClassCalibration>& classes, double reduce_Bps, const TrustLimits& limits,
                             const PiecewiseOptions& options) {
  CollectiveFit c;
  if (!bench.contains("allreduce") || !bench["allreduce"].is_object()) return c;
  const Json& ar = bench["allreduce"];
  JsonFields a(ar, bench_file, "allreduce");
  if (a.string_or("impl", "") != "schedule") {
    c.why_not = "the allreduce sweep ran Open MPI's own MPI_Allreduce (--impl native), not the simulator's ring";
    return c;
  }
  const Json& samples = a.array("samples");
  double relative_variance_sum = 0;
  int sizes_with_runs = 0;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    JsonFields s(samples[i], bench_file, "allreduce.samples[" + std::to_string(i) + "]");
    c.samples.push_back({s.positive("bytes"), s.positive("seconds_per_repetition")});
    // merge_bench_runs keeps every run's time beside the median: their sample variance, relative to the median
    if (const Json* runs = s.raw_optional("runs_seconds_per_repetition"); runs && runs->size() >= 2) {
      const std::vector<double> t = runs->get<std::vector<double>>();
      const double mean = std::accumulate(t.begin(), t.end(), 0.0) / static_cast<double>(t.size());
      double squares = 0;
      for (double x : t) squares += (x - mean) * (x - mean);
      relative_variance_sum +=
          squares / static_cast<double>(t.size() - 1) / (c.samples.back().seconds * c.samples.back().seconds);
      ++sizes_with_runs;
    }
  }
  if (sizes_with_runs > 0) c.run_spread_rel = std::sqrt(relative_variance_sum / sizes_with_runs);
  c.ranks = bench.value("ranks", 0);
  if (c.samples.empty() || c.ranks < 2) return c;
  c.present = true;
  double slowest = 0;
  for (const ClassCalibration& cl : classes)
    if (cl.beta_Bps > 0 && (c.bottleneck_class.empty() || cl.beta_Bps < slowest))
      c.bottleneck_class = cl.link_class, slowest = cl.beta_Bps;
  std::stable_sort(c.samples.begin(), c.samples.end(),
                   [](const Sample& x, const Sample& y) { return x.bytes < y.bytes; });
  c.fit = fit_piecewise(c.samples, options);
  const double p = c.ranks;
  c.why_not = judge_fit(c.fit, c.samples.size(), limits);
  if (c.why_not.empty()) {
    c.alpha_step_s = c.fit.segments.front().alpha_s / (2 * (p - 1));
    const double per_byte = 1 / c.fit.segments.back().beta_Bps - (reduce_Bps > 0 ? (p - 1) / (p * reduce_Bps) : 0);
    if (per_byte > 0)
      c.beta_Bps = 2 * (p - 1) / p / per_byte;
    else
      c.why_not = "the large-size allreduce time is below the reduction time alone";
  }
  c.band_rel = std::min(0.9, 2 * std::hypot(c.fit.rms_rel, c.run_spread_rel));
  c.trusted = c.why_not.empty();
  if (!c.trusted) c.why_not = "collective fit: " + c.why_not;
  return c;
}

}  // namespace

bool Calibration::trusted() const {
  return std::all_of(classes.begin(), classes.end(), [](const ClassCalibration& c) { return c.trusted; });
}

namespace {

Json merge_checked_runs(const std::vector<Json>& runs, const std::vector<std::string>& files) {
  Json merged = runs[0];
  auto check_same = [&](std::size_t r, const std::string& field, const Json& a, const Json& b) {
    if (a != b)
      throw InputError(files[r], field,
                       "differs from " + files[0] + " (" + a.dump() + " vs " + b.dump() + "): not runs of one bench");
  };
  // How many entries an array of a run has (-1: not an array), so that runs of different sweeps are named, not
  // indexed past their end.
  auto count = [](const Json& run, const Json::json_pointer& at) {
    return run.contains(at) && run.at(at).is_array() ? static_cast<std::int64_t>(run.at(at).size()) : -1;
  };
  for (std::size_t r = 1; r < runs.size(); ++r) {
    check_same(r, "ranks", runs[0].value("ranks", Json()), runs[r].value("ranks", Json()));
    check_same(r, "topology", runs[0].value("topology", Json()), runs[r].value("topology", Json()));
    std::vector<std::pair<std::string, std::string>> arrays = {
        // (JSON pointer, field)
        {"/pingpong", "pingpong"},
        {"/allreduce/samples", "allreduce.samples"},
        {"/allreduce_concurrent/samples", "allreduce_concurrent.samples"}};
    for (std::int64_t i = 0; i < count(runs[0], Json::json_pointer("/pingpong")); ++i)
      arrays.emplace_back("/pingpong/" + std::to_string(i) + "/samples", "pingpong[" + std::to_string(i) + "].samples");
    for (const auto& [at, field] : arrays)
      check_same(r, field + " (entries)", count(runs[0], Json::json_pointer(at)),
                 count(runs[r], Json::json_pointer(at)));
  }
  // Per (class, size) and per allreduce size: the median over the runs.
  for (std::size_t i = 0; i < merged["pingpong"].size(); ++i) {
    Json& samples = merged["pingpong"][i]["samples"];
    for (std::size_t k = 0; k < samples.size(); ++k) {
      std::vector<double> t;
      for (std::size_t r = 0; r < runs.size(); ++r) {
        const Json& other = runs[r].at("pingpong").at(i);
        check_same(r, "pingpong[" + std::to_string(i) + "].link_class", merged["pingpong"][i]["link_class"],
                   other.at("link_class"));
        const Json& s = other.at("samples").at(k);
        check_same(r, "pingpong[" + std::to_string(i) + "].samples[" + std::to_string(k) + "].bytes",
                   samples[k]["bytes"], s.at("bytes"));
        t.push_back(s.at("seconds_per_repetition").get<double>());
      }
      samples[k]["seconds_per_repetition"] = *std::min_element(t.begin(), t.end());
      samples[k]["runs_seconds_per_repetition"] = t;
    }
  }
  for (const std::string sweep : {"allreduce", "allreduce_concurrent"}) {
    if (!merged.contains(sweep)) continue;
    Json& samples = merged[sweep]["samples"];
    for (std::size_t k = 0; k < samples.size(); ++k) {
      std::vector<double> t;
      for (std::size_t r = 0; r < runs.size(); ++r) {
        if (!runs[r].contains(sweep))
          throw InputError(files[r], sweep, "missing, but " + files[0] + " has it: not runs of one bench");
        const Json& s = runs[r].at(sweep).at("samples").at(k);
        check_same(r, sweep + ".samples[" + std::to_string(k) + "].bytes", samples[k]["bytes"], s.at("bytes"));
        t.push_back(s.at("seconds_per_repetition").get<double>());
      }
      samples[k]["seconds_per_repetition"] = median(t);
      samples[k]["runs_seconds_per_repetition"] = t;
    }
  }
  for (const auto& [block, rate] : {std::pair{"reduction", "reduce_Bps"}, std::pair{"dgc", "dgc_Bps"}}) {
    if (!merged.contains(block)) continue;
    std::vector<double> g;
    for (std::size_t r = 0; r < runs.size(); ++r) {
      const Json& run = runs[r];
      if (!run.contains(block) || !run[block].contains(rate) || !run[block][rate].is_number())
        throw InputError(files[r], std::string(block) + "." + rate,
                         "missing, but " + files[0] + " has it: not runs of one bench");
      g.push_back(run[block][rate].get<double>());
    }
    merged[block][rate] = median(g);
  }
  merged["merged_from"] = files;
  merged["merge"] =
      "ping-pong: the fastest run per class and size (what the link can do, without interference); allreduce (one "
      "stream and concurrent): the median run per size (what a collective costs on this host as it is); reduction and "
      "DGC rates: the median";
  return merged;
}

}  // namespace

Json merge_bench_runs(const std::vector<Json>& runs, const std::vector<std::string>& files) {
  if (runs.empty()) throw InputError("merge_bench_runs", "", "no runs");
  if (runs.size() == 1) return runs[0];
  try {
    return merge_checked_runs(runs, files);
  } catch (const Json::exception& e) {  // a field of one sample missing or mistyped: the calibration reads each later
    std::string names;
    for (const std::string& f : files) names += (names.empty() ? "" : ", ") + f;
    throw InputError(files[0], "", "the bench runs " + names + " cannot be merged: " + e.what());
  }
}

namespace {

// One ping-pong class of the bench: its samples, piecewise fit, verdict and the line the topology keeps.
ClassCalibration fit_class(const Json& ping, const std::string& at, const Json& topology,
                           const std::string& topology_file, const std::string& bench_file,
                           const std::vector<ClassCalibration>& done, const TrustLimits& limits,
                           const PiecewiseOptions& options) {
  JsonFields p(ping, bench_file, at);
  ClassCalibration c;
  c.link_class = p.string("link_class");
  if (!topology["link_classes"].contains(c.link_class))
    p.fail("link_class", "class \"" + c.link_class + "\" is not in " + topology_file + "'s link_classes");
  for (const auto& cl : done)
    if (cl.link_class == c.link_class) p.fail("link_class", "class \"" + c.link_class + "\" measured twice");
  if (const Json* r = p.raw_optional("ranks"); r && r->is_array())
    for (const Json& x : *r)
      if (x.is_number_integer()) c.ranks.push_back(x.get<int>());
  c.samples = read_samples(ping, bench_file, at);
  c.fit = fit_piecewise(c.samples, options);
  c.why_not = judge_fit(c.fit, c.samples.size(), limits);
  c.trusted = c.why_not.empty();
  if (!c.trusted) c.why_not = "link class " + c.link_class + ": " + c.why_not;
  if (c.fit.segments.front().valid && c.fit.segments.back().valid) {
    c.alpha_s = c.fit.segments.front().alpha_s;
    c.beta_Bps = c.fit.segments.back().beta_Bps;
    line_statistics(c);
  }
  c.band_rel = std::min(0.9, 2 * c.fit.rms_rel);
  return c;
}

// Every class's latency is at least a collective step's; the bottleneck class takes the collective's beta.
void apply_collective(Calibration& cal) {
  for (ClassCalibration& c : cal.classes) {
    c.alpha_s = std::max(c.alpha_s, cal.collective.alpha_step_s);
    if (c.link_class == cal.collective.bottleneck_class) {
      c.beta_Bps = cal.collective.beta_Bps;
      c.band_rel = cal.collective.band_rel;
    }
    if (c.beta_Bps > 0) line_statistics(c);
  }
}

Provenance provenance_of(const Json& bench, const std::string& bench_file, const Json& topology,
                         const std::string& topology_file) {
  Provenance pv;
  pv.host = bench.value("host", "unknown");
  pv.commsim_version = bench.value("commsim_version", "unknown");
  pv.backend = bench.value("backend", "mpi");
  pv.network = bench.value("network", "unknown");
  pv.cluster = pv.network.rfind("emulated cluster", 0) == 0;  // the bench report's words (hw/mpi/bench.cpp)
  pv.date = utc_timestamp();
  pv.bench_file = bench_file;
  pv.topology_file = topology_file;
  pv.topology_name = topology.value("name", "");
  return pv;
}

// The calibrated class's latency and rate. The datasheet rate is kept (the emulated cluster shapes NICs from it)
// and the efficiency fitted, unless the measurement beats the datasheet: then the measured rate becomes the
// bandwidth at efficiency 1.
void set_class_line(Json& lc, const ClassCalibration& c, double datasheet_Bps) {
  if (c.beta_Bps <= 0) return;
  lc["latency_s"] = c.alpha_s;
  if (datasheet_Bps > 0 && c.beta_Bps <= datasheet_Bps) {
    lc["efficiency"] = c.beta_Bps / datasheet_Bps;
  } else {
    lc["bandwidth_Bps"] = c.beta_Bps;
    lc["efficiency"] = 1.0;
  }
}

// The calibrated class's "source": what was fitted from what, and the values before.
std::string class_source(const ClassCalibration& c, const Calibration& cal, const Json& before) {
  const Provenance& pv = cal.provenance;
  std::string regimes;
  for (std::size_t k = 0; k < c.fit.breakpoints_bytes.size(); ++k)
    regimes += (k ? ", " : "") + fmt("%.0f", c.fit.breakpoints_bytes[k]) + " B";
  const bool from_collective = cal.collective_used;
  const bool bottleneck = from_collective && c.link_class == cal.collective.bottleneck_class;
  return "fitted by commsim calibrate on " + pv.host + " at " + pv.date + " from " + std::to_string(c.samples.size()) +
         " ping-pong sizes (" + fmt("%.0f", c.samples.front().bytes) + "-" + fmt("%.0f", c.samples.back().bytes) +
         " B, one-way = round trip / 2), R^2 = " + fmt("%.4f", c.fit.r2) + ", max residual " +
         fmt("%.1f", 100 * c.fit.max_abs_rel) + " %" + (regimes.empty() ? "" : ", regimes break at " + regimes) +
         (from_collective
              ? "; latency raised to the collective step latency " + fmt("%.3g", cal.collective.alpha_step_s) +
                    " s from " + std::to_string(cal.collective.samples.size()) +
                    " allreduce sizes (R^2 = " + fmt("%.4f", cal.collective.fit.r2) + ")"
              : "") +
         (bottleneck ? "; beta from the allreduce sweep (" + fmt("%.4g", cal.collective.beta_Bps) + " B/s)" : "") +
         "; before: latency_s " + fmt("%.3g", before.value("latency_s", 0.0)) + ", bandwidth_Bps " +
         fmt("%.4g", before.value("bandwidth_Bps", 0.0)) + ", efficiency " +
         fmt("%.3g", before.value("efficiency", 1.0)) + " [calibration]";
}

Json class_evidence(const ClassCalibration& c) {
  return {{"ranks", c.ranks},
          {"trusted", c.trusted},
          {"why_not", c.why_not},
          {"topology_line",
           {{"alpha_s", c.alpha_s},
            {"beta_Bps", c.beta_Bps},
            {"r2_vs_pingpong", c.line_r2},
            {"rms_rel_residual_vs_pingpong", c.line_rms_rel},
            {"max_abs_rel_residual_vs_pingpong", c.line_max_abs_rel}}},
          {"pingpong_fit", piecewise_json(c.fit)},
          {"band_rel", c.band_rel},
          {"samples", samples_json(c.samples, c.fit.rel_residuals, c.line_rel_residuals)}};
}

Json collective_evidence(const Calibration& cal) {
  const CollectiveFit& cf = cal.collective;
  Json collective = {
      {"present", cf.present}, {"used", cal.collective_used}, {"trusted", cf.trusted}, {"why_not", cf.why_not}};
  if (cf.present)
    collective.update(
        {{"ranks", cf.ranks},
         {"bottleneck_class", cf.bottleneck_class},
         {"alpha_step_s", cf.alpha_step_s},
         {"beta_Bps", cf.beta_Bps},
         {"run_spread_rel", cf.run_spread_rel},
         {"band_rel", cf.band_rel},
         {"fit", piecewise_json(cf.fit)},
         {"samples", samples_json(cf.samples, cf.fit.rel_residuals, {})},
         {"model", "ring allreduce of S bytes on p ranks: t = 2(p-1) alpha + 2(p-1)/p S / beta + (p-1)/p S / gamma"}});
  return collective;
}

constexpr const char* kCalibrationWhat =
    "commsim calibrate: per link class, alpha and beta fitted by weighted least squares (weights 1/t^2: relative "
    "residuals) to the ping-pong one-way times, piecewise where the data shows regimes; the topology keeps one line "
    "per class: alpha of the smallest-size regime, beta of the largest. Model 'collective' then raises every "
    "class's "
    "latency to the latency of one ring step measured by the allreduce sweep (all ranks busy) and gives the "
    "bottleneck class the sweep's beta (docs/calibration.md)";

// sources.calibration: how, from what, the evidence per class and of the collective fit.
Json calibration_evidence(const Calibration& cal, const Json& classes, const Json& bench, const TrustLimits& limits) {
  const Provenance& pv = cal.provenance;
  return {
      {"what", kCalibrationWhat},
      {"model", cal.model == CalibrationModel::Collective ? "collective" : "links"},
      {"topology", {{"name", pv.topology_name}, {"file", pv.topology_file}}},
      {"provenance",
       {{"host", pv.host},
        {"date", pv.date},
        {"commsim_version", pv.commsim_version},
        {"calibrated_by", std::string("commsim ") + COMMSIM_VERSION},
        {"backend", pv.backend},
        {"network", pv.network},
        {"cluster", pv.cluster},
        {"bench_file", pv.bench_file},
        {"bench_runs", bench.value("merged_from", Json::array({pv.bench_file}))},
        {"bench_ranks", bench.value("ranks", 0)}}},
      {"limits",
       {{"min_r2", limits.min_r2},
        {"max_rms_rel_residual", limits.max_rms_rel},
        {"max_abs_rel_residual", limits.max_abs_rel}}},
      {"link_classes", classes},
      {"collective", collective_evidence(cal)},
      {"reduction",
       {{"reduce_Bps", cal.reduce_Bps},
        {"use",
         "validation sets the scenario device's memory_Bps to 3 x reduce_Bps (the simulator reduces at "
         "memory_Bps / 3: two reads and a write)"}}},
      {"dgc",
       {{"dgc_Bps", cal.dgc_Bps},
        {"use", "validation sets the scenario device's dgc_Bps to it (0: not measured, DGC priced as memory passes)"}}},
      {"trusted", cal.trusted()}};
}

// A trusted two-stream fit goes to the library block (an MPI bench's topology names "mpi", or none: then it is added).
void set_concurrent_step_delay(Json& out, const Calibration& cal) {
  out["sources"]["calibration"]["concurrent"] = concurrent_evidence(cal.concurrent);
  if (!cal.concurrent.trusted) return;
  if (!out.contains("library"))
    out["library"] = {{"name", "mpi"}, {"source", "the MPI backend (Open MPI) that ran the bench [calibration]"}};
  out["library"]["concurrent_step_delay_us"] = cal.concurrent.step_delay_s * 1e6;
}

// The calibrated topology: the input with the fitted classes replaced and the evidence under sources.calibration.
Json calibrated_topology(const Json& topology, const Calibration& cal, const Json& bench, const TrustLimits& limits) {
  const Provenance& pv = cal.provenance;
  Json out = topology;
  out["name"] = pv.topology_name + "-calibrated";
  out["description"] = topology.value("description", "") + " -- link classes calibrated by commsim calibrate (" +
                       pv.backend + ", " + pv.network + ")";
  Json classes = Json::object();
  for (const ClassCalibration& c : cal.classes) {
    const Json& before = topology["link_classes"][c.link_class];
    Json& lc = out["link_classes"][c.link_class];
    set_class_line(lc, c, before.value("bandwidth_Bps", 0.0));
    lc["source"] = class_source(c, cal, before);
    classes[c.link_class] = class_evidence(c);
  }
  if (!out.contains("sources") || !out["sources"].is_object()) out["sources"] = Json::object();
  out["sources"]["calibration"] = calibration_evidence(cal, classes, bench, limits);
  set_concurrent_step_delay(out, cal);
  return out;
}

}  // namespace

Calibration calibrate(const Json& topology, const std::string& topology_file, const Json& bench,
                      const std::string& bench_file, CalibrationModel model, const TrustLimits& limits,
                      const PiecewiseOptions& options) {
  Calibration cal;
  cal.model = model;
  if (!topology.is_object() || !topology.contains("link_classes") || !topology["link_classes"].is_object())
    throw InputError(topology_file, "link_classes",
                     "missing: calibration needs a topology with link_classes (not an astra_sim one)");
  JsonFields b(bench, bench_file, "");
  // Checked before anything reads them: a mistyped field is bad input naming it (not a JSON library exception), and
  // ranks past int's range would wrap (2^33 + 8 read as 8); a bench runs on at least 2 ranks.
  b.integer_or("ranks", 0, 2, kMaxRanks);
  for (const char* key : {"host", "commsim_version", "backend", "network"}) b.string_or(key, "");
  const Json& pings = b.array("pingpong");
  if (pings.empty()) throw InputError(bench_file, "pingpong", "no ping-pong measurements");
  for (std::size_t i = 0; i < pings.size(); ++i)
    cal.classes.push_back(fit_class(pings[i], "pingpong[" + std::to_string(i) + "]", topology, topology_file,
                                    bench_file, cal.classes, limits, options));
  if (const Json* red = b.raw_optional("reduction")) {
    JsonFields r(*red, bench_file, "reduction");
    cal.reduce_Bps = r.positive("reduce_Bps");
  }
  if (const Json* dgc = b.raw_optional("dgc")) {
    JsonFields d(*dgc, bench_file, "dgc");
    cal.dgc_Bps = d.positive("dgc_Bps");
  }
  cal.collective = fit_collective(bench, bench_file, cal.classes, cal.reduce_Bps, kCollectiveLimits, options);
  cal.collective_used = model == CalibrationModel::Collective && cal.collective.trusted;
  if (cal.collective_used) apply_collective(cal);
  cal.concurrent = fit_concurrent(bench, bench_file, cal.collective, cal.collective_used, cal.reduce_Bps);
  const bool other_library = topology.contains("library") &&
                             !(topology["library"].is_object() && topology["library"].value("name", "") == "mpi");
  if (cal.concurrent.trusted && other_library) {
    cal.concurrent.trusted = false;  // the field is an mpi library's
    cal.concurrent.why_not = "the topology's library is not mpi: its collectives are priced by its own model";
  }
  cal.provenance = provenance_of(bench, bench_file, topology, topology_file);
  cal.calibrated_topology = calibrated_topology(topology, cal, bench, limits);
  return cal;
}

}  // namespace commsim::validate
