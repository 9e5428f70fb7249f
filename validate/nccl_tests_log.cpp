#include "validate/nccl_tests_log.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "reports/collective_table.hpp"
#include "sim/collective/nccl_printed_table.hpp"
#include "sim/core/error.hpp"
#include "sim/core/json_fields.hpp"
#include "sim/core/output_file.hpp"
#include "sim/core/text.hpp"
#include "validate/fit.hpp"

namespace commsim::validate {
namespace {

// "NCCL INFO NCCL_ALGO set by environment to Ring": the value after "to", lower-cased.
bool environment_value(const std::string& line, const std::string& variable, std::string& value) {
  const std::string marker = variable + " set by environment to ";
  const std::size_t at = line.find(marker);
  if (at == std::string::npos) return false;
  std::istringstream rest(line.substr(at + marker.size()));
  rest >> value;
  value = lowercase(value);
  return !value.empty();
}

// Keeps NCCL_ALGO / NCCL_PROTO's value after checking it as NCCL parses it (what it enables depends on the
// collective, which a text log learns from --op later: fitting applies it, nccl::enabled_by_list).
void keep_nccl_setting(const std::string& name, const std::string& value, NcclTestsLog& log, const std::string& file,
                       const std::string& field) {
  if (name != "NCCL_ALGO" && name != "NCCL_PROTO") return;
  const bool protocols = name == "NCCL_PROTO";
  nccl::parse_nccl_list(value, Collective::AllReduce, protocols, file, field);
  (protocols ? log.nccl_proto : log.nccl_algo) = value;
}

double parse_time(const std::string& token, const std::string& file, int line) {
  try {
    std::size_t used = 0;
    const double v = std::stod(token, &used);
    if (used == token.size() && std::isfinite(v) && v > 0) return v;
  } catch (const std::exception&) {
  }
  throw InputError(file, "line " + std::to_string(line), "\"" + token + "\" is not a positive time in microseconds");
}

// A row's size or count, digits only: one beyond 64 bits is no size nccl-tests printed.
std::uint64_t printed_number(const std::string& digits, const char* what, const std::string& file,
                             const std::string& at) {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size())
    throw InputError(file, at, std::string(what) + " " + digits + " is beyond 2^64");
  return value;
}

constexpr const char* kCorruptResult =
    ": nccl-tests found wrong elements in the result (corrupt data), so its time is no measurement to fit";

// A row's #wrong column: nccl-tests prints the wrong elements its check found ("%6g", so 0, 12 or 1.2e+06), or N/A
// when it checked nothing (-c 0; commsim's predictions print N/A too). Any wrong element means the collective
// corrupted data, and its time measures a broken run: refused rather than fitted.
void check_wrong_column(const std::string& token, const char* placement, const std::string& file,
                        const std::string& at) {
  if (token == "N/A") return;
  double wrong = -1;
  const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), wrong);
  if (ec != std::errc() || end != token.data() + token.size() || !(wrong >= 0 && std::isfinite(wrong)))
    throw InputError(file, at, std::string(placement) + " #wrong \"" + token + "\" is not a count of wrong elements");
  if (wrong > 0) throw InputError(file, at, std::string(placement) + " #wrong is " + token + kCorruptResult);
}

}  // namespace

