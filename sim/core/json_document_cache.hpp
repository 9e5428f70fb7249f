// Parsed JSON files shared across the many simulations of one grid evaluation (sweep, recommend), so that each
// distinct model and topology file is read and parsed once rather than once per configuration: at 4096 GPUs the
// re-parsing was ~40 % of `recommend`'s time (BENCHMARKS.md, "`auto` and `recommend` at 4096 GPUs").
//
// The loaders read through read_json_document. Outside a UseJsonDocumentCache scope it reads the file afresh, as
// read_json_file does; inside one, it returns the document the scope's cache holds for that path, parsing it on first
// use. A file that fails to read or parse is not cached: every use throws the same InputError, as without the cache.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "sim/core/json_fields.hpp"

namespace commsim {

// Documents keyed by the absolute path of the file given; safe to share between threads. Meant to live as long as
// one evaluation: it never re-reads, so a file edited while it lives is not seen.
class JsonDocumentCache {
 public:
  std::shared_ptr<const Json> get(const std::string& path);
  std::size_t size() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const Json>> documents_;
};

// While alive, read_json_document on this thread goes through `cache` (the previous scope's cache is restored after).
class UseJsonDocumentCache {
 public:
  explicit UseJsonDocumentCache(JsonDocumentCache& cache);
  ~UseJsonDocumentCache();
  UseJsonDocumentCache(const UseJsonDocumentCache&) = delete;
  UseJsonDocumentCache& operator=(const UseJsonDocumentCache&) = delete;

 private:
  JsonDocumentCache* previous_;
};

// read_json_file, through this thread's cache when a UseJsonDocumentCache scope is active.
std::shared_ptr<const Json> read_json_document(const std::string& path);

}  // namespace commsim
