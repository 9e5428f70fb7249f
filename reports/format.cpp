#include "reports/format.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "sim/core/error.hpp"

namespace commsim::reports {

std::string escape_xml(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string csv_field(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string csv(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    for (std::size_t i = 0; i < cells.size(); ++i) {
      if (i) out += ',';
      out += csv_field(cells[i]);
    }
    out += '\n';
  };
  line(header);
  for (const auto& r : rows) line(r);
  return out;
}

std::string fixed(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

std::string percent(double fraction, int decimals) { return fixed(100 * fraction, decimals) + " %"; }

std::string number(double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", value);
  return buf;
}

std::string TextTable::str() const {
  std::vector<std::size_t> width(header_.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (std::size_t i = 0; i < row.size() && i < width.size(); ++i) width[i] = std::max(width[i], row[i].size());
  };
  measure(header_);
  for (const auto& r : rows_) measure(r);
  // "12.5", "-3.2 %", "2.28x" are numbers; "4 MB buckets" is text
  auto numeric = [](const std::string& s) {
    return !s.empty() &&
           (std::isdigit(static_cast<unsigned char>(s[0])) || ((s[0] == '-' || s[0] == '+') && s.size() > 1)) &&
           s.find_first_not_of("0123456789.+-eE %x") == std::string::npos;
  };
  std::string out;
  auto line = [&](const std::vector<std::string>& row, bool header) {
    std::string text;
    for (std::size_t i = 0; i < width.size(); ++i) {
      const std::string cell = i < row.size() ? row[i] : "";
      const std::string pad(width[i] - cell.size(), ' ');
      text += (i ? "  " : "") + (!header && numeric(cell) ? pad + cell : cell + pad);
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out += text + "\n";
  };
  line(header_, true);
  std::vector<std::string> rule;
  for (std::size_t w : width) rule.emplace_back(w, '-');
  line(rule, true);
  for (const auto& r : rows_) line(r, false);
  return out;
}

void create_directories(const std::string& dir, const std::string& flag) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw InputError(flag, "", "cannot create directory " + dir + ": " + ec.message());
}

ProgressBar::ProgressBar(std::string label, std::size_t total, std::size_t min_total)
    : label_(std::move(label)), total_(total), enabled_(isatty(STDERR_FILENO) == 1 && total >= min_total) {}

namespace {
constexpr std::size_t kBarWidth = 30;
std::string bar_text(std::size_t done, std::size_t total) {
  const std::size_t filled = total ? done * kBarWidth / total : kBarWidth;
  return "[" + std::string(filled, '#') + std::string(kBarWidth - filled, '.') + "]";
}
}  // namespace

void ProgressBar::update(std::size_t done) {
  if (!enabled_) return;
  const double elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double rate_per_s = elapsed_s > 0 ? static_cast<double>(done) / elapsed_s : 0;
  const std::string eta =
      rate_per_s > 0 ? ", ETA " + fixed(static_cast<double>(total_ - done) / rate_per_s, 0) + " s" : "";
  std::fprintf(stderr, "\r%s %zu/%zu %s, %s/s%s\033[K", bar_text(done, total_).c_str(), done, total_, label_.c_str(),
               fixed(rate_per_s, 1).c_str(), eta.c_str());
  std::fflush(stderr);
}

void ProgressBar::update(std::size_t done, const std::string& detail) {
  if (!enabled_) return;
  std::fprintf(stderr, "\r%s %zu/%zu %s; %s\033[K", bar_text(done, total_).c_str(), done, total_, label_.c_str(),
               detail.c_str());
  std::fflush(stderr);
}

void ProgressBar::finish() {
  if (enabled_) std::fprintf(stderr, "\r\033[K");  // erase the bar so the table that follows starts clean
}

}  // namespace commsim::reports