namespace {

// nccl-tests' file names of the collectives.
bool parse_nccl_tests_collective(const std::string& name, Collective& op) {
  if (name == "all_reduce")
    op = Collective::AllReduce;
  else if (name == "all_gather")
    op = Collective::AllGather;
  else if (name == "reduce_scatter")
    op = Collective::ReduceScatter;
  else
    return false;
  return true;
}

// The file nccl-tests writes with -J FILE.json (nccl-tests >= 2.17.3, src/util.cu jsonOutputInit /
// writeBenchmarkLineBody / writeResultFooter at commit a0b82b2): "args" (argv, argv[0] names the *_perf binary),
// "env" ("NAME=value" strings), "config" {nthreads, ngpus}, "devices" (one entry per process, with "hostname") and
// "results" [{size, out_of_place: {time | cpu_time, ...} or null, in_place: {...}}].
NcclTestsLog read_nccl_tests_json(const std::string& path, const Json& doc) {
  JsonFields f(doc, path, "");
  NcclTestsLog log;
  log.file = path;
  const Json& args = f.array("args");
  std::string program = args.empty() || !args[0].is_string() ? "" : args[0].get<std::string>();
  program = program.substr(program.find_last_of('/') + 1);
  const std::string suffix = "_perf";
  if (program.size() <= suffix.size() || program.substr(program.size() - suffix.size()) != suffix ||
      !parse_nccl_tests_collective(program.substr(0, program.size() - suffix.size()), log.op))
    f.fail("args[0]", "must name all_reduce_perf, all_gather_perf or reduce_scatter_perf");
  log.op_known = true;
  if (const Json* version = f.raw_optional("nccl_version")) {
    // nccl-tests writes 0 when ncclGetVersion gave nothing: the release is then not stated.
    if (!version->is_number_integer() || version->get<long long>() < 0)
      f.fail("nccl_version", "must be NCCL_VERSION_CODE, an integer >= 0 (e.g. 22602)");
    log.nccl_version = nccl::version_of_code(version->get<long long>());
  }
  for (const Json& entry : f.array("env")) {
    if (!entry.is_string()) f.fail("env", "must be a list of \"NAME=value\" strings");
    const std::string text = entry.get<std::string>();
    const std::size_t eq = text.find('=');
    const std::string name = text.substr(0, eq), value = eq == std::string::npos ? "" : text.substr(eq + 1);
    keep_nccl_setting(name, value, log, path, "env " + name);
  }
  JsonFields config = f.object("config");
  log.gpus_per_thread = static_cast<int>(config.integer("ngpus", 1, 1024));
  const auto gpus_per_process = config.integer("nthreads", 1, 1024) * log.gpus_per_thread;
  std::set<std::string> hosts;
  const Json& devices = f.array("devices");
  for (const Json& d : devices)
    if (d.is_object() && d.contains("hostname") && d["hostname"].is_string())
      hosts.insert(d["hostname"].get<std::string>());
  log.ranks = static_cast<int>(static_cast<std::int64_t>(devices.size()) * gpus_per_process);
  log.hosts = static_cast<int>(hosts.size());
  const Json& results = f.array("results");
  for (std::size_t i = 0; i < results.size(); ++i) {
    const std::string at = "results[" + std::to_string(i) + "]";
    const Json& r = results[i];
    if (!r.is_object() || !r.contains("size") || !r["size"].is_number_unsigned())
      throw InputError(path, at + ".size", "must be a size in bytes");
    const Bytes bytes = r["size"].get<Bytes>();
    if (bytes == 0) continue;
    const char* placement = r.contains("out_of_place") && r["out_of_place"].is_object() ? "out_of_place" : "in_place";
    const Json* body = r.contains(placement) && r[placement].is_object() ? &r[placement] : nullptr;
    const Json* time = body == nullptr              ? nullptr
                       : body->contains("time")     ? &(*body)["time"]
                       : body->contains("cpu_time") ? &(*body)["cpu_time"]
                                                    : nullptr;
    if (time == nullptr || !time->is_number() || !std::isfinite(time->get<double>()) || time->get<double>() <= 0)
      throw InputError(path, at + "." + placement + ".time", "must be a positive time in microseconds");
    log.rows.push_back({bytes, time->get<double>(), static_cast<int>(i)});
    JsonFields row(r, path, at);
    const std::uint64_t count = row.integer("count", 0, std::numeric_limits<std::int64_t>::max());
    log.printed.push_back({bytes, count, row.string("type"), row.string("redop"), at});
    // "nwrong" as the text's #wrong: the count of wrong elements, null when nccl-tests checked nothing.
    for (const char* checked : {"out_of_place", "in_place"}) {
      const Json* wrong = r.contains(checked) && r[checked].is_object() && r[checked].contains("nwrong")
                              ? &r[checked]["nwrong"]
                              : nullptr;
      if (wrong == nullptr || wrong->is_null()) continue;
      const std::string field = at + "." + checked + ".nwrong";
      if (!wrong->is_number() || !(wrong->get<double>() >= 0))
        throw InputError(path, field, "must be a count of wrong elements, or null");
      if (wrong->get<double>() > 0) throw InputError(path, field, "is " + wrong->dump() + kCorruptResult);
    }
  }
  if (log.rows.empty()) f.fail("results", "has no row with a non-zero size");
  return log;
}

NcclTestsLog read_curve(const std::string& path, const Json& doc) {
  JsonFields f(doc, path, "");
  NcclTestsLog log;
  log.file = path;
  const std::string collective = f.string("collective");
  if (!parse_nccl_tests_collective(collective, log.op))
    f.fail("collective", "must be all_reduce, all_gather or reduce_scatter");
  log.op_known = true;
  log.hosts = static_cast<int>(f.integer("nodes", 1, 1 << 20));
  log.ranks = log.hosts * static_cast<int>(f.integer("gpus_per_node", 1, 1024));
  log.gpus_per_thread = static_cast<int>(f.integer_or("gpus_per_thread", 1, 1, 1024));
  if (const Json* version = f.raw_optional("nccl_version"); version != nullptr && !version->is_null()) {
    if (!version->is_string()) f.fail("nccl_version", "must be a release such as \"2.26.2\", or null when not stated");
    log.nccl_version = version->get<std::string>();
  }
  if (f.raw_optional("env") != nullptr) {
    JsonFields env = f.object("env");
    for (const char* name : {"NCCL_ALGO", "NCCL_PROTO"})
      if (env.has(name)) keep_nccl_setting(name, env.string(name), log, path, std::string("env.") + name);
  }
  const Json& rows = f.array("rows");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Json& r = rows[i];
    const std::string at = "rows[" + std::to_string(i) + "]";
    if (!r.contains("bytes") || !r["bytes"].is_number_unsigned())
      throw InputError(path, at + ".bytes", "must be a size in bytes");
    const Bytes bytes = r["bytes"].get<Bytes>();
    double time_us = r.contains("time_us") && r["time_us"].is_number() ? r["time_us"].get<double>() : 0;
    // A curve published as busbw only: the time is the size over algbw = busbw / nccl-tests' factor.
    if (time_us == 0 && r.contains("busbw_GBps") && r["busbw_GBps"].is_number() && r["busbw_GBps"].get<double>() > 0)
      time_us = static_cast<double>(bytes) * busbw_factor(log.op, log.ranks) / (r["busbw_GBps"].get<double>() * 1e3);
    if (bytes == 0 || time_us <= 0) continue;  // nccl-tests' 0-byte rows, and rows rounded to 0 GB/s
    if (!std::isfinite(time_us)) throw InputError(path, at + ".time_us", "must be a positive time in microseconds");
    log.rows.push_back({bytes, time_us, static_cast<int>(i)});
  }
  if (log.rows.empty()) f.fail("rows", "has no row with a size and a time (or busbw)");
  return log;
}

}  // namespace

