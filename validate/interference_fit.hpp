// `commsim calibrate --interference FILE`: the topology library's `concurrent_slowdown` c (sim/step/interference.hpp)
// fitted to what scripts/gpu_interference.py measured on a GPU. Compute beside a collective of K channels runs at
// (S - K) / S / (1 + c) of its speed, so the slowdown measured beside K SM-holding blocks is S / (S - K) x (1 + c).
// c is the mean of slowdown / (S / (S - K)) - 1 over K = 1, 4, 16 of the chosen workload; K = 2, 8, 32 are
// predictions, each reported with its error; the fit is refused (not written) when one of them is off by more than
// kMaxPredictionError, or c falls outside [0, 1).
#pragma once

#include <string>
#include <vector>

#include "sim/core/json_fields.hpp"

namespace commsim::validate {

inline constexpr int kFitBlocks[] = {1, 4, 16};
inline constexpr int kPredictedBlocks[] = {2, 8, 32};
inline constexpr double kMaxPredictionError = 0.05;

struct InterferencePoint {
  int blocks = 0;
  double measured = 0, sm_share = 0, model = 0;  // slowdowns: measured, S / (S - K), S / (S - K) x (1 + c)
  bool fitted = false;                           // one of kFitBlocks (else a prediction)
};

struct InterferenceFit {
  std::string gpu, workload;
  int sms = 0;
  double concurrent_slowdown = 0;
  std::vector<InterferencePoint> points;  // fitted then predicted
  bool trusted = false;
  std::string why_not;  // when not trusted
};

// Reads the JSON scripts/gpu_interference.py writes (gpu, sms, rows of blocks and <workload>_slowdown) and fits c;
// a file without what the fit needs is an InputError naming the file and the field.
InterferenceFit fit_interference(const Json& doc, const std::string& file, const std::string& workload);

// The fit as `calibrate` prints it: c, then one line per K with measured, SM share, model and error.
std::string describe(const InterferenceFit& fit);

}  // namespace commsim::validate
