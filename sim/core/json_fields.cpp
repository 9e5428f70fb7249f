#include "sim/core/json_fields.hpp"

#include <cmath>
#include <fstream>
#include <limits>

namespace commsim {

Json read_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path, "", "cannot open file");
  try {
    return Json::parse(in, nullptr, true, /*ignore_comments=*/false);
  } catch (const Json::parse_error& e) {
    // nlohmann's message already says "at line L, column C" (before "syntax error"): keep it, drop the prefix.
    std::string what = e.what();
    auto pos = what.find("at line");
    throw InputError(path, "", "invalid JSON: " + (pos == std::string::npos ? what : what.substr(pos)));
  }
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

double JsonFields::positive_or(const std::string& key, double fallback) {
  return has(key) ? positive(key) : fallback;
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

std::int64_t JsonFields::integer_or(const std::string& key, std::int64_t fallback, std::int64_t min,
                                    std::int64_t max) {
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
