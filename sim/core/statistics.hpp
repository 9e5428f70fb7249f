// Summaries of measured step times that one slow step (a page fault, a scheduler hiccup on an oversubscribed
// machine) barely moves: the median, and half the interquartile range as the spread. Quantiles interpolate
// linearly between order statistics (Hyndman & Fan 1996 type 7, the default of R and NumPy).
#pragma once

#include <vector>

namespace commsim {

double quantile(std::vector<double> values, double q);  // q in [0, 1]; 0 for no values
double median(const std::vector<double>& values);
double half_interquartile_range(const std::vector<double>& values);

}  // namespace commsim
