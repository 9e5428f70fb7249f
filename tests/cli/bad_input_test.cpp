// The bad-input catalogue (tests/data/bad/catalogue.json), one ctest test per case, run on the built `commsim`.
// Each case gives the command line, the input files it needs (shipped files, files of tests/data/bad/, or files
// written for the case: JSON, raw text, a shipped file with a JSON merge patch, deep nesting) and the words the
// error must contain. The contract checked for every case that expects exit code 2 (README "Commands"):
//   - exit code 2, nothing on stdout (unless "prints_before_writing": the result's table came before the failed
//     write of its file);
//   - stderr is exactly one line, containing every expected word (the file, the field, what is wrong);
//   - no "internal error" and no number of 40 digits or more (CLI11 prints DBL_MAX in full);
//   - the case's folder holds exactly the files written for it: a refused command writes nothing.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct Case {
  std::string name;
  json spec;
};

// ctest shows the case's name rather than its bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<Case> load_cases() {
  const json table = json::parse(read_text(fs::path(COMMSIM_SOURCE_DIR) / "tests/data/bad/catalogue.json"));
  std::vector<Case> cases;
  for (const json& c : table.at("cases")) cases.push_back({c.at("name").get<std::string>(), c});
  return cases;
}

// A folder for one case, removed afterwards whatever the outcome.
class CaseDir {
 public:
  explicit CaseDir(const std::string& name) {
    path_ = fs::temp_directory_path() / ("commsim-bad-" + name + "-" + std::to_string(::getpid()));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~CaseDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (auto at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

// "{dir}" is the case's folder, "{src}" the source root.
std::string expand(const std::string& text, const fs::path& dir) {
  return replace_all(replace_all(text, "{dir}", dir.string()), "{src}", COMMSIM_SOURCE_DIR);
}

// The case's entry `key`, or an empty object (kept alive by the caller: a range-for over a temporary's items() would
// outlive it).
const json& section(const json& spec, const std::string& key) {
  static const json empty = json::object();
  return spec.contains(key) ? spec.at(key) : empty;
}

// Writes the case's input files into `dir`; returns their names.
std::set<std::string> write_inputs(const json& spec, const fs::path& dir) {
  std::set<std::string> names;
  for (auto& [name, doc] : section(spec, "json_files").items()) {
    std::ofstream(dir / name) << expand(doc.dump(2), dir);
    names.insert(name);
  }
  for (auto& [name, text] : section(spec, "text_files").items()) {
    std::ofstream(dir / name) << text.get<std::string>();
    names.insert(name);
  }
  // A shipped file with an RFC 7386 merge patch applied ("null" deletes a field).
  for (auto& [name, p] : section(spec, "patched_files").items()) {
    json doc = json::parse(read_text(fs::path(COMMSIM_SOURCE_DIR) / p.at("from").get<std::string>()));
    doc.merge_patch(p.at("patch"));
    std::ofstream(dir / name) << expand(doc.dump(2), dir);
    names.insert(name);
  }
  // Arrays nested `depth` deep: [[[...]]].
  for (auto& [name, depth] : section(spec, "nested_files").items()) {
    const auto n = depth.get<std::size_t>();
    std::ofstream(dir / name) << std::string(n, '[') + std::string(n, ']');
    names.insert(name);
  }
  for (auto& [name, unused] : section(spec, "folders").items()) {
    fs::create_directories(dir / name);
    names.insert(name);
  }
  return names;
}

std::set<std::string> entries(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

class BadInput : public ::testing::TestWithParam<Case> {};

TEST_P(BadInput, FailsCleanly) {
  const json& spec = GetParam().spec;
  CaseDir dir(GetParam().name);
  const std::set<std::string> inputs = write_inputs(spec, dir.path());
  const fs::path out = dir.path() / ".stdout", err = dir.path() / ".stderr";
  const std::string args = expand(spec.at("args").get<std::string>(), dir.path());
  // "stdout_to": where standard output goes instead of a file the test reads (/dev/full: a write that fails).
  const std::string stdout_to = spec.value("stdout_to", out.string());
  const std::string command = "cd '" + std::string(COMMSIM_SOURCE_DIR) + "' && '" + COMMSIM_CLI_PATH + "' " + args +
                              " >'" + stdout_to + "' 2>'" + err.string() + "' </dev/null";
  const int status = std::system(command.c_str());
  ASSERT_TRUE(WIFEXITED(status)) << "killed by a signal: " << command;
  const std::string stdout_text = fs::exists(out) ? read_text(out) : "", stderr_text = read_text(err);
  fs::remove(out);
  fs::remove(err);

  const int expected_exit = spec.value("exit", 2);
  EXPECT_EQ(WEXITSTATUS(status), expected_exit) << args << "\n" << stderr_text;
  EXPECT_EQ(entries(dir.path()), inputs) << "the command left files behind or removed its inputs";
  if (expected_exit != 2) return;
  if (!spec.value("prints_before_writing", false)) {
    EXPECT_EQ(stdout_text, "") << args;
  }
  ASSERT_FALSE(stderr_text.empty()) << args;
  EXPECT_EQ(stderr_text.find('\n'), stderr_text.size() - 1) << "not exactly one line:\n" << stderr_text;
  const std::string line = replace_all(stderr_text, dir.path().string() + "/", "");
  for (const json& word : spec.at("words"))
    EXPECT_NE(line.find(word.get<std::string>()), std::string::npos)
        << "\"" << word.get<std::string>() << "\" not in: " << line;
  EXPECT_EQ(line.find("internal error"), std::string::npos) << line;
  EXPECT_FALSE(std::regex_search(line, std::regex("[0-9]{40}"))) << "a number nobody can read: " << line;
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string n = info.param.name;
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(Catalogue, BadInput, ::testing::ValuesIn(load_cases()), case_name);

// The table itself: at least 150 cases, names unique (each is a ctest test name), every case states its words.
TEST(BadInputCatalogue, IsComplete) {
  const std::vector<Case> cases = load_cases();
  EXPECT_GE(cases.size(), 150u);
  std::set<std::string> names;
  for (const Case& c : cases) {
    EXPECT_TRUE(names.insert(case_name({c, 0})).second) << "duplicate case name " << c.name;
    if (c.spec.value("exit", 2) == 2) {
      EXPECT_FALSE(c.spec.at("words").empty()) << c.name;
    }
  }
}

}  // namespace
