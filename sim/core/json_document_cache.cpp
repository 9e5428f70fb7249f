#include "sim/core/json_document_cache.hpp"

#include <filesystem>

namespace commsim {

namespace {
thread_local JsonDocumentCache* active_cache = nullptr;
}  // namespace

std::shared_ptr<const Json> JsonDocumentCache::get(const std::string& path) {
  // "x.json" and "./x.json" name one file; the working directory does not change during an evaluation.
  std::error_code ec;
  std::string key = std::filesystem::absolute(path, ec).lexically_normal().string();
  if (ec) key = path;
  std::lock_guard lock(mutex_);  // held while parsing: the few distinct files are parsed once, not once per thread
  auto found = documents_.find(key);
  if (found != documents_.end()) return found->second;
  auto document = std::make_shared<const Json>(read_json_file(path));  // throws before anything is stored
  documents_.emplace(key, document);
  return document;
}

std::size_t JsonDocumentCache::size() const {
  std::lock_guard lock(mutex_);
  return documents_.size();
}

UseJsonDocumentCache::UseJsonDocumentCache(JsonDocumentCache& cache) : previous_(active_cache) {
  active_cache = &cache;
}

UseJsonDocumentCache::~UseJsonDocumentCache() { active_cache = previous_; }

std::shared_ptr<const Json> read_json_document(const std::string& path) {
  if (active_cache) return active_cache->get(path);
  return std::make_shared<const Json>(read_json_file(path));
}

}  // namespace commsim