NcclTestsLog read_nccl_tests_log(const std::string& path) {
  if (path.size() > 5 && path.substr(path.size() - 5) == ".json") {
    const Json doc = read_json_file(path);
    return doc.contains("results") ? read_nccl_tests_json(path, doc) : read_curve(path, doc);
  }
  note_input_file(path);
  if (const std::string why = not_an_input_file(path, "log"); !why.empty()) throw InputError(path, "", why);
  std::ifstream in(path);
  if (!in) throw InputError(path, "", "cannot open file");
  NcclTestsLog log;
  log.file = path;
  std::set<std::string> hosts;
  std::string line;
  // Before nccl-tests 2.x printed #wrong, the column was "error", the largest deviation from the expected result,
  // judged against a tolerance by the "Out of bounds values" line: not a count of wrong elements.
  bool counts_wrong = true;
  for (int number = 1; std::getline(in, line); ++number) {
    std::string value;
    for (const char* name : {"NCCL_ALGO", "NCCL_PROTO"})
      if (environment_value(line, name, value))
        keep_nccl_setting(name, value, log, path, "line " + std::to_string(number) + " " + name);
    std::istringstream words(line);
    std::vector<std::string> t;
    for (std::string w; words >> w;) t.push_back(w);
    if (std::string release = nccl::release_stated_in(t); !release.empty()) {
      log.nccl_version = std::move(release);
      continue;
    }
    // "# nThread 1 nGpus 8 minBytes 8 ...": the header's GPUs per thread.
    if (auto n = std::find(t.begin(), t.end(), "nGpus");
        t.size() >= 3 && t[0] == "#" && n != t.end() && n + 1 != t.end() && is_unsigned(*(n + 1))) {
      const std::string& count = *(n + 1);
      const auto [end, ec] = std::from_chars(count.data(), count.data() + count.size(), log.gpus_per_thread);
      if (ec != std::errc() || end != count.data() + count.size() || log.gpus_per_thread < 1 ||
          log.gpus_per_thread > 1024)
        throw InputError(path, "line " + std::to_string(number), "nGpus must be 1 to 1024");
      continue;
    }
    // "#       size         count      type   redop    root     time   algbw   busbw #wrong ...": the columns.
    if (!t.empty() && t[0] == "#" && std::find(t.begin(), t.end(), "algbw") != t.end()) {
      counts_wrong = std::find(t.begin(), t.end(), "error") == t.end();
      continue;
    }
    // "#  Rank  0 Group  0 Pid 1234 on host device  0 [0x07] NVIDIA A100": one rank, on `host`.
    if (t.size() >= 4 && t[0] == "#" && t[1] == "Rank" && is_unsigned(t[2])) {
      ++log.ranks;
      if (auto on = std::find(t.begin(), t.end(), "on"); on != t.end() && on + 1 != t.end()) hosts.insert(*(on + 1));
      continue;
    }
    // A result row: size count type ... then out-of-place (time algbw busbw #wrong) and in-place (the same four).
    if (t.size() < 7 || !is_unsigned(t[0]) || !is_unsigned(t[1]) || is_unsigned(t[2])) continue;
    const std::string at = "line " + std::to_string(number);
    const Bytes bytes = printed_number(t[0], "size", path, at);
    if (bytes == 0) continue;
    log.printed.push_back({bytes, printed_number(t[1], "count", path, at), t[2], t[3], at});
    const bool both = t.size() >= 11;
    log.rows.push_back({bytes, parse_time(t[t.size() - (both ? 8 : 4)], path, number), number});
    if (counts_wrong && both) check_wrong_column(t[t.size() - 5], "out-of-place", path, at);
    if (counts_wrong) check_wrong_column(t.back(), both ? "in-place" : "the row's", path, at);
  }
  if (log.rows.empty()) throw InputError(path, "", "no nccl-tests result rows (size count type ... time algbw busbw)");
  log.hosts = static_cast<int>(hosts.size());
  return log;
}

