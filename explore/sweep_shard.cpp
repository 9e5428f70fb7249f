#include "explore/sweep_shard.hpp"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <regex>
#include <type_traits>

#include "sim/core/json_fields.hpp"
#include "sim/core/text.hpp"

namespace commsim::explore {

namespace {

constexpr const char* kShardFormat = "commsim-sweep-shard";
constexpr std::size_t kMaxShards = 1000000;

// A whole number of at most 9 digits, or nothing.
std::optional<std::size_t> small_count(const std::string& text) {
  if (text.size() > 9 || !is_unsigned(text)) return std::nullopt;
  return std::stoul(text);
}

std::string shard_name(std::size_t index, std::size_t count) {
  return std::to_string(index) + "/" + std::to_string(count);
}

// A field of a shard file, with nlohmann's type errors turned into one line naming the file and the field. The
// integer fields are counts and row numbers: a whole number >= 0 that fits T (a fraction or a negative number was
// converted, -2 to a row 18446744073709551614 and 0.5 to row 0).
template <typename T>
T field(const Json& doc, const std::string& key, const std::string& file) {
  if (!doc.contains(key)) throw InputError(file, key, "missing");
  if constexpr (std::is_integral_v<T>) {
    constexpr auto max = static_cast<std::uint64_t>(std::numeric_limits<T>::max());
    const Json& value = doc.at(key);
    const bool fits = value.is_number_unsigned()  ? value.get<std::uint64_t>() <= max
                      : value.is_number_integer() ? value.get<std::int64_t>() >= 0 &&
                                                        static_cast<std::uint64_t>(value.get<std::int64_t>()) <= max
                                                  : false;
    if (!fits)
      throw InputError(
          file, key,
          std::string("must be a whole number ") +
              (max == std::numeric_limits<std::uint64_t>::max() ? ">= 0" : "in [0, " + std::to_string(max) + "]") +
              ", got " + value.dump());
  }
  try {
    return doc.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw InputError(file, key, "has the wrong type (" + std::string(doc.at(key).type_name()) + ")");
  }
}

struct ShardFile {
  std::string path;
  Json doc;
  ShardSpec shard;
};

ShardFile read_shard_file(const std::string& path) {
  ShardFile f{path, read_json_file(path), {}};
  if (!f.doc.is_object() || !f.doc.contains("format") || f.doc["format"] != kShardFormat)
    throw InputError(path, "format", std::string("not a sweep shard (\"format\": \"") + kShardFormat + "\" expected)");
  f.shard.index = field<std::size_t>(f.doc, "shard", path);
  f.shard.count = field<std::size_t>(f.doc, "shards", path);
  if (f.shard.index < 1 || f.shard.index > f.shard.count)
    throw InputError(
        path, "shard",
        "shard " + shard_name(f.shard.index, f.shard.count) + " is not in 1.." + std::to_string(f.shard.count));
  return f;
}

std::vector<ShardFile> read_folders(const std::vector<std::string>& folders) {
  namespace fs = std::filesystem;
  static const std::regex kName(R"(sweep\.shard-[0-9]+-of-[0-9]+\.json)");
  std::vector<ShardFile> files;
  for (const std::string& folder : folders) {
    std::error_code ec;
    if (!fs::is_directory(folder, ec)) throw InputError("--merge", "", folder + ": not a directory");
    std::vector<std::string> names;
    for (const fs::directory_entry& entry : fs::directory_iterator(folder, ec))
      if (std::regex_match(entry.path().filename().string(), kName)) names.push_back(entry.path().string());
    if (names.empty()) throw InputError("--merge", "", folder + ": no sweep.shard-*-of-*.json in it");
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) files.push_back(read_shard_file(name));
  }
  return files;
}

// Every file must describe the same sweep as the first, the set of shards must be 1..N exactly once, and every shard
// must be whole and from this build. Checked in that order, so that the message names the first thing wrong.
void check_one_complete_sweep(const std::vector<ShardFile>& files) {
  const ShardFile& first = files.front();
  const std::string hash = field<std::string>(first.doc, "sweep_hash", first.path);
  for (const ShardFile& f : files) {
    if (field<std::string>(f.doc, "sweep_hash", f.path) != hash)
      throw InputError(f.path, "sweep_hash",
                       "from a different sweep than " + first.path + " (scenario, --set, --vary or fidelity differ)");
    if (f.shard.count != first.shard.count)
      throw InputError(
          f.path, "shards",
          std::to_string(f.shard.count) + " shards, but " + first.path + " has " + std::to_string(first.shard.count));
    // The hash stands for these; the merge reads them from the first file, so a file that says otherwise is refused
    // rather than merged under the first one's labels.
    for (const char* key : {"scenario", "fidelity", "vary"})
      if (field<Json>(f.doc, key, f.path) != field<Json>(first.doc, key, first.path))
        throw InputError(f.path, key, "differs from " + first.path + "'s, which has the same sweep_hash");
  }
  std::map<std::size_t, std::string> seen;
  for (const ShardFile& f : files) {
    auto [it, added] = seen.emplace(f.shard.index, f.path);
    if (!added)
      throw InputError(f.path, "shard",
                       "shard " + shard_name(f.shard.index, f.shard.count) + " given twice (also " + it->second +
                           "): shards overlap");
  }
  for (std::size_t i = 1; i <= first.shard.count; ++i)
    if (!seen.count(i))
      throw InputError("--merge", "",
                       "shard " + shard_name(i, first.shard.count) + " of sweep " + hash + " is missing");
  for (const ShardFile& f : files) {
    if (f.doc.contains("partial")) {
      const std::size_t total = field<std::size_t>(f.doc, "rows_total", f.path);
      const std::size_t planned = total >= f.shard.index ? (total - f.shard.index) / f.shard.count + 1 : 0;
      throw InputError(f.path, "partial",
                       "shard " + shard_name(f.shard.index, f.shard.count) + " was stopped by a signal after " +
                           std::to_string(field<Json>(f.doc, "rows", f.path).size()) + " of its " +
                           std::to_string(planned) + " rows: run it again");
    }
    const std::string version = field<std::string>(f.doc, "commsim_version", f.path);
    if (version != COMMSIM_VERSION)
      throw InputError(
          f.path, "commsim_version",
          "written by commsim " + version + ", this is " + COMMSIM_VERSION + ": merge with the same build");
  }
}

}  // namespace

