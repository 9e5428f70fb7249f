// Inline SVG charts for the HTML reports: self-contained markup (no scripts, no fonts, no external references),
// XML-well-formed so that the pages parse as XHTML. Every data mark carries its number in data-value (in the
// chart's unit) and a <title> tooltip, so tests and readers can check the figures against the results.
#pragma once

#include <string>
#include <vector>

#include "sim/result/result.hpp"

namespace commsim::reports {

struct Series {
  std::string name;
  std::vector<double> x, y;
};

struct LineChart {
  std::string id;  // data-chart attribute, e.g. "step-time-vs-nodes"
  std::string title, x_label, y_label;
  bool log_x = false;  // log2 x axis (bucket sizes 1..256 MB)
  std::vector<Series> series;
};

// Horizontal stacked bars, one per label; values[i][k] is segment k of bar i.
struct StackedBars {
  std::string id, title, unit;
  std::vector<std::string> segments;
  std::vector<std::string> labels;
  std::vector<std::vector<double>> values;
};

// A step's timeline: one lane per stream, one box per event.
struct Timeline {
  std::string id, title;
  std::vector<std::string> lanes;  // lane i shows events with stream == i
  std::vector<TraceEvent> events;  // times in seconds; shown in ms
};

std::string svg(const LineChart& chart);
std::string svg(const StackedBars& chart);
std::string svg(const Timeline& chart);

// The categorical palette used by all charts (colour k of series or segment k).
const std::string& palette(std::size_t k);

}  // namespace commsim::reports
