#include "sim/core/json_fields.hpp"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <vector>

#include "sim/core/data_path.hpp"
#include "sim/core/limits.hpp"
#include "sim/core/output_file.hpp"
#include "sim/core/units.hpp"

namespace commsim {

namespace {

// A first pass over the text, before the document is built: refuses what nlohmann would accept or crash on.
// Nesting is bounded (the parser itself is iterative, but destroying, copying or printing a deep document
// recurses once per level), a key given twice in one object is an error (nlohmann keeps the last silently), and a
// number beyond double's range is named with its field.
class InputScan final : public nlohmann::json_sax<Json> {
 public:
  // `syntax_errors_throw` false: a syntax error makes the scan return false instead (for option values that may
  // be plain strings).
  InputScan(const std::string& source, bool syntax_errors_throw)
      : source_(source), syntax_errors_throw_(syntax_errors_throw) {}

  bool null() override { return element(); }
  bool boolean(bool) override { return element(); }
  bool number_integer(number_integer_t) override { return element(); }
  bool number_unsigned(number_unsigned_t) override { return element(); }
  bool number_float(number_float_t, const string_t&) override { return element(); }
  bool string(string_t&) override { return element(); }
  bool binary(binary_t&) override { return element(); }
  bool start_object(std::size_t) override { return open(false); }
  bool start_array(std::size_t) override { return open(true); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& key) override {
    Frame& f = frames_.back();
    f.key = key;
    if (!f.keys.insert(key).second)
      throw InputError(source_, path(), "duplicate key (each key may appear once per object)");
    return true;
  }
  bool parse_error(std::size_t, const std::string& token, const nlohmann::detail::exception& e) override {
    if (e.id == 406) {  // out_of_range.406: a number that overflows double, the element being read
      element();
      throw InputError(source_, path(), "number " + token + " is beyond the range of a double");
    }
    if (!syntax_errors_throw_) return false;
    // nlohmann's message already says "at line L, column C" (before "syntax error"): keep it, drop the prefix.
    const std::string what = e.what();
    const auto at = what.find("at line");
    throw InputError(source_, "", "invalid JSON: " + (at == std::string::npos ? what : what.substr(at)));
  }

 private:
  struct Frame {
    bool array = false;
    long index = -1;  // arrays: the element being read
    std::string key;  // objects: the key being read
    std::set<std::string> keys;
  };
  bool element() {
    if (!frames_.empty() && frames_.back().array) ++frames_.back().index;
    return true;
  }
  bool open(bool array) {
    element();
    if (frames_.size() >= static_cast<std::size_t>(kMaxJsonDepth))
      throw InputError(source_, shortened(path()), "nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    frames_.push_back(Frame{array, -1, {}, {}});
    return true;
  }
  bool close() {
    frames_.pop_back();
    return true;
  }
  std::string path() const {
    std::string p;
    for (const Frame& f : frames_)
      p += f.array ? "[" + std::to_string(std::max(0L, f.index)) + "]" : (p.empty() ? "" : ".") + f.key;
    return p;
  }
  // A path 64 levels deep is long: its first levels say where the nesting starts.
  static std::string shortened(const std::string& path) {
    return path.size() <= 40 ? path : path.substr(0, 40) + "...";
  }

  const std::string& source_;
  bool syntax_errors_throw_;
  std::vector<Frame> frames_;
};

}  // namespace

Json parse_json_text(const std::string& text, const std::string& source) {
  InputScan scan(source, true);
  Json::sax_parse(text, &scan, nlohmann::detail::input_format_t::json, /*strict=*/true, /*ignore_comments=*/false);
  return Json::parse(text, nullptr, /*allow_exceptions=*/true, /*ignore_comments=*/false);
}

std::optional<Json> parse_json_value(const std::string& text, const std::string& source) {
  InputScan scan(source, false);
  if (!Json::sax_parse(text, &scan, nlohmann::detail::input_format_t::json, /*strict=*/true, /*ignore_comments=*/false))
    return std::nullopt;
  return Json::parse(text, nullptr, /*allow_exceptions=*/true, /*ignore_comments=*/false);
}

// A file that is not gzip at all is read as it is (zlib's transparent mode); one that ends early or holds corrupt
// data is an error (gzread then stops with 0 and Z_BUF_ERROR, or -1 and Z_DATA_ERROR).
std::string gunzipped_text(const std::string& path, std::uint64_t max_bytes) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) throw InputError(path, "", "cannot open file");
  std::string text;
  char buffer[1 << 16];
  int n = 0;
  while ((n = gzread(file, buffer, sizeof buffer)) > 0) {
    if (text.size() + static_cast<std::size_t>(n) > max_bytes) {
      gzclose(file);
      throw InputError(path, "",
                       "expands to more than " + std::to_string(max_bytes) + " bytes (the limit on a gzipped file)");
    }
    text.append(buffer, static_cast<std::size_t>(n));
  }
  int code = Z_OK;
  gzerror(file, &code);
  gzclose(file);
  if (code == Z_BUF_ERROR) throw InputError(path, "", "a gzip file cut short (it ends before its data does)");
  if (n < 0 || code != Z_OK) throw InputError(path, "", "not a readable gzip file (corrupt compressed data)");
  return text;
}

