#include "validate/fit.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace commsim::validate {
namespace {

using Iter = std::vector<Sample>::const_iterator;

// Statistics of a line over [first, last): sse and residual extremes.
void score(LineFit& f, Iter first, Iter last) {
  f.sse = 0;
  f.max_abs_rel = 0;
  for (Iter s = first; s != last; ++s) {
    const double r = (f.seconds(s->bytes) - s->seconds) / s->seconds;
    f.sse += r * r;
    f.max_abs_rel = std::max(f.max_abs_rel, std::abs(r));
  }
  f.rms_rel = f.samples ? std::sqrt(f.sse / static_cast<double>(f.samples)) : 0;
}

// Weighted least squares with weights 1/t^2. Dividing each equation t_i = a + g x_i by t_i gives the ordinary
// problem 1 = a u_i + g v_i with u_i = 1/t_i, v_i = x_i/t_i (g = 1/beta). Its 2x2 normal equations are solved
// with both columns scaled to unit norm, which keeps them well conditioned although x spans 8 B .. 64 MiB.
LineFit fit_range(Iter first, Iter last) {
  LineFit f;
  f.samples = static_cast<std::size_t>(last - first);
  if (f.samples == 0) {
    f.why_invalid = "no samples";
    return f;
  }
  f.min_bytes = first->bytes;
  f.max_bytes = first->bytes;
  double uu = 0, uv = 0, vv = 0, su = 0, sv = 0;
  for (Iter s = first; s != last; ++s) {
    const double u = 1 / s->seconds, v = s->bytes / s->seconds;
    uu += u * u, uv += u * v, vv += v * v, su += u, sv += v;
    f.min_bytes = std::min(f.min_bytes, s->bytes);
    f.max_bytes = std::max(f.max_bytes, s->bytes);
  }
  if (!(f.max_bytes > f.min_bytes)) {
    f.why_invalid = "all samples have the same size";
    return f;
  }
  const double cu = std::sqrt(uu), cv = std::sqrt(vv), rho = uv / (cu * cv), det = 1 - rho * rho;
  double a = 0, g = 0;
  if (det > 1e-14) {
    const double b0 = su / cu, b1 = sv / cv;
    a = (b0 - rho * b1) / det / cu;
    g = (b1 - rho * b0) / det / cv;
  }
  if (!(det > 1e-14) || a < 0) {
    // Latency below zero is not physical: fit the bandwidth alone through the origin.
    a = 0;
    g = sv / vv;
  }
  if (!(g > 0)) {
    f.why_invalid = "the time does not grow with the message size (no bandwidth term can be fitted)";
    return f;
  }
  f.alpha_s = a;
  f.beta_Bps = 1 / g;
  f.valid = true;
  score(f, first, last);
  if (f.samples > 2 && det > 1e-14) {
    const double s2 = f.sse / static_cast<double>(f.samples - 2);
    f.alpha_se_s = std::sqrt(s2 / (uu * det));
    f.inv_beta_se_s_per_B = std::sqrt(s2 / (vv * det));
  }
  return f;
}

struct Split {
  std::size_t at = 0;  // index of the first sample of the upper part
  double sse = std::numeric_limits<double>::infinity();
  LineFit lower, upper;
};

// The candidate split of [first, last) with the smallest total squared relative error; both parts keep
// `min_points` samples and a boundary never separates two samples of the same size.
Split best_split(Iter first, Iter last, std::size_t min_points) {
  Split best;
  const std::size_t n = static_cast<std::size_t>(last - first);
  for (std::size_t k = min_points; k + min_points <= n; ++k) {
    if (first[k].bytes == first[k - 1].bytes) continue;
    LineFit lower = fit_range(first, first + static_cast<std::ptrdiff_t>(k));
    LineFit upper = fit_range(first + static_cast<std::ptrdiff_t>(k), last);
    if (!lower.valid || !upper.valid) continue;
    if (lower.sse + upper.sse < best.sse) best = {k, lower.sse + upper.sse, lower, upper};
  }
  return best;
}

// A segment as a [begin, end) index range of the sorted samples, with its fit.
struct Part {
  std::size_t begin, end;
  LineFit line;
};

// Replaces three parts by the pair of breakpoints with the least total squared error (each part >= m samples).
void best_three_parts(const std::vector<Sample>& samples, std::size_t m, std::vector<Part>& parts) {
  const std::size_t n = samples.size();
  double best = parts[0].line.sse + parts[1].line.sse + parts[2].line.sse;
  const auto at = [&](std::size_t i) { return samples.cbegin() + static_cast<std::ptrdiff_t>(i); };
  for (std::size_t a = m; a + 2 * m <= n; ++a) {
    if (samples[a].bytes == samples[a - 1].bytes) continue;
    const LineFit first = fit_range(at(0), at(a));
    if (!first.valid || first.sse >= best) continue;
    for (std::size_t b = a + m; b + m <= n; ++b) {
      if (samples[b].bytes == samples[b - 1].bytes) continue;
      const LineFit second = fit_range(at(a), at(b)), third = fit_range(at(b), at(n));
      if (!second.valid || !third.valid || first.sse + second.sse + third.sse >= best * (1 - 1e-12)) continue;
      best = first.sse + second.sse + third.sse;
      parts = {{0, a, first}, {a, b, second}, {b, n, third}};
    }
  }
}

}  // namespace

