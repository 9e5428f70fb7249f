// Suites: the shipped ones load and cover every technique; bad suites fail with the file and the field named.
#include "validate/suite.hpp"

#include <gtest/gtest.h>

#include <set>

#include "tests/validate/test_helpers.hpp"

using namespace commsim;
using namespace commsim::validate;
using commsim::validate::test_support::TempDir;

TEST(Suite, EmulatedSuiteCoversEveryTechnique) {
  const Suite suite = load_suite("validate/suites/emulated.json");
  EXPECT_TRUE(suite.needs_cluster);
  std::set<std::string> techniques;
  for (const Comparison& c : suite.comparisons) techniques.insert(c.technique);
  for (const std::string& t : kTechniques) EXPECT_TRUE(techniques.count(t)) << "no comparison for " << t;
  std::set<std::string> topologies;
  for (const SuiteEntry& e : suite.entries) {
    topologies.insert(e.topology_name);
    EXPECT_EQ(e.ranks, 8) << e.name;  // 4 nodes x 2 ranks everywhere
  }
  EXPECT_EQ(topologies, (std::set<std::string>{"emulated-cpu-cluster", "emulated-cpu-cluster-100mbit"}));
}

TEST(Suite, SmokeSuiteIsSmall) {
  const Suite suite = load_suite("validate/suites/smoke.json");
  EXPECT_FALSE(suite.needs_cluster);
  EXPECT_LE(suite.entries.size(), 3u);
  EXPECT_EQ(suite.comparisons.size(), 1u);
}

// The overrides of an entry reach the scenario document (as `commsim run --set` applies them).
TEST(Suite, OverridesApply) {
  const Suite suite = load_suite("validate/suites/emulated.json");
  const SuiteEntry* hier = nullptr;
  for (const SuiteEntry& e : suite.entries)
    if (e.name == "hier-100m") hier = &e;
  ASSERT_NE(hier, nullptr);
  const Json doc = suite.document(*hier);
  EXPECT_TRUE(doc["strategy"]["use_hierarchical_allreduce"].get<bool>());
  EXPECT_EQ(Suite::set_arguments(*hier, 0).size(), 2u);
}

namespace {

// Writes a suite with one edit applied to a valid base and returns the error message of loading it.
std::string error_of(const std::function<void(Json&)>& edit) {
  TempDir dir("suite");
  Json suite = {
      {"name", "t"},
      {"scenarios",
       {{{"name", "a"}, {"scenario", std::filesystem::absolute("validate/suites/scenarios/mlp-2x2.json").string()}},
        {{"name", "b"},
         {"scenario", std::filesystem::absolute("validate/suites/scenarios/mlp-2x2.json").string()},
         {"set", {{"strategy.overlap", false}}}}}},
      {"comparisons", {{{"technique", "overlap"}, {"variant", "a"}, {"baseline", "b"}}}}};
  edit(suite);
  test_support::write(dir.file("suite.json"), suite);
  try {
    load_suite(dir.file("suite.json"));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Suite, ValidBaseLoads) {
  EXPECT_EQ(error_of([](Json&) {}), "");
}

// Each bad input, one by one: the message names the field.
TEST(Suite, ErrorsNameTheField) {
  EXPECT_NE(error_of([](Json& s) { s.erase("name"); }).find(": name: missing required field"), std::string::npos);
  EXPECT_NE(error_of([](Json& s) { s["bogus"] = 1; }).find("bogus"), std::string::npos);
  EXPECT_NE(error_of([](Json& s) { s["scenarios"] = Json::array(); }).find("scenarios: needs at least one scenario"),
            std::string::npos);
  EXPECT_NE(error_of([](Json& s) {
              s["scenarios"][1]["name"] = "a";
            }).find("scenarios[1].name: duplicate scenario name \"a\""),
            std::string::npos);
  EXPECT_NE(error_of([](Json& s) {
              s["comparisons"][0]["technique"] = "magic";
            }).find("comparisons[0].technique: unknown technique \"magic\""),
            std::string::npos);
  EXPECT_NE(error_of([](Json& s) {
              s["comparisons"][0]["baseline"] = "zzz";
            }).find("comparisons[0].baseline: no scenario named \"zzz\""),
            std::string::npos);
  EXPECT_NE(error_of([](Json& s) { s["comparisons"][0]["baseline"] = "a"; }).find("own baseline"), std::string::npos);
  EXPECT_NE(error_of([](Json& s) { s["scenarios"][0]["set"] = 3; }).find("scenarios[0].set: must be an object"),
            std::string::npos);
  // A bad override is reported by the scenario loader, prefixed with the suite entry.
  const std::string bad_override = error_of([](Json& s) {
    s["scenarios"][1]["set"]["strategy.fusion"] = {{"mode", "bogus"}};
  });
  EXPECT_NE(bad_override.find("scenarios[1] (b)"), std::string::npos) << bad_override;
  EXPECT_NE(bad_override.find("unknown fusion mode \"bogus\""), std::string::npos) << bad_override;
  EXPECT_NE(error_of([](Json& s) { s["scenarios"][0]["scenario"] = "/nonexistent.json"; }).find("cannot open file"),
            std::string::npos);
}
