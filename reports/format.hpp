// Small text writers shared by the commands: XML/HTML escaping, number formatting, aligned terminal tables, CSV,
// files, and a progress bar that only draws on a terminal.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/output_file.hpp"

namespace commsim::reports {

// Escapes & < > " ' so the text is safe in XML/HTML content and attribute values.
std::string escape_xml(std::string_view text);
// One CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break.
std::string csv_field(std::string_view text);
std::string csv(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);

// printf("%.*f") into a std::string.
std::string fixed(double value, int decimals);
// A fraction as "38.2 %".
std::string percent(double fraction, int decimals = 1);
// Shortest text that reads back as the same double to 6 significant digits ("%.6g"), for data attributes.
std::string number(double value);

// A terminal table: columns padded to their widest cell; cells that start like a number are right-aligned.
class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) : header_(std::move(header)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string str() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// Creates `dir` and its parents; where that fails (no permission, a name too long) an InputError naming the flag.
void create_directories(const std::string& dir, const std::string& flag);

// "[#####.....] 12/40 label, 3.1/s, ETA 9 s" redrawn in place on stderr, only when stderr is a terminal (quiet in
// pipes and CI). The rate counts items done since the bar was made. A bar of fewer than `min_total` items is not
// drawn (a one-row sweep ends before a bar helps; a one-size flow run may take minutes).
class ProgressBar {
 public:
  ProgressBar(std::string label, std::size_t total, std::size_t min_total = 2);
  void update(std::size_t done);
  // For items of unequal cost (a size twice as large takes twice as long): the bar, done/total and `detail` (how far
  // the item in progress is), in place of a rate and ETA.
  void update(std::size_t done, const std::string& detail);
  bool enabled() const { return enabled_; }
  void finish();

 private:
  std::string label_;
  std::size_t total_;
  bool enabled_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace commsim::reports
