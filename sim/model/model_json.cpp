#include "sim/model/model_json.hpp"

#include <cmath>
#include <fstream>

#include "sim/core/json_fields.hpp"
#include "sim/core/output_file.hpp"

namespace commsim {

namespace {

using Ordered = nlohmann::ordered_json;  // keys in the order written: name first

// A FLOP count that is a whole number below 2^63 is written as an integer (as the zoo's files are).
Ordered flops(double value) {
  if (value == std::floor(value) && value < 9.2e18) return static_cast<std::int64_t>(value);
  return value;
}

Ordered layer_json(const Model& model, const Layer& layer) {
  Ordered entry = Ordered::object();
  entry["name"] = layer.name;
  entry["forward_flops_per_sample"] = flops(layer.forward_flops_per_sample);
  if (layer.backward_flops_per_sample != 2 * layer.forward_flops_per_sample)
    entry["backward_flops_per_sample"] = flops(layer.backward_flops_per_sample);
  if (layer.forward_s_per_sample >= 0) entry["forward_s"] = layer.forward_s_per_sample;
  if (layer.backward_s_per_sample >= 0) entry["backward_s"] = layer.backward_s_per_sample;
  Ordered params = Ordered::array();
  for (int index : layer.tensors) {
    const Tensor& t = model.tensors[static_cast<std::size_t>(index)];
    Ordered p = {{"name", t.name}, {"elements", t.elements}};
    if (!t.shape.empty()) p["shape"] = t.shape;
    params.push_back(std::move(p));
  }
  entry["params"] = std::move(params);
  return entry;
}

std::string field(const std::string& key, const Json& value) { return "  " + Json(key).dump() + ": " + value.dump(); }

}  // namespace

std::string model_file_text(const Model& model) {
  std::string text = "{\n";
  text += field("name", model.name) + ",\n";
  if (!model.description.empty()) text += field("description", model.description) + ",\n";
  text += field("source", model.source) + ",\n";
  if (!model.sample.empty()) text += field("sample", model.sample) + ",\n";
  text += field("total_parameters", model.parameters()) + ",\n";
  text += field("parameter_tensors", model.tensors.size()) + ",\n";
  text += "  \"layers\": [\n";
  for (std::size_t i = 0; i < model.layers.size(); ++i)
    text += "    " + layer_json(model, model.layers[i]).dump() + (i + 1 < model.layers.size() ? ",\n" : "\n");
  text += "  ]\n}\n";
  return text;
}

void check_loads_back(const Model& model, const std::string& input) {
  model_from_text(model_file_text(model), input + " (as a model file)");
}

void write_model_file(const Model& model, const std::string& path, const std::string& flag) {
  write_file(path, model_file_text(model), flag);
}

}  // namespace commsim
