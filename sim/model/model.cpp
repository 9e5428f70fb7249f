#include "sim/model/model.hpp"

#include <set>
#include <string>

#include "sim/core/json_document_cache.hpp"
#include "sim/core/json_fields.hpp"
#include "sim/core/limits.hpp"

namespace commsim {

std::uint64_t Model::parameters() const {
  std::uint64_t total = 0;
  for (const Tensor& t : tensors) total += t.elements;
  return total;
}

namespace {

// A tensor's shape: positive dimensions whose product is its element count.
std::vector<std::uint64_t> read_shape(JsonFields& p, std::uint64_t elements) {
  const Json& dims = p.array("shape");
  std::vector<std::uint64_t> shape;
  std::uint64_t product = 1;
  for (const Json& d : dims) {
    if (!d.is_number_integer() || d.get<std::int64_t>() < 1 || d.get<std::int64_t>() > kMaxElements)
      p.fail("shape", "every dimension must be an integer in [1, 2^50]");
    shape.push_back(d.get<std::uint64_t>());
    if (product > static_cast<std::uint64_t>(kMaxElements) / shape.back())
      p.fail("shape", "the dimensions multiply past 2^50");
    product *= shape.back();
  }
  if (shape.empty() || product != elements)
    p.fail("shape",
           "the dimensions multiply to " + std::to_string(product) + ", not elements = " + std::to_string(elements));
  return shape;
}

Model model_of_document(const Json& root, const std::string& path) {
  JsonFields top(root, path, "");
  Model model;
  model.name = top.string("name");
  model.source = top.string("source");
  model.description = top.string_or("description", "");
  model.sample = top.string_or("sample", "");
  const Json& layers = top.array("layers");
  if (layers.empty()) top.fail("layers", "a model needs at least one layer");
  std::uint64_t total = 0;
  // Names identify a layer in traces (model from-trace, validate --trace) and a tensor in buckets: each once.
  std::set<std::string> layer_names, tensor_names;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    JsonFields f(layers[i], path, "layers[" + std::to_string(i) + "]");
    Layer layer;
    layer.name = f.string("name");
    if (!layer_names.insert(layer.name).second) f.fail("name", "another layer is named \"" + layer.name + "\"");
    layer.forward_flops_per_sample = f.number_or("forward_flops_per_sample", 0);
    if (layer.forward_flops_per_sample < 0) f.fail("forward_flops_per_sample", "must be >= 0");
    layer.backward_flops_per_sample = f.number_or("backward_flops_per_sample", 2 * layer.forward_flops_per_sample);
    if (layer.backward_flops_per_sample < 0) f.fail("backward_flops_per_sample", "must be >= 0");
    // Measured times, when given, replace the FLOP-derived ones; absent is -1 (Layer), never a negative input.
    layer.forward_s_per_sample = f.has("forward_s") ? f.duration_s("forward_s") : -1;
    layer.backward_s_per_sample = f.has("backward_s") ? f.duration_s("backward_s") : -1;
    const Json& params = f.array("params");
    for (std::size_t j = 0; j < params.size(); ++j) {
      JsonFields p(params[j], path, f.field_path("params[" + std::to_string(j) + "]"));
      Tensor t{p.string("name"),
               static_cast<std::uint64_t>(p.integer("elements", 1, kMaxElements)),
               static_cast<int>(i),
               {}};
      if (!tensor_names.insert(t.name).second) p.fail("name", "another tensor is named \"" + t.name + "\"");
      if (p.has("shape")) t.shape = read_shape(p, t.elements);
      p.reject_unknown();
      layer.tensors.push_back(static_cast<int>(model.tensors.size()));
      model.tensors.push_back(t);
      total += t.elements;  // checked as it grows: a sum that wrapped around 64 bits would look in range
      if (total > static_cast<std::uint64_t>(kMaxElements)) p.fail("elements", "the tensors add up past 2^50 elements");
    }
    f.reject_unknown();
    model.layers.push_back(layer);
  }
  const std::uint64_t declared = static_cast<std::uint64_t>(top.integer_or("total_parameters", 0, 0, kMaxElements));
  if (declared && declared != model.parameters())
    top.fail("total_parameters", std::to_string(declared) + " does not match the sum of the tensors, " +
                                     std::to_string(model.parameters()));
  const auto tensors = top.integer_or("parameter_tensors", 0, 0, 1 << 30);
  if (tensors && static_cast<std::size_t>(tensors) != model.tensors.size())
    top.fail("parameter_tensors", std::to_string(tensors) + " does not match the " +
                                      std::to_string(model.tensors.size()) + " tensors listed");
  top.reject_unknown();
  if (model.tensors.empty()) top.fail("layers", "the model has no parameter tensors");
  return model;
}

}  // namespace

Model load_model(const std::string& path) {
  return model_of_document(*read_json_document(path), path);  // the document is shared within a grid evaluation
}

Model model_from_text(const std::string& text, const std::string& source) {
  return model_of_document(parse_json_text(text, source), source);
}

}  // namespace commsim