ShardSpec parse_shard(const std::string& text) {
  const std::size_t slash = text.find('/');
  const std::optional<std::size_t> index = small_count(text.substr(0, slash));
  const std::optional<std::size_t> count =
      slash == std::string::npos ? std::nullopt : small_count(text.substr(slash + 1));
  if (!index || !count) throw InputError("--shard", "", "\"" + text + "\" is not I/N (e.g. 2/3: the second of 3)");
  if (*count < 1 || *count > kMaxShards)
    throw InputError("--shard", "", "\"" + text + "\": N must be in [1, " + std::to_string(kMaxShards) + "]");
  if (*index < 1 || *index > *count)
    throw InputError("--shard", "",
                     "\"" + text + "\": I counts from 1 and must be in [1, " + std::to_string(*count) + "]");
  return {*index, *count};
}

std::vector<std::size_t> shard_rows(std::size_t grid_size, ShardSpec shard) {
  std::vector<std::size_t> rows;
  for (std::size_t r = shard.index - 1; r < grid_size; r += shard.count) rows.push_back(r);
  return rows;
}

std::string shard_file_name(ShardSpec shard) {
  return "sweep.shard-" + std::to_string(shard.index) + "-of-" + std::to_string(shard.count) + ".json";
}

Json row_record(std::size_t grid_row, const Evaluation& e) {
  Json record = {{"row", grid_row}, {"sets", e.sets}};
  if (e.ok()) {
    record["result"] = e.result.to_json();
    record["buckets"] = e.buckets;
    record["streams"] = e.streams;
  } else {
    record["error"] = e.error;
  }
  return record;
}

std::pair<std::size_t, Evaluation> parse_row_record(const Json& record, const std::string& file,
                                                    const std::string& where) {
  if (!record.is_object()) throw InputError(file, where, "must be a JSON object");
  Evaluation e;
  e.sets = field<std::vector<std::string>>(record, "sets", file + ": " + where);
  if (record.contains("error")) {
    e.error = field<std::string>(record, "error", file + ": " + where);
  } else {
    e.result = Result::from_json(field<Json>(record, "result", file + ": " + where), file + ": " + where + ".result");
    e.buckets = field<int>(record, "buckets", file + ": " + where);
    e.streams = field<int>(record, "streams", file + ": " + where);
  }
  return {field<std::size_t>(record, "row", file + ": " + where), std::move(e)};
}

