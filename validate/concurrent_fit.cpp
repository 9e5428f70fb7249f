// fit_concurrent (validate/calibration.hpp): the two-stream sweep's step delay.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "sim/core/json_fields.hpp"
#include "sim/core/statistics.hpp"
#include "validate/calibration.hpp"

namespace commsim::validate {

namespace {

// t_k(S) at step delay d (validate/calibration.hpp, ConcurrentFit).
double together_s(const CollectiveFit& one, int streams, double reduce_Bps, double bytes, double delay_s) {
  const double p = one.ranks, steps = 2 * (p - 1);
  return steps * (one.alpha_step_s + streams * delay_s) + streams * steps / p * bytes / one.beta_Bps +
         (reduce_Bps > 0 ? (p - 1) / p * bytes / reduce_Bps : 0);
}

}  // namespace

ConcurrentFit fit_concurrent(const Json& bench, const std::string& bench_file, const CollectiveFit& collective,
                             bool collective_used, double reduce_Bps) {
  ConcurrentFit fit;
  const Json* sweep = bench.contains("allreduce_concurrent") ? &bench["allreduce_concurrent"] : nullptr;
  if (sweep == nullptr) {
    fit.why_not = "the bench has no allreduce_concurrent sweep";
    return fit;
  }
  JsonFields f(*sweep, bench_file, "allreduce_concurrent");
  fit.streams = static_cast<int>(f.integer("streams", 2, 64));
  const Json& samples = f.array("samples");
  for (std::size_t i = 0; i < samples.size(); ++i) {
    JsonFields s(samples[i], bench_file, "allreduce_concurrent.samples[" + std::to_string(i) + "]");
    fit.points.push_back({s.positive("bytes"), s.positive("seconds_per_repetition"), 0, false});
  }
  if (!collective_used) {
    fit.why_not = "the collective fit is not used, so there is no single-stream model to compare with";
    return fit;
  }
  std::stable_sort(fit.points.begin(), fit.points.end(),
                   [](const ConcurrentPoint& a, const ConcurrentPoint& b) { return a.bytes < b.bytes; });
  for (std::size_t i = 0; i < fit.points.size(); ++i) fit.points[i].fitted = i % 2 == 0;  // from the smallest
  const std::size_t fitted = (fit.points.size() + 1) / 2;
  if (fit.points.size() - fitted < 2) {
    fit.why_not = std::to_string(fit.points.size()) + " sizes, need at least 4 (2 fitted, 2 predicted)";
    return fit;
  }
  fit.present = true;
  const double steps = 2.0 * (collective.ranks - 1);
  std::vector<double> delays;
  for (const ConcurrentPoint& pt : fit.points)
    if (pt.fitted)
      delays.push_back((pt.measured_s - together_s(collective, fit.streams, reduce_Bps, pt.bytes, 0)) /
                       (fit.streams * steps));
  fit.step_delay_s = std::max(0.0, median(delays));
  std::vector<double> errors;
  for (ConcurrentPoint& pt : fit.points) {
    pt.model_s = together_s(collective, fit.streams, reduce_Bps, pt.bytes, fit.step_delay_s);
    if (!pt.fitted) errors.push_back(std::abs(pt.model_s / pt.measured_s - 1));
  }
  fit.predicted_median_abs_rel = median(errors);
  fit.trusted = fit.predicted_median_abs_rel <= collective.band_rel;
  if (!fit.trusted) {
    char text[160];
    std::snprintf(text, sizeof text,
                  "the predicted sizes' median |error| %.1f %% exceeds the collective fit's band %.1f %%",
                  100 * fit.predicted_median_abs_rel, 100 * collective.band_rel);
    fit.why_not = text;
  }
  return fit;
}

Json concurrent_evidence(const ConcurrentFit& fit) {
  Json out = {{"present", fit.present}, {"trusted", fit.trusted}, {"why_not", fit.why_not}};
  if (!fit.present) return out;
  Json points = Json::array();
  for (const ConcurrentPoint& pt : fit.points)
    points.push_back({{"bytes", pt.bytes},
                      {"measured_s", pt.measured_s},
                      {"model_s", pt.model_s},
                      {"rel_error", pt.model_s / pt.measured_s - 1},
                      {"fitted", pt.fitted}});
  out.update({{"streams", fit.streams},
              {"step_delay_s", fit.step_delay_s},
              {"predicted_median_abs_rel_error", fit.predicted_median_abs_rel},
              {"points", points},
              {"model",
               "k rings of S bytes on p ranks at once: t = 2(p-1)(alpha + k d) + k 2(p-1)/p S / beta + (p-1)/p S / "
               "gamma; d fitted on every other size from the smallest (median), the rest predicted"}});
  return out;
}

}  // namespace commsim::validate