LineFit fit_line(const std::vector<Sample>& samples) { return fit_range(samples.begin(), samples.end()); }

double PiecewiseFit::seconds(double bytes) const {
  std::size_t k = 0;
  while (k < breakpoints_bytes.size() && bytes >= breakpoints_bytes[k]) ++k;
  return segments.at(k).seconds(bytes);
}

PiecewiseFit fit_piecewise(std::vector<Sample> samples, const PiecewiseOptions& options) {
  std::stable_sort(samples.begin(), samples.end(), [](const Sample& a, const Sample& b) { return a.bytes < b.bytes; });
  PiecewiseFit fit;
  fit.samples = samples.size();
  std::vector<Part> parts{{0, samples.size(), fit_line(samples)}};
  while (parts.size() < options.max_segments) {
    // Among all segments, the split that removes the most squared error while passing the test.
    std::size_t chosen = parts.size();
    Split chosen_split;
    double chosen_gain = 0;
    for (std::size_t p = 0; p < parts.size(); ++p) {
      const Part& part = parts[p];
      if (!part.line.valid || part.line.rms_rel <= options.flat_rms) continue;
      const Iter b = samples.cbegin() + static_cast<std::ptrdiff_t>(part.begin);
      Split s = best_split(b, samples.cbegin() + static_cast<std::ptrdiff_t>(part.end), options.min_points);
      if (!std::isfinite(s.sse) || part.line.sse < options.min_sse_ratio * s.sse) continue;
      if (part.line.sse - s.sse > chosen_gain) {
        chosen = p;
        chosen_gain = part.line.sse - s.sse;
        chosen_split = s;
        chosen_split.at += part.begin;
      }
    }
    if (chosen == parts.size()) break;
    const Part old = parts[chosen];
    parts[chosen] = {old.begin, chosen_split.at, chosen_split.lower};
    parts.insert(parts.begin() + static_cast<std::ptrdiff_t>(chosen) + 1,
                 Part{chosen_split.at, old.end, chosen_split.upper});
  }
  // Greedy splitting can place the first breakpoint where one split is best although two splits are best elsewhere
  // (two regimes crossing near the middle): with three segments, every pair of breakpoints is tried.
  if (parts.size() == 3) best_three_parts(samples, options.min_points, parts);
  for (std::size_t p = 0; p < parts.size(); ++p) {
    fit.segments.push_back(parts[p].line);
    if (p > 0) fit.breakpoints_bytes.push_back(samples[parts[p].begin].bytes);
  }
  std::vector<double> predicted;
  for (const Sample& s : samples) predicted.push_back(fit.segments.front().valid ? fit.seconds(s.bytes) : 0);
  if (fit.segments.front().valid) {
    fit.rel_residuals = relative_residuals(samples, predicted);
    for (double r : fit.rel_residuals) {
      fit.sse += r * r;
      fit.max_abs_rel = std::max(fit.max_abs_rel, std::abs(r));
    }
    fit.rms_rel = samples.empty() ? 0 : std::sqrt(fit.sse / static_cast<double>(samples.size()));
    fit.r2 = r_squared(samples, predicted);
  }
  return fit;
}

std::vector<double> relative_residuals(const std::vector<Sample>& samples, const std::vector<double>& predicted_s) {
  std::vector<double> r(samples.size());
  for (std::size_t i = 0; i < samples.size(); ++i) r[i] = (predicted_s[i] - samples[i].seconds) / samples[i].seconds;
  return r;
}

double r_squared(const std::vector<Sample>& samples, const std::vector<double>& predicted_s) {
  double sw = 0, swt = 0;
  for (const Sample& s : samples) {
    sw += 1 / (s.seconds * s.seconds);
    swt += 1 / s.seconds;
  }
  const double mean = swt / sw;
  double res = 0, tot = 0;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const double t = samples[i].seconds;
    res += std::pow((t - predicted_s[i]) / t, 2);
    tot += std::pow((t - mean) / t, 2);
  }
  return tot > 0 ? 1 - res / tot : (res == 0 ? 1 : 0);
}

}  // namespace commsim::validate
