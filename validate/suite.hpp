// Validation suites (validate/suites/*.json): scenarios to measure on the hardware backend and predict with the
// calibrated topology, and which of them are a technique's variant of which baseline. Format: docs/calibration.md.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "sim/core/json_fields.hpp"

namespace commsim::validate {

// The techniques a suite can judge (the seeds' list); each entry compares a variant with its baseline.
inline const std::vector<std::string> kTechniques = {"fusion", "overlap",  "streams",    "hierarchy",
                                                     "dgc",    "localsgd", "compression"};

struct SuiteEntry {
  std::string name;
  std::string scenario;       // resolved against the suite's folder
  Json set = Json::object();  // dotted.key -> value, applied to the scenario (as --set)
  std::string note;           // what the scenario is (printed in the report)
  std::string topology_path;  // resolved from the scenario after overrides
  std::string topology_name;
  int ranks = 0;
};

// A technique's speedup: baseline step time / variant step time, predicted and measured.
struct Comparison {
  std::string technique;          // one of kTechniques
  std::string variant, baseline;  // scenario names of the suite
  std::string note;
};

struct Suite {
  std::string file;
  std::string name, description;
  bool needs_cluster =
      false;               // the suite is meaningless on loopback (shaped links); validate refuses without --cluster
  int steps = 0;           // > 0: every scenario's step count
  int warmup = 2;          // steps the backend runs first and does not count
  int runs = 1;            // measured runs per scenario, interleaved (run 1 of every scenario, then run 2, ...)
  double timeout_s = 300;  // per hardware run
  std::string bench_max_bytes = "16M";  // largest size when validate runs the calibration itself
  std::map<std::string, std::string> bench_max_bytes_by_topology;  // per topology name, where it differs
  int bench_repeats = 3;                                           // and how many microbenchmark runs it merges
  std::vector<SuiteEntry> entries;
  std::vector<Comparison> comparisons;
  // The scenario document of entry i after its overrides (and the suite's steps).
  Json document(const SuiteEntry& e) const;
  // One --set argument per override, as `commsim run` takes them.
  static std::vector<std::string> set_arguments(const SuiteEntry& e, int steps);
};

// Reads and checks a suite: fields typed, names unique, comparisons name known techniques and scenarios of the
// suite, every scenario loads and plans (with its overrides). Throws InputError naming the
// suite file and the field (`commsim validate` turns it into exit 2 and one line).
Suite load_suite(const std::string& path);

}  // namespace commsim::validate