Json shard_document(const Sweep& part, const std::string& sweep_hash, ShardSpec shard) {
  Json axes = Json::array(), rows = Json::array();
  for (const Axis& a : part.axes) axes.push_back({{"key", a.key}, {"values", a.values}, {"labels", a.labels}});
  for (std::size_t i = 0; i < part.rows.size(); ++i) rows.push_back(row_record(part.grid_row(i), part.rows[i]));
  Json doc = {{"format", kShardFormat},
              {"sweep_hash", sweep_hash},
              {"commsim_version", COMMSIM_VERSION},
              {"scenario", part.scenario_file},
              {"fidelity", part.fidelity},
              {"vary", axes},
              {"shard", shard.index},
              {"shards", shard.count},
              {"rows_total", part.grid_size},
              {"rows", rows}};
  if (part.partial()) {
    doc["partial"] = true;
    doc["note"] = partial_note(part);
  }
  return doc;
}

Sweep merge_shards(const std::vector<std::string>& folders) {
  if (folders.empty()) throw InputError("--merge", "", "no folder given");
  const std::vector<ShardFile> files = read_folders(folders);
  check_one_complete_sweep(files);
  const ShardFile& first = files.front();
  Sweep sweep;
  sweep.scenario_file = field<std::string>(first.doc, "scenario", first.path);
  sweep.fidelity = field<std::string>(first.doc, "fidelity", first.path);
  for (const Json& a : field<Json>(first.doc, "vary", first.path)) {
    Axis axis;
    axis.key = field<std::string>(a, "key", first.path + ": vary");
    axis.values = field<std::vector<std::string>>(a, "values", first.path + ": vary");
    axis.labels = field<std::vector<std::string>>(a, "labels", first.path + ": vary");
    if (axis.values.empty() || axis.labels.size() != axis.values.size())
      throw InputError(first.path, "vary", "axis " + axis.key + " has no values or as many labels as values");
    sweep.axes.push_back(axis);
  }
  std::size_t grid_size = sweep.axes.empty() ? 0 : 1;
  for (const Axis& a : sweep.axes) {
    if (grid_size > kMaxGridRows / a.values.size())
      throw InputError(first.path, "vary", "the axes make more than " + std::to_string(kMaxGridRows) + " rows");
    grid_size *= a.values.size();
  }
  sweep.grid_size = field<std::size_t>(first.doc, "rows_total", first.path);
  if (sweep.grid_size != grid_size || grid_size == 0)
    throw InputError(first.path, "rows_total",
                     "is " + std::to_string(sweep.grid_size) + ", the axes make " + std::to_string(grid_size));

  // Count before allocating the grid: a file cannot make this process hold more rows than the files contain.
  std::size_t records_total = 0;
  for (const ShardFile& f : files) {
    const Json records = field<Json>(f.doc, "rows", f.path);
    if (!records.is_array()) throw InputError(f.path, "rows", "must be an array");
    records_total += records.size();
  }
  if (records_total < grid_size)
    throw InputError("--merge", "",
                     "rows are missing: the shards hold " + std::to_string(records_total) + " of the " +
                         std::to_string(grid_size) + " rows of the grid");
  std::vector<std::string> row_file(grid_size);
  std::vector<Evaluation> rows(grid_size);
  for (const ShardFile& f : files) {
    const Json records = field<Json>(f.doc, "rows", f.path);
    for (std::size_t k = 0; k < records.size(); ++k) {
      const std::string where = "rows[" + std::to_string(k) + "]";
      auto [row, e] = parse_row_record(records[k], f.path, where);
      if (row >= grid_size || row % f.shard.count != f.shard.index - 1)
        throw InputError(f.path, where + ".row",
                         "row " + std::to_string(row) + " is not one of shard " +
                             shard_name(f.shard.index, f.shard.count) + "'s rows");
      if (!row_file[row].empty())
        throw InputError(f.path, where + ".row", "row " + std::to_string(row) + " is also in " + row_file[row]);
      row_file[row] = f.path;
      rows[row] = std::move(e);
    }
  }
  for (std::size_t row = 0; row < grid_size; ++row)
    if (row_file[row].empty())
      throw InputError("--merge", "",
                       "row " + std::to_string(row) + " is missing (shard " +
                           shard_name(row % first.shard.count + 1, first.shard.count) + ")");
  sweep.rows = std::move(rows);
  return sweep;
}

}  // namespace commsim::explore
