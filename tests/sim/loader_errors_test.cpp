// The topology loader on bad input: one test per kind of mistake. Each must throw InputError (never crash or
// accept), and the message must name the file and the field ("<file>: <field>: <what>"), so that the CLI's one
// line tells the user where to look. Fixtures: tests/data/bad/*.json, each one mistake away from star4.json.
#include <sys/stat.h>

#include "sim/core/error.hpp"
#include "tests/sim/test_util.hpp"

namespace commsim::test {
namespace {

std::string bad(const std::string& name) { return "tests/data/bad/" + name; }

// Loads `path` (with an optional node override) and returns the InputError's message; fails if none is thrown.
std::string load_error(const std::string& path, int nodes = 0) {
  try {
    load_topology(path, nodes);
  } catch (const InputError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not an InputError: " << e.what();
    return "";
  }
  ADD_FAILURE() << path << " loaded without error";
  return "";
}

// The message starts with the file, then names the field, then says what is wrong.
void expect_names(const std::string& message, const std::string& file, const std::string& field,
                  const std::string& what) {
  EXPECT_EQ(message.rfind(file + ": ", 0), 0u) << message;
  EXPECT_NE(message.find(": " + field + ": "), std::string::npos) << "field " << field << " in: " << message;
  EXPECT_NE(message.find(what), std::string::npos) << "\"" << what << "\" in: " << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << "one line: " << message;
}

TEST(LoaderErrors, JsonSyntaxErrorNamesFileLineAndColumn) {
  // A comma is missing after "nodes": 1 on line 22; the parser trips on the next token, line 23 column 10.
  const std::string f = bad("syntax-error.json");
  const std::string m = load_error(f);
  EXPECT_EQ(m.rfind(f + ": invalid JSON: at line 23, column 10: syntax error", 0), 0u) << m;
}

TEST(LoaderErrors, MissingFile) {
  const std::string f = bad("no-such-file.json");
  EXPECT_EQ(load_error(f), f + ": cannot open file");
}

// A FIFO (a pipe, or /dev/stdin fed by one) would block the open until a writer came, and a device such as
// /dev/zero would be read until memory ran out: both are refused before anything is opened, naming the path.
TEST(LoaderErrors, NotARegularFile) {
  const std::string fifo =
      (std::filesystem::temp_directory_path() / ("commsim-fifo-" + std::to_string(getpid()) + ".json")).string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(load_error(fifo),
            fifo + ": is not a regular file (a FIFO or pipe): inputs are read whole, from files only");
  std::filesystem::remove(fifo);
  EXPECT_EQ(load_error("/dev/zero"),
            "/dev/zero: is not a regular file (a character device): inputs are read whole, "
            "from files only");
}

TEST(LoaderErrors, MissingField) {
  const std::string f = bad("missing-field.json");
  expect_names(load_error(f), f, "nodes", "missing required field");
}

TEST(LoaderErrors, MissingSourceOfALinkClass) {
  // Every number needs its source: a link class without "source" is rejected.
  const std::string f = bad("missing-source.json");
  expect_names(load_error(f), f, "link_classes.shm.source", "missing required field");
}

TEST(LoaderErrors, UnknownField) {
  const std::string f = bad("unknown-field.json");
  expect_names(load_error(f), f, "node.devices[1].colour", "unknown field");
}

TEST(LoaderErrors, WrongType) {
  const std::string f = bad("wrong-type.json");
  expect_names(load_error(f), f, "nodes", "must be an integer");
}

TEST(LoaderErrors, NegativeBandwidth) {
  const std::string f = bad("negative-bandwidth.json");
  expect_names(load_error(f), f, "link_classes.shm.bandwidth_Bps", "must be > 0");
}

TEST(LoaderErrors, ZeroBandwidth) {
  const std::string f = bad("zero-bandwidth.json");
  expect_names(load_error(f), f, "node.links[2].bandwidth_Bps", "must be > 0, got 0");
}

TEST(LoaderErrors, DisconnectedGpus) {
  // gpu0-gpu1 and gpu2-gpu3 are NVLink pairs with nothing between the pairs: no route from gpu0 to gpu2.
  const std::string f = bad("disconnected-gpus.json");
  expect_names(load_error(f), f, "node.links", "gpu0 and gpu2 are not connected");
}

TEST(LoaderErrors, UnknownLinkClass) {
  const std::string f = bad("unknown-link-class.json");
  expect_names(load_error(f), f, "link_classes.infiniband", "unknown link class");
}

TEST(LoaderErrors, UnknownLinkClassInALink) {
  const std::string f = bad("unknown-link-class-in-link.json");
  expect_names(load_error(f), f, "node.links[0].class", "unknown link class \"nvlnk\"");
}

TEST(LoaderErrors, UnknownDeviceKind) {
  const std::string f = bad("unknown-device-kind.json");
  expect_names(load_error(f), f, "node.devices[4].kind", "unknown device kind \"tpu\"");
}

TEST(LoaderErrors, DuplicateDevice) {
  const std::string f = bad("duplicate-device.json");
  expect_names(load_error(f), f, "node.devices[3].name", "duplicate device name \"r2\"");
}

TEST(LoaderErrors, CountTooLarge) {
  // nodes = 10^12 exceeds the 2^22 = 4194304 nodes a simulation accepts (and int).
  const std::string f = bad("too-many-nodes.json");
  expect_names(load_error(f), f, "nodes", "must be at most 4194304, got 1000000000000");
}

TEST(LoaderErrors, NodeOverrideTooLarge) {
  // The same limit through --nodes (load_topology's override): the option is to blame, not the file.
  EXPECT_EQ(load_error(shipped("dgx-a100"), 5'000'000), "--nodes: 5000000 exceeds the limit of 4194304 nodes");
}

TEST(LoaderErrors, FabricNoneWithSeveralNodes) {
  const std::string f = bad("fabric-none-multinode.json");
  expect_names(load_error(f), f, "fabric.kind", "is \"none\" but nodes = 2");
}

TEST(LoaderErrors, AstraNegativeBandwidth) {
  const std::string f = bad("astra-negative-bandwidth.json");
  expect_names(load_error(f), f, "astra_sim.bandwidth[1]", "must be > 0");
}

TEST(LoaderErrors, AstraDimensionCountsDisagree) {
  const std::string f = bad("astra-length-mismatch.json");
  expect_names(load_error(f), f, "astra_sim.npus_count", "has 1 entries, topology has 2");
}

}  // namespace
}  // namespace commsim::test
