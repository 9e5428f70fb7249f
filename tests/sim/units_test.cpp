// Checked time arithmetic (sim/core/units.hpp), the JSON input scan (sim/core/json_fields.cpp) and the size limits
// of the topology loader: what cannot be represented or would exhaust the machine is an InputError naming it.
#include "sim/core/units.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "sim/core/json_fields.hpp"
#include "sim/core/limits.hpp"
#include "sim/topology/topology.hpp"
#include "tests/sim/test_util.hpp"

namespace commsim {
namespace {

using test::error_of;

TEST(Units, SecondsToPicosecondsUpToOneHundredDays) {
  // 100 days = 8 640 000 s = 8.64e18 ps, the documented limit, below int64's 9.22e18.
  EXPECT_EQ(seconds_to_ps(kMaxSimulatedSeconds), kMaxTimePs);
  EXPECT_EQ(kMaxTimePs, 8'640'000'000'000'000'000);
  // 1 us is 1e6 ps; rounding up keeps a non-zero duration non-zero.
  EXPECT_EQ(seconds_to_ps(1e-6), 1'000'000);
  EXPECT_EQ(seconds_to_ps(1e-15), 1);
}

TEST(Units, InlineCeilingEqualsStdCeilOverTheWholeRange) {
  // ceil_ps replaces static_cast<TimePs>(std::ceil(x)) on the engine's hot path; the two must agree on every value
  // the conversions produce: (-1e-6, 8.64e18]. Whole numbers, their neighbours one ulp away, halves, values past 2^53
  // (where every double is whole) and random magnitudes over the range.
  std::vector<double> values = {-1e-6,
                                -0.0,
                                0.0,
                                1e-300,
                                0.5,
                                1.0,
                                1.5,
                                999'999.999'999,
                                1e6,
                                9007199254740991.0,
                                9007199254740992.0,
                                9007199254740994.0,
                                8.64e18};
  for (double whole = 1; whole < 8e18; whole *= 3.7) {
    const double w = std::floor(whole);
    for (double v : {w, std::nextafter(w, 0.0), std::nextafter(w, 1e19), w + 0.5}) values.push_back(v);
  }
  std::mt19937_64 random(7);
  std::uniform_real_distribution<double> exponent(-6, 18.9);
  for (int i = 0; i < 100'000; ++i) values.push_back(std::pow(10.0, exponent(random)));
  for (double v : values) {
    if (v > 8.64e18) continue;
    ASSERT_EQ(units_detail::ceil_ps(v), static_cast<TimePs>(std::ceil(v))) << v;
  }
}

TEST(Units, SecondsThatCannotBeRepresentedAreNamed) {
  for (double s : {kMaxSimulatedSeconds * 1.001, -1.0, std::nan(""), std::numeric_limits<double>::infinity(), 1e300}) {
    SCOPED_TRACE(s);
    EXPECT_NE(error_of([&] { seconds_to_ps(s, "compute time of fwd conv1"); }).find("compute time of fwd conv1"),
              std::string::npos);
  }
}

TEST(Units, TransferTimeIsCheckedBeforeConversion) {
  // 1 GB at 125 B/s (a bandwidth meant as 125 MB/s) takes 8e6 s = 92.6 days: representable.
  EXPECT_EQ(transfer_ps(1e9, 125), 8'000'000 * kPsPerSecond);
  // At 100 B/s it takes 1e7 s = 115.7 days: an error that suggests the unit, not a wrapped negative time.
  EXPECT_NE(error_of([] { transfer_ps(1e9, 100); }).find("bytes per second"), std::string::npos);
  // A vanishing rate (1e-300 B/s) or none at all is the same error.
  EXPECT_NE(error_of([] { transfer_ps(1, 1e-300); }), "");
  EXPECT_NE(error_of([] { transfer_ps(1, 0); }), "");
  EXPECT_EQ(transfer_ps(0, 0), 0);  // nothing to move takes no time whatever the rate
}

TEST(Units, SumsStopAtTheLimitWithoutOverflowing) {
  EXPECT_EQ(add_ps(kMaxTimePs - 1, 1), kMaxTimePs);
  // kMaxTimePs + kMaxTimePs would overflow int64 (1.73e19 > 9.22e18): the check compares against the headroom.
  EXPECT_NE(error_of([] { add_ps(kMaxTimePs, kMaxTimePs); }), "");
  EXPECT_NE(error_of([] { add_ps(kMaxTimePs, 1); }), "");
  EXPECT_NE(error_of([] { add_ps(0, -1); }), "");
}

TEST(Units, RepeatedDurationsStopAtTheLimitWithoutOverflowing) {
  EXPECT_EQ(times_ps(6, 5), 30);
  EXPECT_EQ(times_ps(1'000'000'000, 0), 0);  // no time, however often
  EXPECT_EQ(times_ps(1, kMaxTimePs), kMaxTimePs);
  // 2 x kMaxTimePs = 1.73e19 would wrap int64 (max 9.22e18): refused by comparing with kMaxTimePs / duration.
  EXPECT_NE(error_of([] { times_ps(2, kMaxTimePs); }), "");
  // A ring allreduce of 4 ranks has 6 steps; a 1 MiB piece at 0.25 B/s takes 4 194 304 s (48.5 days) per hop, so
  // the 6 steps take 291 days: 2.5e19 ps, which used to wrap to a negative time. Now an error naming the range.
  const TimePs hop = transfer_ps(1048576, 0.25);
  EXPECT_EQ(hop, 4'194'304 * kPsPerSecond);
  EXPECT_NE(error_of([&] { times_ps(6, hop); }).find("100 days"), std::string::npos);
  EXPECT_NE(error_of([] { times_ps(-1, 1); }), "");
}

TEST(JsonInput, NestingIsBoundedAt64Levels) {
  auto nested = [](int depth) { return std::string(depth, '[') + std::string(depth, ']'); };
  EXPECT_NO_THROW(parse_json_text(nested(kMaxJsonDepth), "x.json"));
  EXPECT_NE(error_of([&] { parse_json_text(nested(kMaxJsonDepth + 1), "x.json"); }).find("nested deeper than 64"),
            std::string::npos);
  // 100 000 levels: refused by the scan before any document (whose destructor would recurse) is built.
  EXPECT_NE(error_of([&] { parse_json_text(nested(100000), "x.json"); }), "");
}

// The one-line contract holds whatever the input holds: a key with a line break (found by fuzz/compare_fuzzer)
// or any other control character is written escaped, as JSON writes it.
TEST(JsonInput, ErrorsStayOneLineWhateverTheKeysHold) {
  EXPECT_EQ(std::string(InputError("a.json", "descr\nption", "unknown field").what()),
            "a.json: descr\\nption: unknown field");
  EXPECT_EQ(std::string(InputError("x\ty\r\x01\x7f").what()), "x\\ty\\r\\u0001\\u007f");
  const std::string duplicate = error_of([] { parse_json_text(R"({"a": {"b\n": 1, "b\n": 2}})", "x.json"); });
  EXPECT_NE(duplicate.find("duplicate key"), std::string::npos) << duplicate;
  EXPECT_EQ(duplicate.find('\n'), std::string::npos) << duplicate;
}

TEST(JsonInput, DuplicateKeysAreRefusedWithTheirPath) {
  EXPECT_EQ(error_of([] { parse_json_text(R"({"a": {"b": 1, "b": 2}})", "x.json"); }),
            "x.json: a.b: duplicate key (each key may appear once per object)");
  // The path counts array elements: the second element of "list" holds the duplicate.
  EXPECT_EQ(error_of([] { parse_json_text(R"({"list": [{"k": 1}, {"k": 1, "k": 2}]})", "x.json"); }),
            "x.json: list[1].k: duplicate key (each key may appear once per object)");
  // The same key in two different objects is no duplicate.
  EXPECT_NO_THROW(parse_json_text(R"({"a": {"k": 1}, "b": {"k": 1}})", "x.json"));
}

TEST(JsonInput, NumbersBeyondDoubleAreNamed) {
  EXPECT_EQ(error_of([] { parse_json_text(R"({"a": [1, 1e400]})", "x.json"); }),
            "x.json: a[1]: number 1e400 is beyond the range of a double");
}

TEST(JsonInput, OptionValuesMayBePlainStrings) {
  EXPECT_FALSE(parse_json_value("resnet", "--set name").has_value());
  EXPECT_EQ(parse_json_value("[1, 2]", "--set x")->size(), 2u);
  EXPECT_NE(error_of([] { parse_json_value(R"({"a": 1, "a": 2})", "--set x"); }).find("--set x: a: duplicate key"),
            std::string::npos);
}

// A node of `ranks` GPUs on one NVSwitch.
std::string node_of(int ranks, const test::TempDir& dir) {
  Json devices = Json::array(), links = Json::array();
  for (int g = 0; g < ranks; ++g) {
    devices.push_back({{"name", "g" + std::to_string(g)}, {"kind", "gpu"}});
    links.push_back({{"a", "g" + std::to_string(g)}, {"b", "sw"}, {"class", "nvswitch"}});
  }
  devices.push_back({{"name", "sw"}, {"kind", "nvswitch"}});
  const Json t = {{"name", "wide"},
                  {"link_classes", {{"nvswitch", {{"latency_s", 1e-6}, {"bandwidth_Bps", 1e11}, {"source", "test"}}}}},
                  {"node", {{"devices", devices}, {"links", links}}},
                  {"nodes", 1},
                  {"fabric", {{"kind", "none"}}}};
  const std::string path = (dir.path() / "wide.json").string();
  std::ofstream(path) << t.dump();
  return path;
}

TEST(TopologyLimits, RanksPerNodeAreCheckedBeforeAnyTableIsBuilt) {
  const test::TempDir dir;
  // 1024 ranks is the limit itself: accepted.
  EXPECT_EQ(load_topology(node_of(1024, dir))->ranks(), 1024);
  // 1025: refused by the loader, naming the devices (per-node tables would hold 1025^2 paths).
  EXPECT_NE(error_of([&] {
              load_topology(node_of(1025, dir));
            }).find("node.devices: 1025 ranks (gpu, cpu_rank) exceed the limit of 1024"),
            std::string::npos);
}

}  // namespace
}  // namespace commsim
