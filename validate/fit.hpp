// Least-squares fits of the alpha-beta model t(bytes) = alpha + bytes / beta to microbenchmark samples.
//
// The samples span 8 B .. 64 MiB, so times span four orders of magnitude: an unweighted fit would be decided by the
// largest sizes alone. Every fit here minimises the sum of squared RELATIVE residuals, sum_i ((t_i - t^_i) / t_i)^2,
// i.e. weighted least squares with weights 1 / t_i^2. MPI libraries switch protocols with the size (Open MPI: eager
// below btl_*_eager_limit, rendezvous above), so a class may show distinct regimes: fit_piecewise() finds the
// breakpoints from the data (the split minimising the total squared relative error over every candidate split).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace commsim::validate {

struct Sample {
  double bytes = 0;    // message size in bytes
  double seconds = 0;  // one-way time of one message, in seconds (> 0)
};

// One alpha-beta line and how well it fits its samples.
struct LineFit {
  double alpha_s = 0;              // latency alpha in seconds (>= 0: a negative intercept is refitted with alpha = 0)
  double beta_Bps = 0;             // bandwidth beta in bytes per second (> 0 when valid)
  double alpha_se_s = 0;           // standard error of alpha (from the weighted normal equations)
  double inv_beta_se_s_per_B = 0;  // standard error of 1/beta, in seconds per byte
  std::size_t samples = 0;
  double min_bytes = 0, max_bytes = 0;  // size range covered
  double sse = 0;                       // sum of squared relative residuals
  double rms_rel = 0;                   // sqrt(sse / samples)
  double max_abs_rel = 0;               // largest |t^ - t| / t
  bool valid = false;                   // false when the time does not grow with the size (no bandwidth term)
  std::string why_invalid;
  double seconds(double bytes) const { return alpha_s + bytes / beta_Bps; }
};

// Fits one line to `samples` (at least two distinct sizes). Never throws on data; `valid` says if it worked.
LineFit fit_line(const std::vector<Sample>& samples);

struct PiecewiseOptions {
  std::size_t min_points = 3;  // samples per segment (a line through fewer says nothing about its residuals)
  std::size_t max_segments = 3;
  // A split is kept only when it removes at least a third of the squared relative error of the segment it splits
  // (its error drops by a factor min_sse_ratio), and the
  // unsplit segment is off by more than `flat_rms` (RMS relative residual): below that one line already explains
  // the data and a breakpoint would only fit noise.
  double min_sse_ratio = 1.5;
  double flat_rms = 0.03;
};

struct PiecewiseFit {
  std::vector<LineFit> segments;          // in increasing size order
  std::vector<double> breakpoints_bytes;  // breakpoints_bytes[k] = smallest size of segments[k + 1]
  double sse = 0;                         // over all samples
  double rms_rel = 0, max_abs_rel = 0;
  double r2 = 0;  // weighted R^2 over all samples (see r_squared)
  std::size_t samples = 0;
  // Relative residuals (t^ - t) / t of every sample, in size order.
  std::vector<double> rel_residuals;
  double seconds(double bytes) const;  // the segment covering `bytes`
};

// Sorts the samples by size and fits one segment, then splits segments recursively at the best breakpoint while
// the split passes the test in `options`. Segment boundaries fall between measured sizes.
PiecewiseFit fit_piecewise(std::vector<Sample> samples, const PiecewiseOptions& options = {});

// Weighted coefficient of determination with the fit's weights 1/t^2:
//   R^2 = 1 - sum_i ((t_i - t^_i)/t_i)^2 / sum_i ((t_i - t_w)/t_i)^2,  t_w = sum(t_i / t_i^2) / sum(1 / t_i^2),
// i.e. the share of the (relative) variation of the times that the model explains.
double r_squared(const std::vector<Sample>& samples, const std::vector<double>& predicted_s);

// Relative residual (predicted - measured) / measured of every sample under a model.
std::vector<double> relative_residuals(const std::vector<Sample>& samples, const std::vector<double>& predicted_s);

}  // namespace commsim::validate