Json read_json_file(const std::string& given_path) {
  const std::string path = resolve_data_path(given_path);  // the current directory first, then the data dirs
  note_input_file(path);
  std::error_code ec;
  if (const std::string why = not_an_input_file(path, "JSON file"); !why.empty()) throw InputError(path, "", why);
  if (path.ends_with(".gz")) {
    if (!std::filesystem::exists(path, ec)) throw InputError(path, "", "cannot open file");
    return parse_json_text(gunzipped_text(path, kMaxGunzippedBytes), path);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot open file");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw InputError(path, "", "cannot read file");
  // gzip's magic bytes 1f 8b (RFC 1952): a compressed trace whose name does not end in .gz is read as one.
  if (text.str().starts_with("\x1f\x8b")) return parse_json_text(gunzipped_text(path, kMaxGunzippedBytes), path);
  return parse_json_text(text.str(), path);
}

JsonFields::JsonFields(const Json& object, std::string file, std::string path)
    : object_(object), file_(std::move(file)), path_(std::move(path)) {
  if (!object_.is_object()) throw InputError(file_, path_.empty() ? "(top level)" : path_, "must be a JSON object");
}

void JsonFields::fail(const std::string& key, const std::string& what) const {
  throw InputError(file_, field_path(key), what);
}

const Json& JsonFields::raw(const std::string& key) {
  if (!object_.contains(key)) fail(key, "missing required field");
  read_.insert(key);
  return object_.at(key);
}

const Json* JsonFields::raw_optional(const std::string& key) {
  if (!object_.contains(key)) return nullptr;
  read_.insert(key);
  return &object_.at(key);
}

std::string JsonFields::string(const std::string& key) {
  const Json& v = raw(key);
  if (!v.is_string()) fail(key, "must be a string");
  return v.get<std::string>();
}

std::string JsonFields::string_or(const std::string& key, const std::string& fallback) {
  return has(key) ? string(key) : fallback;
}

double JsonFields::number(const std::string& key) {
  const Json& v = raw(key);
  if (!v.is_number()) fail(key, "must be a number");
  double x = v.get<double>();
  if (!std::isfinite(x)) fail(key, "must be finite");
  return x;
}

double JsonFields::number_or(const std::string& key, double fallback) { return has(key) ? number(key) : fallback; }

double JsonFields::positive(const std::string& key) {
  double x = number(key);
  if (!(x > 0)) fail(key, "must be > 0, got " + raw(key).dump());
  return x;
}

double JsonFields::positive_or(const std::string& key, double fallback) { return has(key) ? positive(key) : fallback; }

double JsonFields::number_within(const std::string& key, double min, double max) {
  const double x = number(key);
  char range[64];
  std::snprintf(range, sizeof range, "[%.6g, %.6g]", min, max);
  if (!(x >= min && x <= max)) fail(key, "must be in " + std::string(range) + ", got " + raw(key).dump());
  return x;
}

double JsonFields::duration_s(const std::string& key) {
  const double x = number(key);
  if (!(x >= 0 && x <= kMaxSimulatedSeconds))
    fail(key, "must be a time in seconds in [0, " + std::to_string(static_cast<long>(kMaxSimulatedSeconds)) +
                  "] (100 days), got " + raw(key).dump());
  return x;
}

std::int64_t JsonFields::integer(const std::string& key, std::int64_t min, std::int64_t max) {
  const Json& v = raw(key);
  if (!v.is_number_integer()) fail(key, "must be an integer, got " + v.dump());
  // Unsigned values beyond int64 are out of range too.
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(max))
    fail(key, "must be at most " + std::to_string(max) + ", got " + v.dump());
  std::int64_t x = v.get<std::int64_t>();
  if (x < min || x > max)
    fail(key, "must be in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " + std::to_string(x));
  return x;
}

std::int64_t JsonFields::integer_or(const std::string& key, std::int64_t fallback, std::int64_t min, std::int64_t max) {
  return has(key) ? integer(key, min, max) : fallback;
}

bool JsonFields::boolean_or(const std::string& key, bool fallback) {
  if (!has(key)) return fallback;
  const Json& v = raw(key);
  if (!v.is_boolean()) fail(key, "must be true or false");
  return v.get<bool>();
}

JsonFields JsonFields::object(const std::string& key) { return JsonFields(raw(key), file_, field_path(key)); }

const Json& JsonFields::array(const std::string& key) {
  const Json& v = raw(key);
  if (!v.is_array()) fail(key, "must be an array");
  return v;
}

void JsonFields::reject_unknown() const {
  for (auto it = object_.begin(); it != object_.end(); ++it)
    if (!read_.count(it.key())) fail(it.key(), "unknown field");
}

}  // namespace commsim
