// The data-file lookup rule (sim/core/data_path.hpp): the current directory first, then $COMMSIM_DATA_DIR, then
// the installed data directory.
#include "sim/core/data_path.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "sim/core/json_fields.hpp"
#include "tests/sim/test_util.hpp"

namespace commsim::test {
namespace {

// Sets COMMSIM_DATA_DIR for one test and restores what was there.
class DataDirVariable {
 public:
  explicit DataDirVariable(const std::string& value) {
    if (const char* old = std::getenv("COMMSIM_DATA_DIR")) old_ = old, had_ = true;
    ::setenv("COMMSIM_DATA_DIR", value.c_str(), 1);
  }
  ~DataDirVariable() { had_ ? ::setenv("COMMSIM_DATA_DIR", old_.c_str(), 1) : ::unsetenv("COMMSIM_DATA_DIR"); }

 private:
  std::string old_;
  bool had_ = false;
};

TEST(DataPath, FallsBackToTheDataDirVariableOnlyWhenTheCurrentDirectoryLacksTheFile) {
  TempDir dir;  // a data dir with topologies/only-here.json and its own topologies/dgx-a100.json
  std::filesystem::create_directories(dir.path() / "topologies");
  std::ofstream(dir.path() / "topologies" / "only-here.json") << R"({"marker": "data dir"})";
  std::ofstream(dir.path() / "topologies" / "dgx-a100.json") << R"({"marker": "data dir"})";
  DataDirVariable variable(dir.path().string());
  // Tests run from the repository root, which has topologies/dgx-a100.json: the current directory wins.
  EXPECT_EQ(resolve_data_path("topologies/dgx-a100.json"), "topologies/dgx-a100.json");
  EXPECT_FALSE(read_json_file("topologies/dgx-a100.json").contains("marker"));
  // Not in the current directory: found under $COMMSIM_DATA_DIR.
  EXPECT_EQ(resolve_data_path("topologies/only-here.json"),
            (dir.path() / "topologies" / "only-here.json").lexically_normal().string());
  EXPECT_EQ(read_json_file("topologies/only-here.json").at("marker"), "data dir");
  // Found nowhere: unchanged, so that the error names what was written.
  EXPECT_EQ(resolve_data_path("topologies/nowhere.json"), "topologies/nowhere.json");
  // Absolute paths are never redirected.
  const std::string absolute = (dir.path() / "topologies" / "missing.json").string();
  EXPECT_EQ(resolve_data_path(absolute), absolute);
  EXPECT_EQ(data_dirs().front(), dir.path().lexically_normal().string());
}

}  // namespace
}  // namespace commsim::test
