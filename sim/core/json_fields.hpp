// Strict reading of a JSON object: every field is typed and range-checked, unknown keys are errors (no silent
// typos), and every error names the file and the field path.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>

#include "sim/core/error.hpp"

namespace commsim {

using Json = nlohmann::json;

// The deepest nesting of objects and arrays accepted in any JSON input (the shipped files use at most 6 levels).
inline constexpr int kMaxJsonDepth = 64;

// Parses JSON text that came from `source` (a file name, or an option such as "--set key"). Every input document
// goes through here: a syntax error, nesting deeper than kMaxJsonDepth, a key given twice in one object or a number
// beyond double's range is an InputError naming the source and, where known, the field.
Json parse_json_text(const std::string& text, const std::string& source);
// The same for an option's value that may also be a plain string ("--set name=resnet"): nullopt when `text` is
// not JSON at all; the other refusals still throw.
std::optional<Json> parse_json_value(const std::string& text, const std::string& source);
// Reads a JSON file and parses it as above; a missing, unreadable file or a directory is an InputError naming it.
Json read_json_file(const std::string& path);
// The text of a gzip file (PyTorch's profiler writes its traces as .json.gz with use_gzip=True), at most max_bytes
// of it (kMaxGunzippedBytes for read_json_file); more, or a cut or corrupt file, is an InputError naming the file.
std::string gunzipped_text(const std::string& path, std::uint64_t max_bytes);

class JsonFields {
 public:
  JsonFields(const Json& object, std::string file, std::string path);

  bool has(const std::string& key) const { return object_.contains(key); }
  const Json& raw(const std::string& key);  // required, any type
  const Json* raw_optional(const std::string& key);

  std::string string(const std::string& key);
  std::string string_or(const std::string& key, const std::string& fallback);
  double number(const std::string& key);
  double number_or(const std::string& key, double fallback);
  double positive(const std::string& key);                               // > 0
  double number_within(const std::string& key, double min, double max);  // in [min, max]
  double positive_or(const std::string& key, double fallback);
  // A time in seconds: in [0, kMaxSimulatedSeconds] (100 days), the range the simulator can represent.
  double duration_s(const std::string& key);
  std::int64_t integer(const std::string& key, std::int64_t min, std::int64_t max);
  std::int64_t integer_or(const std::string& key, std::int64_t fallback, std::int64_t min, std::int64_t max);
  bool boolean_or(const std::string& key, bool fallback);
  JsonFields object(const std::string& key);
  const Json& array(const std::string& key);

  std::string field_path(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  const std::string& file() const { return file_; }
  [[noreturn]] void fail(const std::string& key, const std::string& what) const;
  // Throws on the first key that was never read (sorted, so the message is deterministic).
  void reject_unknown() const;

 private:
  const Json& object_;
  std::string file_;
  std::string path_;
  std::set<std::string> read_;
};

}  // namespace commsim
