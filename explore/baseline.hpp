// Regression baselines for `commsim regress`: a JSON file listing scenarios (paths relative to the baseline file,
// optional --set overrides and fidelity) with their stored step time and the commsim version that produced it.
//
//   {"commsim_version": "0.1.0", "tolerance_pct": 1,
//    "scenarios": [{"name": "resnet50-dgx-a100", "scenario": "../scenarios/resnet50-dgx-a100.json",
//                   "set": ["steps=3"], "fidelity": "analytical", "step_time_s": 0.0806}]}
//
// An entry with "backend" other than "sim" (mpi, nccl) holds a hardware measurement; it is compared with a result
// measured now (given to regress), and only a slowdown beyond both the tolerance and the stored
// step_time_spread_s (the measurement's noise band) counts as a regression.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "sim/result/result.hpp"

namespace commsim::explore {

struct BaselineEntry {
  std::string name;
  std::string scenario;       // as written in the file
  std::string scenario_path;  // resolved against the baseline's folder
  std::vector<std::string> sets;
  std::string fidelity = "analytical";
  std::string backend = "sim";
  std::string description;
  double step_time_s = 0;         // 0 only in a new entry, before its first --update
  double step_time_spread_s = 0;  // hardware: half the interquartile range of the steady steps
};

// The largest tolerance, in percent, a baseline file or --tolerance may give.
inline constexpr double kMaxTolerancePct = 1000;

struct Baseline {
  std::string file;
  std::string commsim_version;
  std::string description;
  double tolerance_pct = 1;
  std::vector<BaselineEntry> entries;
};

// Reads and validates a baseline. Throws InputError naming the file and field for malformed content, a missing
// scenario file, duplicate names, or (unless `updating`) a baseline from another commsim version or an entry
// without a stored step time.
Baseline load_baseline(const std::string& path, bool updating);
// The file's content with this commsim version, keys in a readable order.
nlohmann::ordered_json baseline_json(const Baseline& b);

enum class Verdict : std::uint8_t {
  Pass,        // within the tolerance (or the noise band)
  Faster,      // faster beyond the tolerance: passes; --update locks the gain in
  Regression,  // slower beyond the tolerance (and, for hardware, beyond the noise band)
  Skipped,     // hardware entry without a measurement now
};
std::string_view to_string(Verdict v);

struct Check {
  Verdict verdict = Verdict::Skipped;
  double now_s = 0, now_spread_s = 0;
  double change = 0;  // now / stored - 1
  std::string message;
};

// Compares a fresh step time with the stored one.
Check compare(const BaselineEntry& e, double now_s, double now_spread_s, double tolerance_pct);

// Re-evaluates every entry (simulation entries in parallel; hardware entries from `measured`, keyed by entry name)
// and compares it. `seconds[i]` receives the time spent on entry i.
std::vector<Check> check_baseline(const Baseline& b, double tolerance_pct,
                                  const std::map<std::string, Result>& measured, int jobs,
                                  std::vector<double>& seconds);

}  // namespace commsim::explore