namespace {

// Bytes of an element of nccl-tests' printed type names (nccl-tests src/common.cu, test_typenames); 0: not known.
std::uint64_t element_bytes(const std::string& type) {
  if (type == "int8" || type == "uint8" || type == "f8e4m3" || type == "f8e5m2") return 1;
  if (type == "half" || type == "bfloat16") return 2;
  if (type == "int32" || type == "uint32" || type == "float") return 4;
  if (type == "int64" || type == "uint64" || type == "double") return 8;
  return 0;
}

}  // namespace

void check_log_collective(const NcclTestsLog& log, Collective op) {
  if (log.printed.empty()) return;
  const NcclTestsLog::PrintedRow& row = log.printed.front();
  const bool reduces = row.redop != "none";
  const std::uint64_t element = element_bytes(row.type);
  std::uint64_t per = 0;  // the count's divisor of the size in elements: 1 per buffer, ranks per rank
  if (element > 0 && row.count > 0 && row.bytes % (element * row.count) == 0) per = row.bytes / (element * row.count);
  const bool per_rank = log.ranks > 1 && per == static_cast<std::uint64_t>(log.ranks);
  std::string wrong;  // the first reason found
  if (op == Collective::AllGather && reduces) wrong = "reduces (redop " + row.redop + ")";
  if (op != Collective::AllGather && !reduces) wrong = "reduces nothing (redop none)";
  if (wrong.empty() && op == Collective::AllReduce && per_rank) wrong = "counts elements per rank";
  if (wrong.empty() && op != Collective::AllReduce && log.ranks > 1 && per == 1)
    wrong = "counts the whole buffer's elements";
  if (!wrong.empty())
    throw InputError(log.file, row.at,
                     "this row " + wrong + ", so it is not " + std::string(to_string(op)) +
                         "'s (nccl-tests prints redop none for all_gather, a reduction for all_reduce and "
                         "reduce_scatter, and per-rank counts for all_gather and reduce_scatter): give the log's --op");
  // Every row's count, as nccl-tests derives it: size / element bytes, and / ranks for a per-rank count. A log that
  // lists no ranks takes the first row's divisor as its rank count.
  const std::uint64_t ranks = op == Collective::AllReduce ? 1
                              : log.ranks > 0             ? static_cast<std::uint64_t>(log.ranks)
                                                          : per;
  for (const NcclTestsLog::PrintedRow& r : log.printed) {
    const std::uint64_t bytes_per = element_bytes(r.type);
    if (bytes_per == 0)
      throw InputError(log.file, r.at,
                       "type \"" + r.type +
                           "\" is not one of nccl-tests' (int8, uint8, int32, uint32, int64, uint64, half, float, "
                           "double, bfloat16, f8e4m3, f8e5m2), so its count cannot be checked against its size");
    const std::string derived = std::to_string(r.bytes) + " B / " + std::to_string(bytes_per) + " B per " + r.type +
                                (ranks > 1 ? " / " + std::to_string(ranks) + " ranks" : "");
    if (ranks == 0 || r.bytes % (bytes_per * ranks) != 0)
      throw InputError(log.file, r.at, "size " + derived + " is not a whole number of elements");
    if (r.count != r.bytes / (bytes_per * ranks))
      throw InputError(log.file, r.at,
                       "count " + std::to_string(r.count) + " is not the size's (" + derived + " = " +
                           std::to_string(r.bytes / (bytes_per * ranks)) + " elements)");
  }
}

