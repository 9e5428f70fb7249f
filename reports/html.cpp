#include "reports/html.hpp"

#include "reports/format.hpp"

namespace commsim::reports {

HtmlPage::HtmlPage(std::string title) : title_(std::move(title)) {}

void HtmlPage::heading(const std::string& text) { body_ += "<h2>" + escape_xml(text) + "</h2>\n"; }

void HtmlPage::paragraph(const std::string& text) { body_ += "<p>" + escape_xml(text) + "</p>\n"; }

void HtmlPage::table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  body_ += "<table>\n<thead><tr>";
  for (const std::string& h : header) body_ += "<th>" + escape_xml(h) + "</th>";
  body_ += "</tr></thead>\n<tbody>\n";
  for (const auto& row : rows) {
    body_ += "<tr>";
    for (const std::string& cell : row) body_ += "<td>" + escape_xml(cell) + "</td>";
    body_ += "</tr>\n";
  }
  body_ += "</tbody>\n</table>\n";
}

void HtmlPage::figure(const std::string& svg_markup) { body_ += "<figure>" + svg_markup + "</figure>\n"; }

void HtmlPage::preformatted(const std::string& text) { body_ += "<pre>" + escape_xml(text) + "</pre>\n"; }

std::string HtmlPage::str() const {
  return "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n"
         "<meta charset=\"utf-8\"/>\n<title>" +
         escape_xml(title_) +
         "</title>\n<style>\n"
         "body { font-family: sans-serif; margin: 24px; color: #222222; max-width: 1200px; }\n"
         "table { border-collapse: collapse; margin: 8px 0 20px 0; font-size: 13px; }\n"
         "th, td { border: 1px solid #cccccc; padding: 3px 8px; text-align: right; }\n"
         "th { background: #f0f0f0; } td:first-child, th:first-child { text-align: left; }\n"
         "figure { margin: 8px 0 20px 0; } pre { background: #f6f6f6; padding: 8px; }\n"
         "</style>\n</head>\n<body>\n<h1>" +
         escape_xml(title_) + "</h1>\n" + body_ + "<p class=\"footer\">commsim " + escape_xml(COMMSIM_VERSION) +
         "</p>\n</body>\n</html>\n";
}

}  // namespace commsim::reports
