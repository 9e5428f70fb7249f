#include "sim/model/device_library.hpp"

#include <set>
#include <string_view>

namespace commsim {

const std::vector<std::pair<std::string_view, std::string_view>>& embedded_devices();  // device_table.cpp

namespace {

LibraryDevice read_device(std::string_view file, std::string_view text) {
  const std::string path(file);
  const Json root = parse_json_text(std::string(text), path);
  JsonFields top(root, path, "");
  LibraryDevice d;
  d.name = top.string("name");
  d.description = top.string("description");
  top.string("note");
  JsonFields flops = top.object("peak_dense_flops");
  for (auto& [dtype, value] : root.at("peak_dense_flops").items()) {
    JsonFields v = flops.object(dtype);
    d.peak_dense_flops[dtype] = v.positive("value");
    v.string("source");
    v.reject_unknown();
  }
  flops.reject_unknown();
  JsonFields memory = top.object("memory_Bps");
  d.memory_Bps = memory.positive("value");
  memory.string("source");
  memory.reject_unknown();
  top.reject_unknown();
  return d;
}

std::string known_names() {
  std::string names;
  for (const LibraryDevice& d : device_library()) names += (names.empty() ? "" : ", ") + d.name;
  return names;
}

}  // namespace

const std::vector<LibraryDevice>& device_library() {
  static const std::vector<LibraryDevice> devices = [] {
    std::vector<LibraryDevice> all;
    for (auto [file, text] : embedded_devices()) {
      try {
        all.push_back(read_device(file, text));
      } catch (const InputError& e) {
        COMMSIM_CHECK(false, std::string("the compiled-in device library is broken: ") + e.what());
      }
    }
    return all;
  }();
  return devices;
}

const LibraryDevice* find_device(const std::string& name) {
  for (const LibraryDevice& d : device_library())
    if (d.name == name) return &d;
  return nullptr;
}

Device parse_device(JsonFields& d) {
  Device device;
  device.name = d.string("name");
  const LibraryDevice* library = d.has("peak_flops") && d.has("memory_Bps") ? nullptr : find_device(device.name);
  if (!library && !(d.has("peak_flops") && d.has("memory_Bps")))
    d.fail("name", "\"" + device.name + "\" is not in the device library (" + known_names() +
                       "): give peak_flops and memory_Bps with their source instead");
  if (d.has("peak_flops")) {
    device.peak_flops = d.positive("peak_flops");
    // Only a label beside a given rate, but one of the datatypes the library knows, so that a typo is not kept.
    if (const std::string dtype = d.string_or("dtype", ""); !dtype.empty()) {
      std::set<std::string> known;
      for (const LibraryDevice& l : device_library())
        for (const auto& [name, value] : l.peak_dense_flops) known.insert(name);
      if (!known.count(dtype)) {
        std::string names;
        for (const std::string& k : known) names += (names.empty() ? "" : ", ") + k;
        d.fail("dtype", "unknown datatype \"" + dtype + "\" (" + names + ")");
      }
    }
  } else {
    const std::string dtype = d.string("dtype");
    const auto it = library->peak_dense_flops.find(dtype);
    if (it == library->peak_dense_flops.end()) {
      std::string has;
      for (const auto& [name, value] : library->peak_dense_flops) has += (has.empty() ? "" : ", ") + name;
      d.fail("dtype", "\"" + dtype + "\" is not a datatype of " + device.name + " (" + has + ")");
    }
    device.peak_flops = it->second;
  }
  device.efficiency = d.positive("efficiency");
  if (device.efficiency > 1) d.fail("efficiency", "must be in (0, 1]");
  device.memory_Bps = d.has("memory_Bps") ? d.positive("memory_Bps") : library->memory_Bps;
  device.dgc_Bps = d.positive_or("dgc_Bps", 0);
  // A number given here needs its source; the library's carry theirs.
  if (d.has("peak_flops") || d.has("memory_Bps") || d.has("dgc_Bps"))
    d.string("source");
  else
    d.string_or("source", "");
  d.reject_unknown();
  return device;
}

}  // namespace commsim