void check_distinct_logs(const std::vector<std::pair<NcclTestsLog, Collective>>& logs) {
  // nccl-tests prints a time in 7 characters (reports::nccl_tests_number); a -J file has full precision. Two times
  // print alike when they round alike.
  const auto same_run = [](const NcclTestsLog& a, const NcclTestsLog& b) {
    return a.rows.size() == b.rows.size() &&
           std::equal(a.rows.begin(), a.rows.end(), b.rows.begin(), [](const NcclTestsRow& x, const NcclTestsRow& y) {
             return x.bytes == y.bytes &&
                    reports::nccl_tests_number(x.time_us, 7) == reports::nccl_tests_number(y.time_us, 7);
           });
  };
  for (std::size_t j = 0; j < logs.size(); ++j)
    for (std::size_t i = 0; i < j; ++i) {
      const NcclTestsLog &earlier = logs[i].first, &later = logs[j].first;
      std::error_code ec1, ec2;
      const auto a = std::filesystem::weakly_canonical(earlier.file, ec1);
      const auto b = std::filesystem::weakly_canonical(later.file, ec2);
      if (!ec1 && !ec2 && a == b)
        throw InputError(
            "--from-nccl-tests", "",
            later.file + " is given twice (as " + earlier.file + " before): its rows would be fitted twice");
      if (same_run(earlier, later))
        throw InputError(later.file, "",
                         "has the same sizes and times as " + earlier.file +
                             " (the same run given twice, e.g. a copy, or a text log beside its -J file): its rows "
                             "would be fitted twice");
    }
}

bool NcclCalibration::any_trusted() const {
  return std::any_of(fits.begin(), fits.end(), [](const ScaleFit& f) { return f.trusted; });
}

namespace {

// Thresholds of the MPI calibration (validate/calibration.hpp TrustRules), so both refuse alike.
constexpr double kMinR2 = 0.9, kMaxRmsRel = 0.25;
// A fit whose residuals are this small is trusted whatever its R^2 (R^2 is relative to the spread of the times).
constexpr double kTrustedRmsRel = 0.10;
// A term that is under this share of every sample's predicted time cannot be told apart from noise: it keeps 1.
constexpr double kMinTermShare = 0.1;

struct Point {
  double latency_s, bandwidth_s, chunk_rounds, measured_s;
  double min_bandwidth_factor;  // y below this would lift algbw above the links' ceiling
  bool near_issue_floor;        // within kIssueBoundMargin of its log's host issue floor
};

// The model's terms at a point: t = x * latency + y * bandwidth + z * rounds (z in seconds per round).
constexpr int kTerms = 3;
using Terms = std::array<double, kTerms>;
Terms terms_of(const Point& p) { return {p.latency_s, p.bandwidth_s, p.chunk_rounds}; }
double model_s(const Point& p, const Terms& coef) {
  const Terms t = terms_of(p);
  return coef[0] * t[0] + coef[1] * t[1] + coef[2] * t[2];
}

// Weighted least squares with weights 1/t^2 for the free terms, the others held at their value in `coef`. Leaves
// `coef` as it is when the free terms cannot be told apart (a singular system).
void solve(const std::vector<Point>& pts, const std::array<bool, kTerms>& free, Terms& coef) {
  std::vector<int> idx;
  for (int k = 0; k < kTerms; ++k)
    if (free[k]) idx.push_back(k);
  const std::size_t n = idx.size();
  if (n == 0) return;
  // Normal equations A c = b over the free terms, then Gaussian elimination with partial pivoting.
  std::array<std::array<double, kTerms + 1>, kTerms> a{};
  for (const Point& p : pts) {
    const Terms t = terms_of(p);
    double rest = p.measured_s;
    for (int k = 0; k < kTerms; ++k)
      if (!free[k]) rest -= coef[k] * t[k];
    const double w = 1 / (p.measured_s * p.measured_s);
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n; ++j) a[i][j] += w * t[idx[i]] * t[idx[j]];
      a[i][n] += w * t[idx[i]] * rest;
    }
  }
  // Each term's column scaled to unit norm, so that seconds and rounds compare and a singular system shows.
  std::array<double, kTerms> norm{};
  for (std::size_t i = 0; i < n; ++i) norm[i] = std::sqrt(a[i][i]);
  for (std::size_t i = 0; i < n; ++i) {
    if (!(norm[i] > 0)) return;
    for (std::size_t j = 0; j < n; ++j) a[i][j] /= norm[i] * norm[j];
    a[i][n] /= norm[i];
  }
  for (std::size_t col = 0; col < n; ++col) {
    std::size_t pivot = col;
    for (std::size_t r = col + 1; r < n; ++r)
      if (std::abs(a[r][col]) > std::abs(a[pivot][col])) pivot = r;
    if (std::abs(a[pivot][col]) < 1e-9) return;
    std::swap(a[col], a[pivot]);
    for (std::size_t r = 0; r < n; ++r) {
      if (r == col) continue;
      const double f = a[r][col] / a[col][col];
      for (std::size_t j = col; j <= n; ++j) a[r][j] -= f * a[col][j];
    }
  }
  for (std::size_t i = 0; i < n; ++i) coef[idx[i]] = a[i][n] / a[i][i] / norm[i];
}

