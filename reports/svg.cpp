#include "reports/svg.hpp"

#include <algorithm>
#include <cmath>

#include "reports/format.hpp"

namespace commsim::reports {

const std::string& palette(std::size_t k) {
  static const std::vector<std::string> colours = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                                   "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
  return colours[k % colours.size()];
}

namespace {

std::string px(double v) { return fixed(v, 1); }

std::string text(double x, double y, const std::string& content, const std::string& attrs = "") {
  return "<text x=\"" + px(x) + "\" y=\"" + px(y) + "\"" + (attrs.empty() ? "" : " " + attrs) + ">" +
         escape_xml(content) + "</text>";
}

std::string open_svg(const std::string& id, double width, double height, const std::string& title) {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" data-chart=\"" + escape_xml(id) + "\" width=\"" +
         px(width) + "\" height=\"" + px(height) + "\" viewBox=\"0 0 " + px(width) + " " + px(height) +
         "\" font-family=\"sans-serif\" font-size=\"12\">" + "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>" +
         text(width / 2, 18, title, "text-anchor=\"middle\" font-size=\"14\" font-weight=\"bold\"");
}

// Ticks at 1, 2 or 5 times a power of ten covering [0, hi].
std::vector<double> nice_ticks(double hi, int target = 5) {
  if (!(hi > 0)) return {0, 1};
  const double raw = hi / target, power = std::pow(10.0, std::floor(std::log10(raw)));
  const double step = raw / power <= 1   ? power
                      : raw / power <= 2 ? 2 * power
                      : raw / power <= 5 ? 5 * power
                                         : 10 * power;
  std::vector<double> ticks;
  for (double t = 0; t < hi + step * 0.999; t += step) ticks.push_back(t);
  return ticks;
}

std::string tick_label(double v) { return number(std::abs(v) < 1e-12 ? 0 : v); }

}  // namespace

namespace {

// One series: its polyline and a circle per point, its numbers in data-x / data-value and a tooltip.
template <class ToX, class ToY>
std::string series_svg(const LineChart& c, const Series& s, const std::string& colour, ToX X, ToY Y) {
  std::string points;
  for (std::size_t i = 0; i < s.x.size(); ++i) {
    if (i) points += ' ';
    points += px(X(s.x[i])) + "," + px(Y(s.y[i]));
  }
  std::string out = "<g class=\"series\" data-series=\"" + escape_xml(s.name) + "\">";
  out += "<polyline points=\"" + points + "\" fill=\"none\" stroke=\"" + colour + "\" stroke-width=\"2\"/>";
  for (std::size_t i = 0; i < s.x.size(); ++i)
    out += "<circle cx=\"" + px(X(s.x[i])) + "\" cy=\"" + px(Y(s.y[i])) + "\" r=\"3.5\" fill=\"" + colour +
           "\" data-x=\"" + number(s.x[i]) + "\" data-value=\"" + number(s.y[i]) + "\"><title>" +
           escape_xml(s.name + ": " + c.x_label + " " + number(s.x[i]) + ", " + c.y_label + " " + number(s.y[i])) +
           "</title></circle>";
  return out + "</g>";
}

}  // namespace

std::string svg(const LineChart& c) {
  // the legend goes below the plot, one full name per line (names often differ only at their end)
  const double width = 760, left = 70, right = 30, top = 34, bottom = 50, plot_h = 236;
  const double height = top + plot_h + bottom + 18 * static_cast<double>(c.series.size());
  const double plot_w = width - left - right;
  std::vector<double> xs;
  double y_max = 0;
  for (const Series& s : c.series)
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      xs.push_back(s.x[i]);
      y_max = std::max(y_max, s.y[i]);
    }
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  if (xs.empty()) xs = {0, 1};
  auto fx = [&](double x) { return c.log_x && x > 0 ? std::log2(x) : x; };
  const double x_lo = fx(xs.front()), x_hi = fx(xs.back()) > x_lo ? fx(xs.back()) : x_lo + 1;
  const std::vector<double> y_ticks = nice_ticks(y_max);
  const double y_hi = y_ticks.back() > 0 ? y_ticks.back() : 1;
  auto X = [&](double x) { return left + (fx(x) - x_lo) / (x_hi - x_lo) * plot_w; };
  auto Y = [&](double y) { return top + plot_h - y / y_hi * plot_h; };

