// A model: layers in forward order, each with its parameter tensors (whose gradients are communicated) and its
// compute cost per sample (docs/model-format.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace commsim {

struct Tensor {
  std::string name;
  std::uint64_t elements = 0;
  int layer = 0;                     // index of its layer in forward order
  std::vector<std::uint64_t> shape;  // optional, as the framework stores it (product = elements)
};

struct Layer {
  std::string name;
  double forward_flops_per_sample = 0;
  double backward_flops_per_sample = 0;  // default 2x forward (input gradient + weight gradient GEMMs)
  double forward_s_per_sample = -1;      // measured time, overrides FLOPs when >= 0
  double backward_s_per_sample = -1;
  std::vector<int> tensors;  // indices into Model::tensors
};

struct Model {
  std::string name;
  std::string source;
  std::string description;  // optional
  std::string sample;       // optional: what one sample is ("sequence of 8192 tokens")
  std::vector<Layer> layers;
  std::vector<Tensor> tensors;  // forward order
  std::uint64_t parameters() const;
};

Model load_model(const std::string& path);  // throws InputError naming file and field
// The same reading of a model file's text that came from `source` (the check an importer makes before writing).
Model model_from_text(const std::string& text, const std::string& source);

}  // namespace commsim
