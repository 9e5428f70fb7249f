#include "sim/collective/nccl_printed_table.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>

#include "sim/collective/nccl_table.hpp"
#include "sim/core/error.hpp"
#include "sim/core/limits.hpp"
#include "sim/core/text.hpp"
#include "sim/topology/topology.hpp"

namespace commsim::nccl {
namespace {

std::string trimmed(std::string_view text) {
  const std::size_t begin = text.find_first_not_of(" \t\r");
  if (begin == std::string_view::npos) return "";
  return std::string(text.substr(begin, text.find_last_not_of(" \t\r") - begin + 1));
}

// The fields between '|', trimmed; a trailing empty field (the line ends with '|') is dropped.
std::vector<std::string> fields_of(std::string_view line) {
  std::vector<std::string> fields;
  for (std::size_t at = 0;;) {
    const std::size_t bar = line.find('|', at);
    fields.push_back(trimmed(line.substr(at, bar == std::string_view::npos ? std::string_view::npos : bar - at)));
    if (bar == std::string_view::npos) break;
    at = bar + 1;
  }
  if (fields.size() > 1 && fields.back().empty()) fields.pop_back();
  return fields;
}

// NCCL's collective named `name` (ncclFuncStr), if it is one of the tuning table's.
std::optional<Collective> collective_named(std::string_view name) {
  const auto* found = std::find(kNcclCollectiveNames.begin(), kNcclCollectiveNames.end(), name);
  if (found == kNcclCollectiveNames.end()) return std::nullopt;
  return kNcclCollectives[static_cast<std::size_t>(found - kNcclCollectiveNames.begin())];
}

// "  12.5/  33.1" -> {12.5, 33.1}; false when the text is not two numbers joined by '/'.
bool parse_cell(const std::string& text, TuningCell& cell) {
  const std::size_t slash = text.find('/');
  if (slash == std::string::npos) return false;
  const std::string latency = trimmed(text.substr(0, slash)), bandwidth = trimmed(text.substr(slash + 1));
  char* end = nullptr;
  cell.latency_us = std::strtod(latency.c_str(), &end);
  if (latency.empty() || *end != '\0' || !std::isfinite(cell.latency_us)) return false;
  cell.algbw_GBps = std::strtod(bandwidth.c_str(), &end);
  return !bandwidth.empty() && *end == '\0' && std::isfinite(cell.algbw_GBps);
}

// A whole unsigned number: `text` all digits, within `max`.
std::optional<std::uint64_t> number_in(std::string_view text, std::uint64_t max) {
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc{} || end != text.data() + text.size() || value > max) return std::nullopt;
  return value;
}

// NCCL's names of one algorithm across releases ("RING", "Ring"; "NVLS_TREE", "NVLSTree"): letters, any case.
std::string letters_lowercase(std::string_view name) {
  std::string letters;
  std::copy_if(name.begin(), name.end(), std::back_inserter(letters),
               [](unsigned char c) { return std::isalnum(c) != 0; });
  return lowercase(letters);
}

// "AllReduce: 4194304 Bytes -> Algo TREE proto SIMPLE channel{Lo..Hi}={0..7}" anywhere in `line` (after NCCL's
// prefix). nullopt when the line holds no " Bytes -> Algo " (no choice); an InputError naming `where` when it does but
// is not such a choice (a size or channel beyond what NCCL prints, a field missing).
std::optional<PrintedChoice> parse_choice(const std::string& line, const std::string& file, const std::string& where) {
  static constexpr std::string_view kArrow = " Bytes -> Algo ";
  const std::size_t arrow = line.find(kArrow);
  if (arrow == std::string::npos) return std::nullopt;
  auto malformed = [&](const std::string& what) {
    return InputError(file, where,
                      "a choice line of NCCL's (\"<Collective>: <size> Bytes -> Algo <A> proto <P> "
                      "channel{Lo..Hi}={<lo>..<hi>}\") with " +
                          what);
  };
  // Backwards from the arrow: the size, spaces, ':', the collective's name.
  std::size_t digits = arrow;
  while (digits > 0 && std::isdigit(static_cast<unsigned char>(line[digits - 1]))) --digits;
  const std::string size = line.substr(digits, arrow - digits);
  std::size_t colon = digits;
  while (colon > 0 && line[colon - 1] == ' ') --colon;
  std::size_t name = colon > 0 ? colon - 1 : 0;
  while (name > 0 && std::isalpha(static_cast<unsigned char>(line[name - 1]))) --name;
  if (size.empty() || colon == 0 || line[colon - 1] != ':' || name == colon - 1)
    throw malformed("no \"<Collective>: <size>\" before \"Bytes\"");
  PrintedChoice c;
  c.collective = line.substr(name, colon - 1 - name);
  const auto bytes = number_in(size, kMaxBytes);
  if (!bytes) throw malformed("the size " + size + " bytes, above the 1 TiB a message may have");
  c.bytes = *bytes;
  // Forwards: "<algorithm> proto <protocol> channel{Lo..Hi}={<lo>..<hi>}".
  std::istringstream rest(line.substr(arrow + kArrow.size()));
  std::string proto_word, channels;
  if (!(rest >> c.algorithm >> proto_word >> c.protocol >> channels) || proto_word != "proto")
    throw malformed("no \"<algorithm> proto <protocol> channel...\" after the size");
  // A name NCCL does not print would be reported as commsim's choice differing (exit 1), not as a line NCCL wrote.
  const auto named = [](const std::string& printed, const auto& names) {
    return std::any_of(names.begin(), names.end(),
                       [&](std::string_view known) { return letters_lowercase(known) == letters_lowercase(printed); });
  };
  if (!named(c.algorithm, detail::kAlgoKeys))
    throw malformed("the algorithm \"" + c.algorithm +
                    "\", not one of NCCL's (TREE, RING, COLLNET_DIRECT, COLLNET_CHAIN, NVLS, NVLS_TREE, PAT)");
  if (!named(c.protocol, kNcclProtocolNames))
    throw malformed("the protocol \"" + c.protocol + "\", not one of NCCL's (LL, LL128, SIMPLE)");
  static constexpr std::string_view kChannels = "channel{Lo..Hi}={";
  const std::size_t dots = channels.find("..", kChannels.size());
  // Channel ids are below NCCL's MAXCHANNELS (64).
  const auto lo = channels.starts_with(kChannels) && dots != std::string::npos
                      ? number_in(std::string_view(channels).substr(kChannels.size(), dots - kChannels.size()), 63)
                      : std::nullopt;
  const auto hi = lo && channels.ends_with("}")
                      ? number_in(std::string_view(channels).substr(dots + 2, channels.size() - dots - 3), 63)
                      : std::nullopt;
  if (!lo || !hi || *hi < *lo) throw malformed("the channels \"" + channels + "\", not {lo..hi} within 0..63");
  c.channels = static_cast<int>(*hi - *lo + 1);
  return c;
}

}  // namespace

