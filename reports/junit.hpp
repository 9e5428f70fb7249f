// JUnit XML, the report format CI systems (Jenkins, GitLab, GitHub Actions test reporters) read.
#pragma once

#include <string>
#include <vector>

namespace commsim::reports {

struct JUnitCase {
  std::string name;
  double time_s = 0;
  std::string failure;  // non-empty: the case failed with this message
  std::string skipped;  // non-empty: the case was skipped for this reason
  std::string output;   // system-out
};

std::string junit_xml(const std::string& suite, const std::vector<JUnitCase>& cases);

}  // namespace commsim::reports
