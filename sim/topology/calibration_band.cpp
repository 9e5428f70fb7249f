#include "sim/topology/calibration_band.hpp"

#include <algorithm>

#include "sim/core/json_document_cache.hpp"

namespace commsim {

double calibration_band_rel(const std::string& topology_path) {
  // Already read (and checked) by load_topology; within a grid evaluation, the same parsed document.
  const std::shared_ptr<const Json> document = read_json_document(topology_path);
  const Json& doc = *document;
  double band = 0;
  auto take = [&](const Json& value) {
    if (value.is_number()) band = std::max(band, value.get<double>());
  };
  if (doc.contains("sources") && doc["sources"].is_object() && doc["sources"].contains("calibration")) {
    const Json& cal = doc["sources"]["calibration"];
    if (cal.is_object() && cal.contains("link_classes") && cal["link_classes"].is_object())
      for (const auto& [name, c] : cal["link_classes"].items())
        if (c.is_object() && c.contains("band_rel")) take(c["band_rel"]);
  }
  if (doc.contains("library") && doc["library"].is_object() && doc["library"].contains("fitted_band_rel"))
    take(doc["library"]["fitted_band_rel"]);
  return band;
}

}  // namespace commsim