std::string version_of_code(long long code) {
  if (code <= 0) return "";
  const long long major = code >= 20900 ? code / 10000 : code / 1000, rest = code >= 20900 ? code % 10000 : code % 1000;
  return std::to_string(major) + "." + std::to_string(rest / 100) + "." + std::to_string(rest % 100);
}

std::string release_stated_in(const std::string& line) {
  std::istringstream in(line);
  return release_stated_in(
      std::vector<std::string>{std::istream_iterator<std::string>(in), std::istream_iterator<std::string>()});
}

std::string release_stated_in(const std::vector<std::string>& words) {
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    static constexpr std::string_view kLibrary = "nccl-library=";
    if (w.rfind(kLibrary, 0) == 0) {
      const std::string code = w.substr(kLibrary.size());
      if (is_unsigned(code) && code.size() <= 9) return version_of_code(std::stoll(code));  // 9 digits: no overflow
    }
    if (w == "NCCL" && i + 2 < words.size() && words[i + 1] == "version" && !words[i + 2].empty() &&
        std::isdigit(static_cast<unsigned char>(words[i + 2][0])) != 0)
      return words[i + 2].substr(0, words[i + 2].find('+'));
  }
  return "";
}

TuningTable read_printed_tuning_table(std::istream& log, const std::string& file) {
  std::vector<std::vector<std::string>> blocks;                      // algorithm names per block
  std::vector<std::map<std::string, std::vector<TuningCell>>> rows;  // per block: collective -> cells
  std::vector<std::string> collectives;                              // in the order of the first block
  std::string line;
  for (int number = 1; std::getline(log, line); ++number) {
    const std::size_t prefix = line.find("NCCL INFO");
    const std::vector<std::string> fields = fields_of(prefix == std::string::npos ? line : line.substr(prefix + 9));
    const std::string where = "line " + std::to_string(number);
    const std::string& head = fields.front();
    if (fields.size() > 1 && head == "Algorithm") {
      std::vector<std::string> names(fields.begin() + 1, fields.end());
      if (!blocks.empty() && !rows.back().empty() && names.front() == blocks.front().front()) break;  // a next table
      if (names.empty() || std::find(names.begin(), names.end(), "") != names.end())
        throw InputError(file, where, "an \"Algorithm\" line of NCCL's tuning table without its algorithms' names");
      blocks.push_back(std::move(names));
      rows.emplace_back();
      continue;
    }
    if (blocks.empty()) continue;  // before the table
    if (fields.size() > 1 && (head == "Protocol" || head == "Max NThreads")) continue;
    if (fields.size() < 2 || !collective_named(head)) break;  // past the table
    const std::size_t expected = 3 * blocks.back().size();
    if (fields.size() - 1 != expected)
      throw InputError(file, where,
                       head + " has " + std::to_string(fields.size() - 1) + " cells where its block's " +
                           std::to_string(blocks.back().size()) + " algorithm(s) have " + std::to_string(expected));
    std::vector<TuningCell> cells(expected);
    for (std::size_t i = 0; i < expected; ++i)
      if (!parse_cell(fields[i + 1], cells[i]))
        throw InputError(
            file, where,
            head + " cell " + std::to_string(i + 1) + " \"" + fields[i + 1] + "\" is not NCCL's latency/bandwidth");
    if (rows.back().count(head) > 0) throw InputError(file, where, head + " is in this block of the table twice");
    if (blocks.size() == 1)
      collectives.push_back(head);
    else if (std::find(collectives.begin(), collectives.end(), head) == collectives.end())
      throw InputError(file, where, head + " is in this block of the table but not in its first");
    rows.back()[head] = std::move(cells);
  }
  if (blocks.empty())
    throw InputError(file, "",
                     "no NCCL tuning table in the log (NCCL prints it at init with NCCL_DEBUG=INFO "
                     "NCCL_DEBUG_SUBSYS=TUNING)");
  if (collectives.empty()) throw InputError(file, "", "NCCL's tuning table in the log has no collective's row");
  TuningTable table;
  for (const auto& names : blocks) table.algorithms.insert(table.algorithms.end(), names.begin(), names.end());
  for (const std::string& collective : collectives) {
    TuningRow row{collective, {}};
    for (std::size_t b = 0; b < blocks.size(); ++b) {
      const auto found = rows[b].find(collective);
      if (found == rows[b].end())
        throw InputError(file, "",
                         collective + " is in the first block of the table but not in block " + std::to_string(b + 1));
      row.cells.insert(row.cells.end(), found->second.begin(), found->second.end());
    }
    table.rows.push_back(std::move(row));
  }
  return table;
}