// The time per round of chunks is fitted over at least this many sizes (three coefficients and a residual), and only
// where the rounds per second of the bandwidth term vary by half again over them (the chunk changes between the
// sizes, or some run less than one round): rounds proportional to the size would be the bandwidth term again.
constexpr std::size_t kMinRoundSizes = 4;

bool rounds_tell_apart(const std::vector<Point>& pts) {
  if (pts.size() < kMinRoundSizes) return false;
  double least = 0, most = 0;  // rounds per second of the bandwidth term: constant while the chunk is
  for (const Point& p : pts) {
    if (p.chunk_rounds <= 0) return false;
    const double r = p.chunk_rounds / p.bandwidth_s;
    least = least == 0 ? r : std::min(least, r), most = std::max(most, r);
  }
  return most > 1.5 * least;
}

ScaleFit fit_group(const std::string& key, const std::vector<Point>& pts) {
  ScaleFit f;
  f.key = key;
  f.samples = pts.size();
  auto share = [&](bool latency) {
    double most = 0;
    for (const Point& p : pts)
      most = std::max(most, (latency ? p.latency_s : p.bandwidth_s) / (p.latency_s + p.bandwidth_s));
    return most;
  };
  f.latency_fitted = share(true) >= kMinTermShare;
  f.bandwidth_fitted = share(false) >= kMinTermShare;
  Terms coef = {1, 1, 0};
  if (rounds_tell_apart(pts)) {
    solve(pts, {f.latency_fitted, f.bandwidth_fitted, true}, coef);
    f.chunk_round_fitted = coef[0] > 0 && coef[1] > 0 && coef[2] > 0;
    if (!f.chunk_round_fitted) coef = {1, 1, 0};
  }
  if (!f.chunk_round_fitted) solve(pts, {f.latency_fitted, f.bandwidth_fitted, false}, coef);
  // A negative coefficient means that term is not what the data shows: keep it at NCCL's value, fit the other.
  if (coef[0] <= 0 || coef[1] <= 0) {
    const bool keep_latency = coef[0] <= 0;
    coef = {keep_latency ? 1 : coef[0], keep_latency ? coef[1] : 1, 0};
    f.latency_fitted = f.latency_fitted && !keep_latency;
    f.bandwidth_fitted = f.bandwidth_fitted && keep_latency;
    f.chunk_round_fitted = false;
    solve(pts, {f.latency_fitted, f.bandwidth_fitted, false}, coef);
  }
  // The fit is linear in its coefficients and its objective convex, so where the best y lies below the links'
  // ceiling the constrained best has y on the ceiling: hold it there and refit the others.
  double min_y = 0;
  for (const Point& p : pts) min_y = std::max(min_y, p.min_bandwidth_factor);
  if (f.bandwidth_fitted && coef[1] > 0 && coef[1] < min_y) {
    coef[1] = min_y, f.at_link_ceiling = true;
    solve(pts, {f.latency_fitted, false, f.chunk_round_fitted}, coef);
    if (coef[2] < 0) {  // the rounds absorbed what the held bandwidth term over-prices: not a cost of rounds
      coef[2] = 0, f.chunk_round_fitted = false;
      solve(pts, {f.latency_fitted, false, false}, coef);
    }
  }
  const double x = coef[0], y = coef[1];
  f.scale = {x, y > 0 ? 1 / y : 1, coef[2] * 1e6};
  std::vector<Sample> samples;
  std::vector<double> predicted;
  for (const Point& p : pts) {
    samples.push_back({p.latency_s + p.bandwidth_s, p.measured_s});
    predicted.push_back(model_s(p, coef));
  }
  const std::vector<double> rel = relative_residuals(samples, predicted);
  double sse = 0;
  for (double r : rel) sse += r * r, f.max_abs_rel = std::max(f.max_abs_rel, std::abs(r));
  f.rms_rel = std::sqrt(sse / static_cast<double>(rel.size()));
  f.r2 = pts.size() >= 3 ? r_squared(samples, predicted) : 0;
  // R^2 measures the share of the times' variation explained: where the times barely vary (a latency-bound
  // protocol over small sizes) there is nothing to explain, and the RMS residual alone decides. The spread is taken
  // between the 10th and 90th percentile, so that one stray measurement does not make a flat regime look varied.
  std::vector<double> times;
  for (const Point& p : pts) times.push_back(p.measured_s);
  std::sort(times.begin(), times.end());
  const std::size_t tail = times.size() / 10;
  const double spread = times[times.size() - 1 - tail] / times[tail];
  if (pts.size() < 3)
    f.why_not = key + ": " + std::to_string(pts.size()) + " sizes (a fit needs 3)";
  else if (x <= 0 || y <= 0)
    f.why_not = key + ": the times do not follow latency + size / bandwidth";
  else if (f.r2 < kMinR2 && spread > 2 && f.rms_rel > kTrustedRmsRel)
    f.why_not = key + ": R^2 " + std::to_string(f.r2) + " < 0.9";
  else if (f.rms_rel > kMaxRmsRel)
    f.why_not = key + ": RMS relative residual " + std::to_string(f.rms_rel) + " > 0.25";
  f.trusted = f.why_not.empty();
  return f;
}

