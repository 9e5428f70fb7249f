// Facts about the machine and the moment a result was made, for provenance records.
#pragma once

#include <string>

namespace commsim {

std::string host_name();      // gethostname(), or "unknown"
std::string utc_timestamp();  // ISO 8601, e.g. 2026-11-22T09:27:55Z

}  // namespace commsim
