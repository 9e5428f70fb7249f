// The CLI on the built `commsim` executable: the bad-input contract (exit code 2 and exactly one line on stderr that
// names the file, when the mistake is in a file, and the field; nothing on stdout) and options checked end to end.
#include "tests/sim/test_util.hpp"

namespace commsim::test {
namespace {

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cli_available()) GTEST_SKIP() << "the commsim executable was not built";
  }
};

// Exit 2, stdout empty, stderr one line (ending in its newline) containing every one of `names`.
void expect_bad_input(const CliResult& r, std::initializer_list<std::string> names) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.out, "");
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(r.err.back(), '\n');
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "more than one line:\n" << r.err;
  for (const std::string& n : names) EXPECT_NE(r.err.find(n), std::string::npos) << n << " not in: " << r.err;
}

TEST_F(Cli, GoodInputExitsZero) {
  const CliResult r = run_cli("collective --topology tests/data/star4.json --sizes 1M");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_NE(r.out.find("1048576"), std::string::npos) << r.out;
}

TEST_F(Cli, MissingFieldInTopologyFile) {
  expect_bad_input(run_cli("collective --topology tests/data/bad/missing-field.json --sizes 1M"),
                   {"tests/data/bad/missing-field.json", "nodes", "missing required field"});
}

TEST_F(Cli, UnknownFieldInTopologyFile) {
  expect_bad_input(run_cli("collective --topology tests/data/bad/unknown-field.json"),
                   {"tests/data/bad/unknown-field.json", "node.devices[1].colour"});
}

TEST_F(Cli, ZeroBandwidthInTopologyFile) {
  expect_bad_input(run_cli("collective --topology tests/data/bad/zero-bandwidth.json"),
                   {"tests/data/bad/zero-bandwidth.json", "node.links[2].bandwidth_Bps"});
}

TEST_F(Cli, JsonSyntaxErrorInTopologyFile) {
  expect_bad_input(run_cli("collective --topology tests/data/bad/syntax-error.json"),
                   {"tests/data/bad/syntax-error.json", "line 23, column 10"});
}

TEST_F(Cli, TooManyNodesInTopologyFile) {
  expect_bad_input(run_cli("collective --topology tests/data/bad/too-many-nodes.json"),
                   {"tests/data/bad/too-many-nodes.json", "nodes"});
}

TEST_F(Cli, MissingTopologyFile) {
  expect_bad_input(run_cli("collective --topology tests/data/bad/no-such-file.json"),
                   {"tests/data/bad/no-such-file.json", "cannot open"});
}

TEST_F(Cli, BadSizes) {
  for (const char* sizes : {"12Q", "0", "1G:1K", "abc", "1M,,2M"}) {
    SCOPED_TRACE(sizes);
    expect_bad_input(run_cli(std::string("collective --topology tests/data/star4.json --sizes '") + sizes + "'"),
                     {"--sizes"});
  }
}

TEST_F(Cli, BadOp) {
  expect_bad_input(run_cli("collective --topology tests/data/star4.json --op allreduse"), {"--op", "allreduse"});
}

TEST_F(Cli, BadAlgo) {
  expect_bad_input(run_cli("collective --topology tests/data/star4.json --algo rign"), {"--algo", "rign"});
  // Given but empty is not the default: it names no algorithm.
  expect_bad_input(run_cli("collective --topology tests/data/star4.json --algo ''"), {"--algo", "unknown algorithm"});
}

TEST_F(Cli, AlgorithmThatDoesNotSupportTheCollective) {
  expect_bad_input(run_cli("collective --topology tests/data/star4.json --op broadcast --algo tree"),
                   {"--algo", "tree"});
}

TEST_F(Cli, BadFidelity) {
  expect_bad_input(run_cli("collective --topology tests/data/star4.json --fidelity packet"), {"--fidelity", "packet"});
}

TEST_F(Cli, BadNodeCount) {
  // Parsed by CLI11: still exit 2 and one line.
  expect_bad_input(run_cli("collective --topology topologies/dgx-a100.json --nodes -3"), {"--nodes"});
}

// An output file that cannot be written is found when the command line is parsed, before any work: no table on
// stdout, one line naming the option. Every command that writes a file checks it the same way.
TEST_F(Cli, UnwritableOutputFile) {
  expect_bad_input(run_cli("simulate scenarios/emulated-tiny.json --trace /nonexistent-dir/trace.json"),
                   {"--trace", "/nonexistent-dir"});
  expect_bad_input(run_cli("simulate scenarios/emulated-tiny.json --json /nonexistent-dir/result.json"),
                   {"--json", "/nonexistent-dir"});
  expect_bad_input(run_cli("collective --topology tests/data/star4.json --sizes 1M --json /nonexistent-dir/rows.json"),
                   {"--json", "/nonexistent-dir"});
  expect_bad_input(run_cli("simulate scenarios/emulated-tiny.json --json tests"), {"--json", "is a directory"});
  expect_bad_input(run_cli("compare scenarios/demo-techniques.json --json /nonexistent-dir/all.json"),
                   {"--json", "/nonexistent-dir"});
}

