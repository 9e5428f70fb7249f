// The parsed-document cache behind grid evaluations (sim/core/json_document_cache.hpp): each file is read once per
// cache, errors are not cached, and a grid evaluated through it predicts exactly what one simulation per variant
// without it predicts.
#include <gtest/gtest.h>

#include <fstream>

#include "explore/grid.hpp"
#include "sim/core/error.hpp"
#include "sim/core/json_document_cache.hpp"
#include "tests/reports/test_helpers.hpp"

namespace commsim {
namespace {

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(JsonDocumentCache, ReadsEachFileOnce) {
  test::ScratchDir dir("json-cache");
  const std::string file = dir / "doc.json";
  write_file(file, R"({"a": 1})");
  JsonDocumentCache cache;
  const auto first = cache.get(file);
  EXPECT_EQ((*first)["a"], 1);
  // Rewritten on disk: the cache still holds what it parsed first, so it did not read the file again.
  write_file(file, R"({"a": 2})");
  const auto second = cache.get(file);
  EXPECT_EQ(second.get(), first.get());
  EXPECT_EQ((*second)["a"], 1);
  // The same file by another spelling of its path is the same entry (keys are absolute, normalised paths).
  const std::string dotted = (dir.path / "." / "doc.json").string();
  EXPECT_EQ(cache.get(dotted).get(), first.get());
  EXPECT_EQ(cache.size(), 1u);
  // A fresh cache reads the file as it is now.
  JsonDocumentCache fresh;
  EXPECT_EQ((*fresh.get(file))["a"], 2);
}

TEST(JsonDocumentCache, ErrorsAreTheUncachedOnesAndAreNotStored) {
  test::ScratchDir dir("json-cache-errors");
  const std::string missing = dir / "missing.json";
  const std::string broken = dir / "broken.json";
  write_file(broken, R"({"a": )");
  JsonDocumentCache cache;
  for (const std::string& path : {missing, broken}) {
    const std::string uncached = error_of([&] { read_json_file(path); });
    EXPECT_NE(uncached, "(no error)");
    EXPECT_EQ(error_of([&] { cache.get(path); }), uncached);
    EXPECT_EQ(error_of([&] { cache.get(path); }), uncached);  // asked again: the same refusal
  }
  EXPECT_EQ(cache.size(), 0u);
  // Once the file is fixed it is read: a refusal was never remembered.
  write_file(broken, R"({"a": 3})");
  EXPECT_EQ((*cache.get(broken))["a"], 3);
}

TEST(JsonDocumentCache, OnlyInsideAScopeAndRestoredAfter) {
  const std::string file = "topologies/emulated-cpu-cluster.json";
  // No scope: every read parses afresh, so two reads are two documents.
  EXPECT_NE(read_json_document(file).get(), read_json_document(file).get());
  JsonDocumentCache outer, inner;
  {
    UseJsonDocumentCache use_outer(outer);
    const auto from_outer = read_json_document(file);
    EXPECT_EQ(read_json_document(file).get(), from_outer.get());
    {
      UseJsonDocumentCache use_inner(inner);
      EXPECT_NE(read_json_document(file).get(), from_outer.get());
    }
    EXPECT_EQ(read_json_document(file).get(), from_outer.get());  // the outer scope's cache again
  }
  EXPECT_EQ(outer.size(), 1u);
  EXPECT_EQ(inner.size(), 1u);
  EXPECT_NE(read_json_document(file).get(), read_json_document(file).get());
}

// evaluate_all (two threads sharing one cache) against evaluate on its own (no cache: every file read afresh, the
// behaviour before the cache): the same results, field for field, and the same refusal for an impossible variant.
TEST(GridEvaluation, CachedDocumentsPredictWhatFreshReadsPredict) {
  const std::string file = "scenarios/emulated-tiny.json";
  const Json base = explore::load_base(file, {}, 0);
  const std::vector<std::vector<std::string>> variants = {
      {"nodes=2"},
      {"nodes=4", "strategy.algorithm=tree"},
      {"nodes=8", "model=models/mlp-small.json"},
      {"topology=../topologies/dgx-a100.json", "nodes=2"},
      {"nodes=0"},  // refused by the loader: nodes must be positive
  };
  const auto cached = explore::evaluate_all(base, file, variants, Fidelity::Analytical, 2, "");
  ASSERT_EQ(cached.size(), variants.size());
  int refused = 0;
  for (std::size_t i = 0; i < variants.size(); ++i) {
    const explore::Evaluation fresh = explore::evaluate(base, file, variants[i], Fidelity::Analytical);
    EXPECT_EQ(cached[i].error, fresh.error) << i;
    refused += !fresh.ok();
    if (!fresh.ok()) continue;
    EXPECT_EQ(cached[i].result.to_json().dump(), fresh.result.to_json().dump()) << i;
    EXPECT_EQ(cached[i].buckets, fresh.buckets) << i;
    EXPECT_EQ(cached[i].streams, fresh.streams) << i;
  }
  EXPECT_EQ(refused, 1);
}

}  // namespace
}  // namespace commsim