  std::string out = open_svg(c.id, width, height, c.title);
  out += "<g stroke=\"#cccccc\">";
  for (double t : y_ticks)
    out += "<line x1=\"" + px(left) + "\" x2=\"" + px(left + plot_w) + "\" y1=\"" + px(Y(t)) + "\" y2=\"" + px(Y(t)) +
           "\"/>";
  out += "</g><g fill=\"#333333\">";
  for (double t : y_ticks) out += text(left - 6, Y(t) + 4, tick_label(t), "text-anchor=\"end\"");
  // x ticks at the data's own x values when few (node counts, bucket sizes), else evenly spaced
  std::vector<double> x_ticks = xs;
  if (xs.size() > 12) {
    x_ticks.clear();
    for (int k = 0; k <= 6; ++k)
      x_ticks.push_back(c.log_x ? std::exp2(x_lo + (x_hi - x_lo) * k / 6) : x_lo + (x_hi - x_lo) * k / 6);
  }
  for (double t : x_ticks) out += text(X(t), top + plot_h + 16, tick_label(t), "text-anchor=\"middle\"");
  out +=
      text(left + plot_w / 2, top + plot_h + 36, c.x_label + (c.log_x ? " (log scale)" : ""), "text-anchor=\"middle\"");
  out += text(16, top + plot_h / 2, c.y_label,
              "text-anchor=\"middle\" transform=\"rotate(-90 16 " + px(top + plot_h / 2) + ")\"");
  out += "</g>";
  out += "<path d=\"M" + px(left) + " " + px(top) + " V" + px(top + plot_h) + " H" + px(left + plot_w) +
         "\" fill=\"none\" stroke=\"#333333\"/>";
  for (std::size_t k = 0; k < c.series.size(); ++k) {
    const Series& s = c.series[k];
    const std::string& colour = palette(k);
    out += series_svg(c, s, colour, X, Y);
    const double ly = top + plot_h + bottom + 14 + 18 * static_cast<double>(k);
    out +=
        "<rect x=\"" + px(left) + "\" y=\"" + px(ly - 10) + "\" width=\"12\" height=\"12\" fill=\"" + colour + "\"/>";
    out += text(left + 18, ly, s.name);
  }
  return out + "</svg>";
}

std::string svg(const StackedBars& c) {
  const double width = 800, label_w = 300, right = 90, top = 52, row = 24;
  const double height = top + row * static_cast<double>(c.labels.size()) + 30, plot_w = width - label_w - right;
  double total_max = 0;
  for (const auto& v : c.values) {
    double total = 0;
    for (double x : v) total += x;
    total_max = std::max(total_max, total);
  }
  const std::vector<double> ticks = nice_ticks(total_max);
  const double hi = ticks.back() > 0 ? ticks.back() : 1;
  auto X = [&](double v) { return label_w + v / hi * plot_w; };

  std::string out = open_svg(c.id, width, height, c.title);
  for (std::size_t k = 0; k < c.segments.size(); ++k) {
    const double lx = label_w + 170 * static_cast<double>(k);
    out += "<rect x=\"" + px(lx) + "\" y=\"28\" width=\"12\" height=\"12\" fill=\"" + palette(k) + "\"/>";
    out += text(lx + 18, 38, c.segments[k] + " (" + c.unit + ")");
  }
  out += "<g stroke=\"#dddddd\">";
  for (double t : ticks)
    out += "<line x1=\"" + px(X(t)) + "\" x2=\"" + px(X(t)) + "\" y1=\"" + px(top - 4) + "\" y2=\"" + px(height - 26) +
           "\"/>";
  out += "</g>";
  for (double t : ticks) out += text(X(t), height - 12, tick_label(t), "text-anchor=\"middle\" fill=\"#333333\"");
  for (std::size_t i = 0; i < c.labels.size(); ++i) {
    const double y = top + row * static_cast<double>(i);
    const std::string& label = c.labels[i];
    out += "<g class=\"bar\" data-label=\"" + escape_xml(label) + "\">";
    out += text(label_w - 8, y + 15, label.size() > 48 ? label.substr(0, 47) + "..." : label, "text-anchor=\"end\"");
    double at = 0;
    for (std::size_t k = 0; k < c.values[i].size(); ++k) {
      const double v = c.values[i][k];
      out += "<rect x=\"" + px(X(at)) + "\" y=\"" + px(y + 3) + "\" width=\"" + px(std::max(0.0, X(at + v) - X(at))) +
             "\" height=\"" + px(row - 6) + "\" fill=\"" + palette(k) + "\" data-series=\"" +
             escape_xml(c.segments[k]) + "\" data-value=\"" + number(v) + "\"><title>" +
             escape_xml(label + ": " + c.segments[k] + " " + number(v) + " " + c.unit) + "</title></rect>";
      at += v;
    }
    out += text(X(at) + 6, y + 15, fixed(at, 3) + " " + c.unit, "fill=\"#333333\"");
    out += "</g>";
  }
  return out + "</svg>";
}