// Without --algo, `collective` on an NCCL topology is NCCL's own choice, as an nccl-tests run without NCCL_ALGO is;
// elsewhere the ring. One DGX H100 at 32 MiB, NCCL 2.18's estimates (its tuning table, `--tuning-table`): NVLS
// Simple 23.0 us + 33554432 B / 274.0 GB/s = 145.5 us, ring LL128 40.6 + 172.5 = 213.1 us, ring Simple 56.0 + 158.7 =
// 214.7 us, trees slower still: NVLS. `--algo ring` forces the ring as NCCL_ALGO=ring does.
TEST_F(Cli, WithoutAlgoNcclPicksAsNcclTestsRunsDo) {
  const TempDir dir;
  const auto algorithm = [&](const std::string& args) {
    const std::string rows = (dir.path() / "rows.json").string();
    const CliResult r = run_cli("collective --sizes 32M --json " + rows + " " + args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return Json::parse(read_file(rows))["rows"][0]["algorithm"].get<std::string>();
  };
  EXPECT_EQ(algorithm("--topology " + shipped("dgx-h100") + " --nodes 1"), "nvls");
  EXPECT_EQ(algorithm("--topology " + shipped("dgx-h100") + " --nodes 1 --algo ring"), "ring");
  EXPECT_EQ(algorithm("--topology tests/data/star4.json"), "ring");
}

// --nccl-version prices the topology's machine with another NCCL release: the rows are those of the same file with
// that release as its library.version (the only field that differs), and 2.18 and 2.26 differ where their tables
// do (2 DGX H100 nodes at 1 - 8 MiB: 2.26's NVLS-tree constants, libraries/nccl.json).
TEST_F(Cli, NcclVersionPricesAnotherRelease) {
  const auto data_rows = [](const CliResult& r) {
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::string rows;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);)
      if (!line.empty() && line[0] != '#') rows += line + "\n";
    return rows;
  };
  const std::string args = " --nodes 2 --algo auto --sizes 1M:8M --format commsim";
  Json doc = Json::parse(read_file(shipped("dgx-h100")));
  ASSERT_EQ(doc["library"]["version"], "2.18");
  doc["library"]["version"] = "2.26.2";
  const std::string copy = write_temp_json("dgx-h100-nccl-2.26.2.json", doc);
  const CliResult released = run_cli("collective --topology " + shipped("dgx-h100") + " --nccl-version 2.26.2" + args);
  // libraries/nccl.json has a table for 2.26: 2.26.2 is priced with it.
  EXPECT_NE(released.out.find("# library nccl 2.26.2 (constants of 2.26):"), std::string::npos) << released.out;
  const std::string overridden = data_rows(released);
  EXPECT_EQ(overridden, data_rows(run_cli("collective --topology " + copy + args)));
  EXPECT_NE(overridden, data_rows(run_cli("collective --topology " + shipped("dgx-h100") + args)));
}

// A scenario's nccl_version does for every collective of a step what --nccl-version does for one: the printed
// step equals that of the scenario on a copy of its topology naming that release, and differs from the topology's
// own 2.18 (Llama 3 8B without sharding allreduces its buckets, which 2.26's constants price differently).
TEST_F(Cli, ScenarioNcclVersionPricesAnotherRelease) {
  Json doc = Json::parse(read_file(shipped("dgx-h100")));
  doc["library"]["version"] = "2.26.2";
  const std::string copy = write_temp_json("dgx-h100-nccl-2.26.2.json", doc);
  const std::string scenario = "simulate scenarios/llama3-8b-dgx-h100.json --set 'strategy.sharding={\"stage\":0}'";
  const CliResult released = run_cli(scenario + " --set 'nccl_version=\"2.26.2\"'");
  const CliResult copied = run_cli(scenario + " --set 'topology=\"" + copy + "\"'");
  const CliResult own = run_cli(scenario);
  ASSERT_EQ(released.exit_code, 0) << released.err;
  EXPECT_EQ(released.out, copied.out);
  EXPECT_NE(released.out, own.out);
}

TEST_F(Cli, BadNcclVersion) {
  // 2.9 is older than the oldest constants table (2.18): numerically 2.9 < 2.18 (minor 9 < 18).
  expect_bad_input(run_cli("collective --topology topologies/dgx-h100.json --nccl-version 2.9 --sizes 1M"),
                   {"--nccl-version", "\"2.9\"", "2.18"});
  expect_bad_input(run_cli("collective --topology topologies/dgx-h100.json --nccl-version latest --sizes 1M"),
                   {"--nccl-version", "\"latest\""});
  expect_bad_input(run_cli("collective --topology tests/data/star4.json --nccl-version 2.26 --sizes 1M"),
                   {"--nccl-version", "tests/data/star4.json", "no NCCL library"});
}

TEST_F(Cli, ValidateTraceRefusesAZeroLengthStep) {
  // validate --trace's error is (predicted - traced) / traced: a ProfilerStep of 0 us was not measured, and gives
  // exit 2 with one line naming the trace and the step's dur instead of a 0.0 % error.
  const std::string trace = write_temp_json(
      "zero-step.json", Json::parse(R"({"traceEvents": [{"ph":"X","name":"ProfilerStep#1","ts":0,"dur":0}]})"));
  expect_bad_input(run_cli("validate --trace " + trace + " scenarios/emulated-tiny.json"),
                   {trace, "traceEvents[0].dur", "must last > 0 us"});
}

}  // namespace
}  // namespace commsim::test