TuningComparison compare_tuning_tables(const TuningTable& nccl, const TuningTable& commsim) {
  const auto same = [](double printed, double ours) { return std::abs(printed - ours) <= 0.05 + 1e-9; };
  TuningComparison out;
  for (const TuningRow& row : nccl.rows) {
    const auto ours_row = std::find_if(commsim.rows.begin(), commsim.rows.end(),
                                       [&](const TuningRow& r) { return r.collective == row.collective; });
    for (std::size_t a = 0; a < nccl.algorithms.size(); ++a) {
      const auto ours_algorithm = std::find(commsim.algorithms.begin(), commsim.algorithms.end(), nccl.algorithms[a]);
      const bool in_commsim = ours_row != commsim.rows.end() && ours_algorithm != commsim.algorithms.end();
      for (std::size_t p = 0; p < kNcclProtocolNames.size(); ++p) {
        const TuningCell& printed = row.cells[a * 3 + p];
        ++out.cells;
        TuningCell ours;
        if (in_commsim)
          ours = ours_row->cells[static_cast<std::size_t>(ours_algorithm - commsim.algorithms.begin()) * 3 + p];
        if (same(printed.latency_us, ours.latency_us) && same(printed.algbw_GBps, ours.algbw_GBps)) continue;
        out.mismatches.push_back(
            {row.collective, nccl.algorithms[a], std::string(kNcclProtocolNames[p]), printed, ours, in_commsim});
      }
    }
  }
  return out;
}

