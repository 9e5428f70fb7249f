// A self-contained HTML page: inline CSS and inline SVG only (no scripts, fonts, images or other fetches), written
// as XHTML-compatible markup (every element closed, attributes quoted, text escaped) so it parses as XML.
#pragma once

#include <string>
#include <vector>

namespace commsim::reports {

class HtmlPage {
 public:
  explicit HtmlPage(std::string title);
  void heading(const std::string& text);    // <h2>
  void paragraph(const std::string& text);  // <p>, escaped
  void table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);
  void figure(const std::string& svg_markup);  // trusted markup from reports/svg.hpp
  void preformatted(const std::string& text);
  std::string str() const;

 private:
  std::string title_;
  std::string body_;
};

}  // namespace commsim::reports