// One thread issuing the kernels of G GPUs per operation (nccl-tests -g G) caps the rate of back-to-back operations
// at one per G issues. Over the logs with G > 1, the lowest time / G is the most one issue can cost (if the GPUs set
// that time, the issue cost is only lower): it is the fitted issue time. Sizes within 10 % of their log's floor
// (G x that time) may be issue-bound and say nothing of the GPUs' time: they are left out of the scale fits, unless
// the fit of the other sizes prices the GPUs there above what was measured (then the GPUs set that time after all,
// and the size is fitted with the others; repeated until no such size is left out).
constexpr double kIssueBoundMargin = 1.1;

ScaleFit fit_group_above_floor(const std::string& key, const std::vector<Point>& pts, std::size_t& issue_bound) {
  std::vector<Point> fitted, held;
  for (const Point& p : pts) (p.near_issue_floor ? held : fitted).push_back(p);
  if (fitted.size() < 3) {  // too few sizes clear of the floor to say anything of the GPUs alone: fit them all
    fitted = pts;
    held.clear();
  }
  ScaleFit f = fit_group(key, fitted);
  for (;;) {
    const auto gpu_set_it = std::stable_partition(held.begin(), held.end(), [&](const Point& p) {
      const double gpu_s = f.scale.latency_scale * p.latency_s + p.bandwidth_s / f.scale.bandwidth_scale +
                           p.chunk_rounds * f.scale.chunk_round_us * 1e-6;
      return gpu_s <= kIssueBoundMargin * p.measured_s;
    });
    if (gpu_set_it == held.end()) break;
    fitted.insert(fitted.end(), gpu_set_it, held.end());
    held.erase(gpu_set_it, held.end());
    f = fit_group(key, fitted);
  }
  issue_bound += held.size();
  return f;
}

double fitted_launch_us_per_gpu(const std::vector<std::pair<NcclTestsLog, Collective>>& logs) {
  double lowest = 0;
  for (const auto& [log, op] : logs) {
    if (log.gpus_per_thread < 2) continue;
    for (const NcclTestsRow& row : log.rows) {
      const double per_gpu_us = row.time_us / log.gpus_per_thread;
      if (lowest == 0 || per_gpu_us < lowest) lowest = per_gpu_us;
    }
  }
  return lowest;
}

}  // namespace