std::vector<PrintedChoice> read_printed_choices(std::istream& log, const std::string& file) {
  std::vector<PrintedChoice> out;
  std::map<std::pair<std::string, Bytes>, std::size_t> first;  // (collective, size) -> its index in out
  std::string line;
  for (int number = 1; std::getline(log, line); ++number) {
    const std::string where = "line " + std::to_string(number);
    const std::optional<PrintedChoice> c = parse_choice(line, file, where);
    if (!c) continue;
    const auto [at, fresh] = first.try_emplace({c->collective, c->bytes}, out.size());
    if (fresh) {
      out.push_back(*c);
      continue;
    }
    const PrintedChoice& earlier = out[at->second];
    if (earlier.algorithm != c->algorithm || earlier.protocol != c->protocol || earlier.channels != c->channels)
      throw InputError(file, where,
                       c->collective + " of " + std::to_string(c->bytes) + " bytes again, with another choice (" +
                           c->algorithm + "/" + c->protocol + " where an earlier line has " + earlier.algorithm + "/" +
                           earlier.protocol + "): the log holds several communicators or settings; keep one");
  }
  return out;
}

ChoiceComparison compare_choices(const std::vector<PrintedChoice>& choices, const Topology& topology,
                                 const std::string& algorithms, const std::string& protocols, int channels) {
  ChoiceComparison out;
  for (const PrintedChoice& printed : choices) {
    const std::optional<Collective> op = collective_named(printed.collective);
    if (!op) continue;  // not a collective NCCL's tuning table has
    CollectiveSpec spec;
    spec.op = *op;
    spec.algorithm = Algorithm::Auto;
    spec.nccl_channels = channels;
    if (!algorithms.empty()) spec.nccl_algorithms = enabled_by_list(algorithms, spec.op, false, "--algo");
    if (!protocols.empty()) spec.nccl_protocols = enabled_by_list(protocols, spec.op, true, "--proto");
    const bool per_rank = spec.op == Collective::AllGather || spec.op == Collective::ReduceScatter;
    spec.bytes = printed.bytes * (per_rank ? static_cast<Bytes>(topology.ranks()) : 1);
    const Estimate ours = predict(spec, topology, "--against");
    const std::string algorithm(nccl_algorithm_name(ours.algorithm)),
        protocol(kNcclProtocolNames[static_cast<std::size_t>(ours.protocol)]);
    ++out.compared;
    if (letters_lowercase(algorithm) == letters_lowercase(printed.algorithm) &&
        letters_lowercase(protocol) == letters_lowercase(printed.protocol) && ours.channels == printed.channels)
      continue;
    out.mismatches.push_back({printed, algorithm, protocol, ours.channels});
  }
  return out;
}

}  // namespace commsim::nccl