std::string svg(const Timeline& c) {
  // compute stream: forward (the plan labels it "fwd ...") and backward in two colours; communication in a third
  auto fill = [](const TraceEvent& e) { return palette(e.stream != 0 ? 1 : e.name.rfind("fwd", 0) == 0 ? 0 : 4); };
  const double width = 960, label_w = 110, right = 20, top = 34, row = 28;
  const double height = top + row * static_cast<double>(c.lanes.size()) + 40, plot_w = width - label_w - right;
  double t0 = 0, t1 = 0;
  if (!c.events.empty()) {
    t0 = c.events.front().start_s;
    for (const TraceEvent& e : c.events) {
      t0 = std::min(t0, e.start_s);
      t1 = std::max(t1, e.start_s + e.duration_s);
    }
  }
  const double span_ms = t1 > t0 ? (t1 - t0) * 1e3 : 1;
  const std::vector<double> ticks = nice_ticks(span_ms, 8);
  auto X = [&](double ms) { return label_w + ms / span_ms * plot_w; };

  std::string out = open_svg(c.id, width, height, c.title);
  for (std::size_t l = 0; l < c.lanes.size(); ++l) {
    const double y = top + row * static_cast<double>(l);
    out += "<rect x=\"" + px(label_w) + "\" y=\"" + px(y) + "\" width=\"" + px(plot_w) + "\" height=\"" + px(row - 2) +
           "\" fill=\"" + (l % 2 ? "#f7f7f7" : "#efefef") + "\"/>";
    out += text(label_w - 8, y + 17, c.lanes[l], "text-anchor=\"end\"");
  }
  for (double t : ticks)
    if (t <= span_ms * 1.0001) out += text(X(t), height - 22, tick_label(t), "text-anchor=\"middle\" fill=\"#333333\"");
  out += text(label_w + plot_w / 2, height - 6, "time (ms)", "text-anchor=\"middle\"");
  const std::pair<std::size_t, const char*> legend[] = {{0, "forward"}, {4, "backward"}, {1, "communication"}};
  for (std::size_t k = 0; k < 3; ++k) {
    const double lx = label_w + plot_w - 330 + 115 * static_cast<double>(k);
    out += "<rect x=\"" + px(lx) + "\" y=\"" + px(height - 17) + "\" width=\"12\" height=\"12\" fill=\"" +
           palette(legend[k].first) + "\"/>" + text(lx + 17, height - 6, legend[k].second);
  }
  for (const TraceEvent& e : c.events) {
    if (e.stream < 0 || e.stream >= static_cast<int>(c.lanes.size())) continue;
    const double y = top + row * e.stream, start_ms = (e.start_s - t0) * 1e3, dur_ms = e.duration_s * 1e3;
    out += "<rect class=\"event\" x=\"" + px(X(start_ms)) + "\" y=\"" + px(y + 3) + "\" width=\"" +
           px(std::max(0.5, X(start_ms + dur_ms) - X(start_ms))) + "\" height=\"" + px(row - 8) + "\" fill=\"" +
           fill(e) + "\" stroke=\"#ffffff\" stroke-width=\"0.3\" data-start=\"" + number(start_ms) +
           "\" data-value=\"" + number(dur_ms) + "\"><title>" +
           escape_xml(e.name + ": " + fixed(start_ms, 3) + " ms + " + fixed(dur_ms, 3) + " ms") + "</title></rect>";
  }
  return out + "</svg>";
}

}  // namespace commsim::reports