NcclCalibration fit_nccl(Topology& topology, const std::vector<std::pair<NcclTestsLog, Collective>>& logs) {
  NcclCalibration cal;
  cal.launch_us_per_gpu = fitted_launch_us_per_gpu(logs);
  cal.launch_fitted = cal.launch_us_per_gpu > 0;
  if (!cal.launch_fitted) cal.launch_us_per_gpu = nccl::launch_us_per_gpu(topology);
  cal.gpus_per_thread = logs.empty() ? 0 : logs.front().first.gpus_per_thread;
  for (const auto& [log, op] : logs)
    if (log.gpus_per_thread != cal.gpus_per_thread) cal.gpus_per_thread = 0;
  // The release decides what NCCL chose and what its model says each size costs: a log is priced with its own.
  struct RestoreLibrary {
    Topology& topology;
    CommLibrary library;
    ~RestoreLibrary() { topology.set_library(library); }
  } restore{topology, topology.library()};
  std::map<std::string, std::vector<Point>> groups;
  for (const auto& [log, op] : logs) {
    const bool own_release = !log.nccl_version.empty() && nccl::known_version(log.nccl_version);
    cal.priced_release.push_back(own_release ? log.nccl_version : restore.library.version);
    if (cal.priced_release.back() != topology.library().version) {
      CommLibrary library = restore.library;
      library.version = cal.priced_release.back();
      topology.set_library(std::move(library));
    }
    // NCCL's choice as the run's NCCL_ALGO / NCCL_PROTO left it.
    CollectiveSpec spec;
    spec.op = op;
    spec.algorithm = Algorithm::Auto;
    if (!log.nccl_algo.empty())
      spec.nccl_algorithms = nccl::enabled_by_list(log.nccl_algo, op, false, log.file, "NCCL_ALGO");
    if (!log.nccl_proto.empty())
      spec.nccl_protocols = nccl::enabled_by_list(log.nccl_proto, op, true, log.file, "NCCL_PROTO");
    for (const NcclTestsRow& row : log.rows) {
      spec.bytes = row.bytes;
      const nccl::Estimate chosen = nccl::choose(spec, topology, log.file);
      const nccl::Estimate e = nccl::predict_with(spec, topology, chosen.algorithm, chosen.protocol, {});
      groups[nccl::scale_key(op, chosen.algorithm, chosen.protocol)].push_back(
          {e.latency_s, e.bandwidth_s, e.chunk_rounds, row.time_us * 1e-6, e.algbw_Bps / e.ceiling_algbw_Bps,
           row.time_us <= kIssueBoundMargin * log.gpus_per_thread * cal.launch_us_per_gpu});
    }
  }
  double sse = 0;
  for (const auto& [key, pts] : groups) {
    cal.fits.push_back(fit_group_above_floor(key, pts, cal.issue_bound_samples));
    const std::size_t fitted = cal.fits.back().samples;
    sse += cal.fits.back().rms_rel * cal.fits.back().rms_rel * static_cast<double>(fitted);
    cal.samples += fitted;
  }
  cal.band_rel = cal.samples > 0 ? 2 * std::sqrt(sse / static_cast<double>(cal.samples)) : 0;
  return cal;
}

std::string describe(const NcclCalibration& cal) {
  std::string out =
      "# NCCL model fitted to nccl-tests (time = latency_scale * latency + (size + NVLS fill) / (bandwidth_scale * "
      "algbw) + NVLS rounds * chunk_round_us)\n";
  char line[256];
  std::snprintf(line, sizeof line, "%-27s %7s %13s %15s %14s %7s %9s %9s  %s\n", "collective/algorithm/protocol",
                "sizes", "latency_scale", "bandwidth_scale", "chunk_round_us", "R^2", "rms_rel", "max_rel", "trusted");
  out += line;
  for (const ScaleFit& f : cal.fits) {
    std::snprintf(line, sizeof line, "%-27s %7zu %12.3f%s %14.3f%s %13.2f%s %7.3f %8.1f%% %8.1f%%  %s\n", f.key.c_str(),
                  f.samples, f.scale.latency_scale, f.latency_fitted ? " " : "*", f.scale.bandwidth_scale,
                  f.at_link_ceiling    ? "^"
                  : f.bandwidth_fitted ? " "
                                       : "*",
                  f.scale.chunk_round_us, f.chunk_round_fitted ? " " : "*", f.r2, 100 * f.rms_rel, 100 * f.max_abs_rel,
                  f.trusted ? "yes" : f.why_not.c_str());
    out += line;
  }
  std::snprintf(line, sizeof line,
                "# * = kept at NCCL's value (the term is < 10 %% of every time; chunk_round_us: not NVLS, or the sizes "
                "cannot tell it apart), ^ = held where algbw reaches the links' ceiling. Error band: +-%.1f %%\n",
                100 * cal.band_rel);
  out += line;
  std::snprintf(line, sizeof line,
                "# host issue time per GPU: %.2f us (%s); %zu size(s) within 10 %% of their log's floor (nGpus x that) "
                "left out as possibly issue-bound\n",
                cal.launch_us_per_gpu,
                cal.launch_fitted ? "fitted: the lowest time / nGpus of the logs with nGpus > 1" : "the topology's",
                cal.issue_bound_samples);
  out += line;
  if (cal.gpus_per_thread > 0)
    out += "# logs of " + std::to_string(cal.gpus_per_thread) +
           " GPU(s) per thread: the latency scales hold for that regime, any other keeps NCCL's latency\n";
  std::string releases;
  for (const std::string& r : cal.priced_release) releases += (releases.empty() ? "" : ", ") + r;
  return out +
         "# priced with NCCL (per log, in order; a log's own release where it states one with a table): " + releases +
         "\n";
}

}  // namespace commsim::validate
