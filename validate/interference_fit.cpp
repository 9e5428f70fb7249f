#include "validate/interference_fit.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>

#include "sim/core/error.hpp"

namespace commsim::validate {

InterferenceFit fit_interference(const Json& doc, const std::string& file, const std::string& workload) {
  JsonFields top(doc, file, "");
  InterferenceFit fit;
  fit.gpu = top.string("gpu");
  fit.workload = workload;
  // 1024: far above any GPU's SM count (an H100 SXM has 132, a B200 148), so a typo is caught.
  fit.sms = static_cast<int>(top.integer_or("sms", 0, 1, 1024));
  if (fit.sms == 0) top.fail("sms", "missing: the GPU's SM count is needed");
  const std::string key = workload + "_slowdown";
  std::map<int, double> slowdown;
  const Json& rows = top.array("rows");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::string where = "rows[" + std::to_string(i) + "]";
    if (!rows[i].is_object()) throw InputError(file, where, "must be an object");
    const Json* blocks = rows[i].contains("blocks") ? &rows[i].at("blocks") : nullptr;
    const Json* value = rows[i].contains(key) ? &rows[i].at(key) : nullptr;
    // Compared as 64 bits: a count past int's range must not wrap into [0, sms) (4294967297 read as 1 block).
    if (!blocks || !blocks->is_number_integer() || blocks->get<std::int64_t>() < 0 ||
        blocks->get<std::int64_t>() >= fit.sms)
      throw InputError(file, where + ".blocks", "must be an integer in [0, sms)");
    if (!value || !value->is_number() || !(value->get<double>() > 0))
      throw InputError(file, where + "." + key, "missing or not a positive number (is the workload's name right?)");
    if (!slowdown.emplace(blocks->get<int>(), value->get<double>()).second)
      throw InputError(file, where + ".blocks",
                       "repeats " + std::to_string(blocks->get<int>()) + " blocks of an earlier row");
  }
  auto share = [&](int k) { return static_cast<double>(fit.sms) / (fit.sms - k); };
  for (const int k : kFitBlocks) {
    if (!slowdown.count(k)) throw InputError(file, "rows", "no row of " + std::to_string(k) + " blocks (fitted)");
    fit.concurrent_slowdown += (slowdown[k] / share(k) - 1) / std::size(kFitBlocks);
  }
  auto add = [&](int k, bool fitted) {
    fit.points.push_back({k, slowdown[k], share(k), share(k) * (1 + fit.concurrent_slowdown), fitted});
  };
  for (const int k : kFitBlocks) add(k, true);
  for (const int k : kPredictedBlocks) {
    if (!slowdown.count(k)) throw InputError(file, "rows", "no row of " + std::to_string(k) + " blocks (predicted)");
    add(k, false);
  }
  fit.trusted = fit.concurrent_slowdown >= 0 && fit.concurrent_slowdown < 1;
  if (!fit.trusted) fit.why_not = "concurrent_slowdown outside [0, 1): compute sped up beside the blocks";
  for (const InterferencePoint& p : fit.points)
    if (fit.trusted && !p.fitted && std::abs(p.model / p.measured - 1) > kMaxPredictionError) {
      fit.trusted = false;
      char why[160];
      std::snprintf(why, sizeof why, "the fit predicts %d blocks %+.1f %% off (more than %.0f %%)", p.blocks,
                    100 * (p.model / p.measured - 1), 100 * kMaxPredictionError);
      fit.why_not = why;
    }
  return fit;
}

std::string describe(const InterferenceFit& fit) {
  std::string out;
  char line[200];
  std::snprintf(line, sizeof line, "%s, %d SMs, %s: concurrent_slowdown %.4f (fitted on 1, 4, 16 blocks)\n",
                fit.gpu.c_str(), fit.sms, fit.workload.c_str(), fit.concurrent_slowdown);
  out += line;
  out += "blocks  measured  SM share     model   error\n";
  for (const InterferencePoint& p : fit.points) {
    std::snprintf(line, sizeof line, "%6d  %8.3f  %8.3f  %8.3f  %+5.1f %%  %s\n", p.blocks, p.measured, p.sm_share,
                  p.model, 100 * (p.model / p.measured - 1), p.fitted ? "fitted" : "predicted");
    out += line;
  }
  return out;
}

}  // namespace commsim::validate
