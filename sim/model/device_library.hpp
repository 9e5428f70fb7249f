// The device library (devices/*.json, compiled in): datasheet dense peak FLOP/s per datatype and memory bandwidth
// of common accelerators, each value with its source. A scenario's device names one instead of repeating numbers:
//   "device": { "name": "h100-sxm", "dtype": "bf16", "efficiency": 0.4 }
// and may still give peak_flops / memory_Bps explicitly (then with a source), which win over the library's.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "sim/core/json_fields.hpp"
#include "sim/scenario/scenario.hpp"

namespace commsim {

struct LibraryDevice {
  std::string name;
  std::string description;
  std::map<std::string, double> peak_dense_flops;  // dtype (fp32, tf32, bf16, fp16, fp8) -> FLOP/s
  double memory_Bps = 0;
};

// Every device of the library, by name; the files are checked when first read (a broken one is an internal fault:
// it shipped with the program).
const std::vector<LibraryDevice>& device_library();
const LibraryDevice* find_device(const std::string& name);

// A scenario's "device" object (docs/scenario-format.md), with or without the library.
Device parse_device(JsonFields& fields);

}  // namespace commsim
