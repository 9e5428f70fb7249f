// The validation report: a terminal table, JSON (every figure, for tools and `commsim regress`) and a self-contained
// HTML page (reports/html.hpp, inline SVG: the band of every prediction with the measurement in it).
#pragma once

#include <string>

#include "validate/validation.hpp"

namespace commsim::validate {

Json to_json(const Validation& v);
std::string terminal_table(const Validation& v);
std::string to_html(const Validation& v);
// Writes DIR/validation.json, DIR/index.html and DIR/table.txt.
void write_report(const Validation& v, const std::string& dir);

// The band chart alone (one row per scenario), XML-well-formed SVG.
std::string band_chart_svg(const Validation& v);

}  // namespace commsim::validate
