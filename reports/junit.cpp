#include "reports/junit.hpp"

#include "reports/format.hpp"

namespace commsim::reports {

std::string junit_xml(const std::string& suite, const std::vector<JUnitCase>& cases) {
  std::size_t failures = 0, skipped = 0;
  double total = 0;
  for (const JUnitCase& c : cases) {
    failures += c.failure.empty() ? 0 : 1;
    skipped += c.skipped.empty() ? 0 : 1;
    total += c.time_s;
  }
  const std::string counts = "tests=\"" + std::to_string(cases.size()) + "\" failures=\"" + std::to_string(failures) +
                             "\" errors=\"0\" skipped=\"" + std::to_string(skipped) + "\" time=\"" + fixed(total, 3) +
                             "\"";
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"" + escape_xml(suite) + "\" " +
                    counts + ">\n  <testsuite name=\"" + escape_xml(suite) + "\" " + counts + ">\n";
  for (const JUnitCase& c : cases) {
    out += "    <testcase classname=\"" + escape_xml(suite) + "\" name=\"" + escape_xml(c.name) + "\" time=\"" +
           fixed(c.time_s, 3) + "\">\n";
    if (!c.failure.empty()) out += "      <failure message=\"" + escape_xml(c.failure) + "\"/>\n";
    if (!c.skipped.empty()) out += "      <skipped message=\"" + escape_xml(c.skipped) + "\"/>\n";
    if (!c.output.empty()) out += "      <system-out>" + escape_xml(c.output) + "</system-out>\n";
    out += "    </testcase>\n";
  }
  return out + "  </testsuite>\n</testsuites>\n";
}

}  // namespace commsim::reports
